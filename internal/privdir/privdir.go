// Package privdir creates and checks the directories sshfsm keeps private
// state in (the disk cache, the status sockets), refusing any that another
// local user could have planted, could change or could swap for another.
package privdir

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// Private forbids every permission of group and others (status sockets).
const Private fs.FileMode = 0o077

// NoOthersWrite forbids writing by group and others (the disk cache,
// which a user may choose to share for reading).
const NoOthersWrite fs.FileMode = 0o022

// ErrUnsafe is wrapped by the errors of Check, Make and Resolve that
// refuse a directory another local user could have planted or could change
// (as opposed to one that could not be made or read).
var ErrUnsafe = errors.New("directory another user could change")

// unsafeError is a refusal; its message says what to do.
type unsafeError struct{ msg string }

func (e *unsafeError) Error() string        { return e.msg }
func (e *unsafeError) Is(target error) bool { return target == ErrUnsafe }

func unsafe(format string, args ...any) error {
	return &unsafeError{fmt.Sprintf(format, args...)}
}

// Make creates dir, and any missing parent, with mode 0700 unless it
// exists, then checks it with Check.
func Make(dir string, forbid fs.FileMode) error {
	if err := create(dir); err != nil {
		return err
	}
	return Check(dir, forbid)
}

// Resolve creates what is missing of dir as Make does and returns it with
// its symbolic links resolved, after checking that only the calling user
// (and root) can change it: the directory passes Check and every directory
// above it passes checkParent. The caller uses the path returned, which
// no link can redirect later.
func Resolve(dir string, forbid fs.FileMode) (string, error) {
	if err := create(dir); err != nil {
		return "", err
	}
	real, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return "", err
	}
	real, err = filepath.Abs(real)
	if err != nil {
		return "", err
	}
	if err := Check(real, forbid); err != nil {
		return "", err
	}
	for p := filepath.Dir(real); ; p = filepath.Dir(p) {
		if err := checkParent(p); err != nil {
			return "", err
		}
		if p == filepath.Dir(p) {
			return real, nil
		}
	}
}

// create makes dir and its missing parents 0700; the umask may not take
// the owner's bits from the directory itself.
func create(dir string) error {
	if _, err := os.Lstat(dir); err == nil {
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(dir), 0o700); err != nil {
		return err
	}
	err := os.Mkdir(dir, 0o700)
	switch {
	case err == nil:
		return os.Chmod(dir, 0o700)
	case errors.Is(err, fs.ErrExist):
		return nil
	}
	return err
}

// Check refuses a directory that someone else could have planted or could
// change: it must be a real directory (not a symbolic link), owned by the
// calling user, with none of the permission bits forbid.
func Check(dir string, forbid fs.FileMode) error {
	fi, err := os.Lstat(dir)
	if err != nil {
		return err
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	switch {
	case !fi.IsDir():
		return unsafe("%s is not a directory (%v); remove it", dir, fi.Mode().Type())
	case !ok:
		return unsafe("%s: no owner information", dir)
	case int(st.Uid) != os.Getuid():
		return unsafe("%s is owned by uid %d, not by you (uid %d); remove it", dir, st.Uid, os.Getuid())
	case fi.Mode().Perm()&forbid == 0:
		return nil
	case forbid == Private:
		return unsafe("%s has mode %04o, not private; chmod 700 %s", dir, fi.Mode().Perm(), dir)
	}
	return unsafe("%s has mode %04o: others may change it; chmod go-w %s", dir, fi.Mode().Perm(), dir)
}

// checkParent refuses a directory in which someone else could rename or
// replace what it holds: it must be owned by the calling user or by root,
// and writable by group or others only when sticky (like /tmp, where only
// an entry's owner may remove it).
func checkParent(dir string) error {
	fi, err := os.Stat(dir)
	if err != nil {
		return err
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	switch {
	case !ok:
		return unsafe("%s: no owner information", dir)
	case st.Uid != 0 && int(st.Uid) != os.Getuid():
		return unsafe("%s is owned by uid %d, neither you (uid %d) nor root: it could replace what it holds; use another directory", dir, st.Uid, os.Getuid())
	case fi.Mode().Perm()&0o022 != 0 && fi.Mode()&fs.ModeSticky == 0:
		return unsafe("%s has mode %04o: others could replace what it holds; use another directory", dir, fi.Mode().Perm())
	}
	return nil
}
