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
	"strings"
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

// Make creates dir as Resolve does and checks it the same way, except that
// dir itself may not be a link; the caller keeps using dir, whose every
// step only it and root can change.
func Make(dir string, forbid fs.FileMode) error {
	_, err := walk(dir, checkOf(forbid), true, false)
	return err
}

// Resolve returns dir with its symbolic links resolved, after checking
// that only the calling user and root could have chosen or could change
// any step of the way: every directory a name is looked up in passes
// checkParent, every link followed belongs to the user or root, and dir
// itself passes Check. What is missing is made, mode 0700, but only below
// a directory that passed: a refusal makes nothing, and nothing made can
// be redirected. The caller uses the path returned.
func Resolve(dir string, forbid fs.FileMode) (string, error) {
	return walk(dir, checkOf(forbid), true, true)
}

// CheckPath checks dir as Make does, making nothing: a missing directory
// is an error satisfying errors.Is(err, fs.ErrNotExist).
func CheckPath(dir string, forbid fs.FileMode) error {
	_, err := walk(dir, checkOf(forbid), false, false)
	return err
}

// CheckHolder refuses a directory, such as a temporary one, in which
// someone else could rename or replace what the caller puts there: every
// step to it is checked as Resolve does, and dir itself must be owned by
// the calling user or root and writable by others only when sticky.
func CheckHolder(dir string) error {
	_, err := walk(dir, checkParent, false, true)
	return err
}

// checkOf is Check of forbid.
func checkOf(forbid fs.FileMode) func(string) error {
	return func(dir string) error { return Check(dir, forbid) }
}

// maxLinks bounds the links followed on one path, as the kernel's ELOOP.
const maxLinks = 40

// walk resolves dir one name at a time from the root, checking each
// directory before looking a name up in it, and each link before
// following it, and dir itself with check; with create, it makes what is
// missing. Unless followLast, dir itself must be no link.
func walk(dir string, check func(string) error, create, followLast bool) (string, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	cur, todo, links := "/", names(abs), 0
	for len(todo) > 0 {
		name := todo[0]
		todo = todo[1:]
		if name == ".." {
			cur = filepath.Dir(cur) // cur holds no link: its parent is real
			continue
		}
		if err := checkParent(cur); err != nil {
			return "", err
		}
		next := filepath.Join(cur, name)
		fi, err := lookup(next, create)
		if err != nil {
			return "", err
		}
		switch {
		case fi.Mode()&fs.ModeSymlink != 0 && len(todo) == 0 && !followLast:
			return "", check(next) // refuses it: not a directory
		case fi.Mode()&fs.ModeSymlink != 0:
			if links++; links > maxLinks {
				return "", &fs.PathError{Op: "resolve", Path: dir, Err: syscall.ELOOP}
			}
			target, err := followable(next, fi)
			if err != nil {
				return "", err
			}
			if filepath.IsAbs(target) {
				cur = "/"
			}
			todo = append(names(target), todo...)
		case !fi.IsDir() && len(todo) > 0:
			return "", &fs.PathError{Op: "resolve", Path: next, Err: syscall.ENOTDIR}
		default:
			cur = next
		}
	}
	if err := check(cur); err != nil {
		return "", err
	}
	return cur, nil
}

// names splits a path into the names to look up, without empty ones and ".".
func names(path string) []string {
	var out []string
	for _, n := range strings.Split(path, "/") {
		if n != "" && n != "." {
			out = append(out, n)
		}
	}
	return out
}

// lookup returns the file information of path, not following a link;
// with create, a missing path is made a directory of mode 0700 first (the
// umask may not take the owner's bits). Its parent has passed checkParent:
// nobody else can have put anything in its place.
func lookup(path string, create bool) (os.FileInfo, error) {
	fi, err := os.Lstat(path)
	if !create || !errors.Is(err, fs.ErrNotExist) {
		return fi, err
	}
	err = os.Mkdir(path, 0o700)
	switch {
	case err == nil:
		if err := os.Chmod(path, 0o700); err != nil {
			return nil, err
		}
	case !errors.Is(err, fs.ErrExist):
		return nil, err
	}
	return os.Lstat(path)
}

// followable returns the target of the link path unless someone other
// than the calling user and root owns it: whoever owns a link may point
// it elsewhere (a sticky directory such as /tmp lets anyone plant one).
func followable(path string, fi os.FileInfo) (string, error) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return "", unsafe("%s: no owner information", path)
	}
	if st.Uid != 0 && int(st.Uid) != os.Getuid() {
		return "", unsafe("%s is a link of uid %d, neither you (uid %d) nor root: it chooses where the directory is; use another path", path, st.Uid, os.Getuid())
	}
	return os.Readlink(path)
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
