package fusefs

import (
	"fmt"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// raiseReadahead lifts the kernel's readahead window of the mount to kb
// KiB. FUSE starts new connections at 128 KiB whatever the filesystem
// asks for; only the bdi setting in sysfs raises it, and only root may
// write it. Failure leaves the default in place.
func raiseReadahead(mountpoint string, kb int) error {
	var st unix.Stat_t
	if err := unix.Stat(mountpoint, &st); err != nil {
		return err
	}
	p := fmt.Sprintf("/sys/class/bdi/%d:%d/read_ahead_kb", unix.Major(st.Dev), unix.Minor(st.Dev))
	cur, err := os.ReadFile(p)
	if err != nil {
		return err
	}
	if v, err := strconv.Atoi(string(cur[:len(cur)-1])); err == nil && v >= kb {
		return nil
	}
	return os.WriteFile(p, []byte(strconv.Itoa(kb)), 0)
}
