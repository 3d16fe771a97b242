package fusefs

import (
	"os"
	"strconv"
	"strings"
	"testing"

	"sshfsm/internal/mountinfo"
	"sshfsm/internal/remote"
)

// Mounting asks the remote nothing: a delay_connect mount connects at the
// first access, not at mount. As root, the kernel's readahead window is
// raised all the same (the device comes from the mount table).
func TestMountAsksNothing(t *testing.T) {
	h := &hookRemote{}
	tm := mountWith(t, defaultOpts(), func(r remote.Remote) remote.Remote { h.Remote = r; return h })
	if n := h.readDirs.Load() + h.lstats.Load() + h.stats.Load() + h.opens.Load(); n != 0 {
		t.Errorf("mounting made %d calls to the remote; want none", n)
	}
	if os.Geteuid() != 0 {
		return // only root may raise it
	}
	m, ok := mountinfo.At(tm.mnt)
	if !ok {
		t.Fatalf("%s is not in the mount table", tm.mnt)
	}
	b, err := os.ReadFile("/sys/class/bdi/" + m.Dev + "/read_ahead_kb")
	if err != nil {
		t.Fatal(err)
	}
	if kb, err := strconv.Atoi(strings.TrimSpace(string(b))); err != nil || kb < defaultMaxWrite>>10 {
		t.Errorf("read_ahead_kb %q; want at least %d", b, defaultMaxWrite>>10)
	}
}
