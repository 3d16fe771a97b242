package e2e

import (
	"os"
	"sort"
	"testing"

	"github.com/hanwen/go-fuse/v2/posixtest"

	"sshfsm/internal/testenv"
)

// sftpLimits lists the posixtest cases that cannot pass over SFTP, each
// with the reason and a check of the behaviour the mount shows instead.
var sftpLimits = map[string]struct {
	why   string
	check func(t *testing.T, dir string)
}{}

// TestPosix runs go-fuse's POSIX conformance cases over a real mount, each
// in its own subdirectory.
func TestPosix(t *testing.T) {
	h := testenv.StartHost(t, "127.0.0.2")
	m := mount(t, h, mountSpec{})
	names := make([]string, 0, len(posixtest.All))
	for name := range posixtest.All {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		t.Run(name, func(t *testing.T) {
			dir := m.Path("posix", name)
			if err := os.MkdirAll(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			if lim, ok := sftpLimits[name]; ok {
				t.Logf("cannot pass over SFTP: %s; checking the documented behaviour instead", lim.why)
				lim.check(t, dir)
				return
			}
			posixtest.All[name](t, dir)
		})
	}
}
