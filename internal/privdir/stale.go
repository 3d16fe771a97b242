package privdir

import (
	"errors"
	"io/fs"
	"net"
	"os"
	"syscall"
	"time"
)

// Gone reports whether no process has id pid; an unknown pid (0 or less)
// is not gone. A process of another user still exists (EPERM).
func Gone(pid int) bool {
	return pid > 0 && errors.Is(syscall.Kill(pid, 0), syscall.ESRCH)
}

// StaleSocket reports whether the file at path is a unix socket of the
// calling user's (never a link: it is not followed) that refuses
// connections, as one does once the process listening on it is gone. It
// returns the socket's file information for RemoveIfSame.
func StaleSocket(path string) (os.FileInfo, bool) {
	fi, err := os.Lstat(path)
	if err != nil || fi.Mode().Type() != fs.ModeSocket || !ownedByMe(fi) {
		return nil, false
	}
	c, err := net.DialTimeout("unix", path, time.Second)
	if err == nil {
		c.Close()
		return nil, false
	}
	return fi, errors.Is(err, syscall.ECONNREFUSED)
}

// RemoveIfSame removes path unless it is no longer the file fi (a new
// process just put its own there); it reports whether it removed it.
func RemoveIfSame(path string, fi os.FileInfo) bool {
	now, err := os.Lstat(path)
	return err == nil && os.SameFile(fi, now) && os.Remove(path) == nil
}

// ownedByMe reports whether the calling user owns the file of fi.
func ownedByMe(fi os.FileInfo) bool {
	st, ok := fi.Sys().(*syscall.Stat_t)
	return ok && int(st.Uid) == os.Getuid()
}
