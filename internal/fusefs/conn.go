package fusefs

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"sshfsm/internal/mountinfo"
)

// fuseConn is the kernel's control directory of the mount's FUSE
// connection: /sys/fs/fuse/connections/N (fusectl), N the minor of the
// mount's anonymous device.
type fuseConn struct{ dir string }

// connectionsDir is where fusectl is mounted.
const connectionsDir = "/sys/fs/fuse/connections"

// findConn returns the connection mounted at mountpoint, nil when its
// control directory cannot be found (fusectl not mounted).
func findConn(mountpoint string) *fuseConn {
	abs, err := filepath.Abs(mountpoint)
	if err != nil {
		return nil
	}
	m, ok := mountinfo.At(abs)
	if !ok {
		return nil
	}
	major, minor, ok := strings.Cut(m.Dev, ":")
	if !ok || major != "0" {
		return nil
	}
	dir := filepath.Join(connectionsDir, minor)
	if _, err := os.Stat(filepath.Join(dir, "waiting")); err != nil {
		return nil
	}
	return &fuseConn{dir: dir}
}

// gone reports that the kernel ended the connection: its directory went
// with the unmounted filesystem, or no request waits on it any more (an
// abort answers every request at once, while a request still being
// served here counts as waiting).
func (c *fuseConn) gone() bool {
	b, err := os.ReadFile(filepath.Join(c.dir, "waiting"))
	if err != nil {
		return errors.Is(err, fs.ErrNotExist)
	}
	return strings.TrimSpace(string(b)) == "0"
}

// Gone tells interrupt.Filter whether the mount's connection has ended;
// false while it cannot tell (fusectl not mounted when the mount was made).
func (f *filesys) Gone() bool {
	c := f.conn.Load()
	return c != nil && c.gone()
}
