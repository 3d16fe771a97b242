package testenv

import (
	"fmt"
	"path/filepath"
	"testing"
)

// StartHost starts a host on addr ("" = 127.0.0.2) for the duration of the
// test, failing the test when it cannot. It skips the test as RequireSSHD
// does.
func StartHost(t testing.TB, addr string) *Host {
	t.Helper()
	return StartHostWith(t, Options{Addr: addr})
}

// StartHostWith is StartHost with every option of Start.
func StartHostWith(t testing.TB, o Options) *Host {
	t.Helper()
	RequireSSHD(t)
	h, err := Start(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(h.Close)
	return h
}

// StartHosts starts n hosts on 127.0.0.2, 127.0.0.3, … for the duration of
// the test and returns them with one client config that reaches them all.
// It skips the test as RequireSSHD does.
func StartHosts(t testing.TB, n int) ([]*Host, string) {
	t.Helper()
	RequireSSHD(t)
	hosts := make([]*Host, n)
	for i := range hosts {
		hosts[i] = StartHost(t, fmt.Sprintf("127.0.0.%d", i+2))
	}
	cfg := filepath.Join(t.TempDir(), "ssh_config")
	if err := WriteSSHConfig(cfg, hosts...); err != nil {
		t.Fatal(err)
	}
	return hosts, cfg
}

// UnmountAtCleanup unmounts mnt when the test ends and fails the test if
// that does not work.
func UnmountAtCleanup(t testing.TB, mnt string) {
	t.Helper()
	t.Cleanup(func() {
		if err := Unmount(mnt); err != nil {
			t.Error(err)
		}
	})
}
