package fusefs

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// TestFUSEDescriptorCloseOnExec: the mount's /dev/fuse descriptor must not
// pass to the processes the daemon starts (ssh, remote commands): one
// that outlived a killed daemon would keep the FUSE connection, and every
// process waiting on the mount, hanging.
func TestFUSEDescriptorCloseOnExec(t *testing.T) {
	mountWith(t, defaultOpts(), nil)
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	found := 0
	for _, e := range fds {
		if target, _ := os.Readlink("/proc/self/fd/" + e.Name()); target != "/dev/fuse" {
			continue
		}
		found++
		info, err := os.ReadFile("/proc/self/fdinfo/" + e.Name())
		if err != nil {
			t.Fatal(err)
		}
		if flags := fdFlags(string(info)); flags&syscall.O_CLOEXEC == 0 {
			t.Errorf("/dev/fuse descriptor %s is not close-on-exec (flags %o)", e.Name(), flags)
		}
	}
	if found == 0 {
		t.Fatal("no /dev/fuse descriptor found after mounting")
	}
}

// fdFlags reads the octal flags line of a /proc/*/fdinfo file.
func fdFlags(info string) uint64 {
	for _, line := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(line, "flags:"); ok {
			f, err := strconv.ParseUint(strings.TrimSpace(v), 8, 64)
			if err == nil {
				return f
			}
			panic(fmt.Sprintf("fdinfo flags %q", v))
		}
	}
	return 0
}
