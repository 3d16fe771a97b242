package fusefs

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"sshfsm/internal/mountinfo"
)

// raiseReadahead lifts the kernel's readahead window of the mount to kb
// KiB. FUSE starts new connections at 128 KiB whatever the filesystem
// asks for; only the bdi setting in sysfs raises it, and only root may
// write it. Failure leaves the default in place. The mount's device comes
// from the mount table, not from a stat of the mountpoint: that would ask
// the server (and connect a delay_connect mount at once).
func raiseReadahead(mountpoint string, kb int) error {
	abs, err := filepath.Abs(mountpoint)
	if err != nil {
		return err
	}
	m, ok := mountinfo.At(abs)
	if !ok || strings.ContainsAny(m.Dev, "/.") {
		return fmt.Errorf("%s: not in the mount table", abs)
	}
	p := "/sys/class/bdi/" + m.Dev + "/read_ahead_kb"
	cur, err := os.ReadFile(p)
	if err != nil {
		return err
	}
	if v, err := strconv.Atoi(strings.TrimSpace(string(cur))); err == nil && v >= kb {
		return nil
	}
	return os.WriteFile(p, []byte(strconv.Itoa(kb)), 0)
}
