package testenv

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// StartHost starts a host on addr ("" = 127.0.0.2) for the duration of the
// test, failing the test when it cannot.
func StartHost(t testing.TB, addr string) *Host {
	t.Helper()
	h, err := Start(Options{Addr: addr})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(h.Close)
	return h
}

// StartHosts starts n hosts on 127.0.0.2, 127.0.0.3, … for the duration of
// the test and returns them with one client config that reaches them all.
func StartHosts(t testing.TB, n int) ([]*Host, string) {
	t.Helper()
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

// RequireFUSE skips the test when FUSE mounts are impossible here (no usable
// /dev/fuse or no fusermount3). Under CI (CI set) it fails instead, so a
// broken runner cannot pass by skipping.
func RequireFUSE(t testing.TB) {
	t.Helper()
	var why string
	if f, err := os.OpenFile("/dev/fuse", os.O_RDWR, 0); err != nil {
		why = fmt.Sprintf("/dev/fuse is not usable: %v", err)
	} else {
		f.Close()
		if _, err := exec.LookPath("fusermount3"); err != nil {
			why = "fusermount3 not found (install fuse3)"
		}
	}
	if why == "" {
		return
	}
	if os.Getenv("CI") != "" {
		t.Fatal("FUSE required under CI: " + why)
	}
	t.Skip("skipping FUSE test: " + why)
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
