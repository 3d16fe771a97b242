package transport

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path"
	"strings"
	"syscall"
	"time"

	"github.com/pkg/sftp"

	"sshfsm/internal/remote"
)

// hostRemote serves remote.Remote over a Host's channels, rooted at root
// (the Host's own directory, or another one of RemoteAt).
type hostRemote struct {
	h    *Host
	root string
	own  bool // the Host's own tree: Close closes the Host
}

// abs maps a tree path to the remote absolute path, never leaving the root.
func (r hostRemote) abs(p string) string {
	return path.Join(r.root, path.Clean("/"+p))
}

var _ remote.Remote = hostRemote{}

func statOf(fi os.FileInfo) *sftp.FileStat {
	if st, ok := fi.Sys().(*sftp.FileStat); ok {
		return st
	}
	return &sftp.FileStat{Size: uint64(fi.Size()), Mtime: uint32(fi.ModTime().Unix())}
}

// validName reports whether name is one file name Linux allows: not
// empty, "." or "..", without '/' or NUL, at most NAME_MAX bytes.
func validName(name string) bool {
	return name != "" && name != "." && name != ".." && len(name) <= nameMax && !strings.ContainsAny(name, "/\x00")
}

func attrOf(fi os.FileInfo) remote.Attr {
	st := statOf(fi)
	return remote.Attr{
		Mode: st.Mode, Size: st.Size, UID: st.UID, GID: st.GID,
		Atime: time.Unix(int64(st.Atime), 0), Mtime: time.Unix(int64(st.Mtime), 0),
	}
}

// fail wraps a failed call's error with op and path, mapping server
// answers to errors the FUSE layer understands.
func (r hostRemote) fail(op, p string, err error) error {
	if err == nil {
		return nil
	}
	if isAnswer(err) {
		err = mapStatus(err)
	}
	return fmt.Errorf("%s %s:%s: %w", op, r.h.o.Host, p, err)
}

func (r hostRemote) stat(ctx context.Context, p string, follow bool) (remote.Attr, error) {
	var a remote.Attr
	err := r.h.do(ctx, idempotent, func(c *channel) error {
		var fi os.FileInfo
		var err error
		if follow {
			fi, err = c.client.Stat(r.abs(p))
		} else {
			fi, err = c.client.Lstat(r.abs(p))
		}
		if err == nil {
			a = attrOf(fi)
		}
		return err
	})
	if err != nil {
		return remote.Attr{}, err
	}
	return a, nil
}

func (r hostRemote) Lstat(ctx context.Context, p string) (remote.Attr, error) {
	a, err := r.stat(ctx, p, false)
	return a, r.fail("lstat", p, err)
}

func (r hostRemote) Stat(ctx context.Context, p string) (remote.Attr, error) {
	a, err := r.stat(ctx, p, true)
	return a, r.fail("stat", p, err)
}

func (r hostRemote) ReadDir(ctx context.Context, p string) ([]remote.DirEntry, error) {
	var out []remote.DirEntry
	// The listing ends with the call's deadline: a server that answers
	// every READDIR with more names would otherwise keep it (and the
	// memory of the names) growing after the caller has gone.
	lctx, cancel := r.h.withDeadline(ctx)
	defer cancel()
	err := r.h.do(lctx, idempotent, func(c *channel) error {
		fis, err := c.client.ReadDirContext(lctx, r.abs(p))
		if err != nil {
			return err
		}
		es := make([]remote.DirEntry, 0, len(fis))
		for _, fi := range fis {
			if !validName(fi.Name()) {
				// No file has it: a server's bug or a hostile one. An
				// entry it cannot stat is left out the same way.
				continue
			}
			es = append(es, remote.DirEntry{Name: fi.Name(), Attr: attrOf(fi)})
		}
		out = es
		return nil
	})
	if err != nil {
		return nil, r.fail("readdir", p, err)
	}
	return out, nil
}

func (r hostRemote) Readlink(ctx context.Context, p string) (string, error) {
	var target string
	err := r.h.do(ctx, idempotent, func(c *channel) error {
		t, err := c.client.ReadLink(r.abs(p))
		target = t
		return err
	})
	if err != nil {
		return "", r.fail("readlink", p, err)
	}
	return target, nil
}

func (r hostRemote) Mkdir(ctx context.Context, p string, perm uint32) error {
	_, err := r.mkdir(ctx, p, perm, false)
	return err
}

var _ remote.DirMaker = hostRemote{}

// MkdirAttr implements remote.DirMaker: the LSTAT travels beside the
// SETSTAT of the permissions, which the server may answer before or after
// the change, so the permissions reported are the ones set.
func (r hostRemote) MkdirAttr(ctx context.Context, p string, perm uint32) (remote.Attr, error) {
	return r.mkdir(ctx, p, perm, true)
}

func (r hostRemote) mkdir(ctx context.Context, p string, perm uint32, stat bool) (remote.Attr, error) {
	abs := r.abs(p)
	var a remote.Attr
	filled := false
	err := r.changeTold(ctx, func(c *channel) error {
		if stat {
			if tried, err := mkdirLstat(c, abs, perm, &a); tried {
				filled = err == nil
				return err
			}
		}
		if err := c.client.Mkdir(abs); err != nil {
			return err
		}
		if !stat {
			return c.client.Chmod(abs, os.FileMode(perm&07777))
		}
		var err error
		a, err = chmodLstat(c, abs, perm)
		filled = err == nil
		return err
	}, r.mkdirOutcome(p, perm))
	if err == nil && stat && !filled {
		// The mkdir was found made after its answer was lost with its
		// connection (told.go): its attributes are asked for now.
		fa, serr := r.stat(ctx, p, false)
		if serr != nil {
			err = serr
		} else {
			a = fa
			a.Mode = a.Mode&^07777 | perm&07777
		}
	}
	if isFailure(err) {
		err = r.settle(ctx, p, err, probeExists, probeFS)
	}
	return a, r.fail("mkdir", p, err)
}

// chmodLstat sets the permissions of abs, a directory just made, and
// returns its attributes, in one round trip: the LSTAT travels with the
// SETSTAT.
func chmodLstat(c *channel, abs string, perm uint32) (remote.Attr, error) {
	var fi os.FileInfo
	var serr error
	done := make(chan struct{})
	go func() {
		defer close(done)
		fi, serr = c.client.Lstat(abs)
	}()
	err := c.client.Chmod(abs, os.FileMode(perm&07777))
	<-done
	if err != nil {
		return remote.Attr{}, err
	}
	if serr != nil {
		return remote.Attr{}, serr
	}
	a := attrOf(fi)
	a.Mode = a.Mode&^07777 | perm&07777
	return a, nil
}

// Remove unlinks a non-directory. pkg/sftp's Remove falls back to RMDIR
// when REMOVE fails; the kernel never sends UNLINK for a directory it
// knows, so that fallback only matters if the remote changed underneath.
func (r hostRemote) Remove(ctx context.Context, p string) error {
	abs := r.abs(p)
	err := r.changeTold(ctx, func(c *channel) error { return c.client.Remove(abs) }, r.removeOutcome(p))
	if isFailure(err) {
		err = r.settle(ctx, p, err, probeIsDir, probeFS)
	}
	if err == nil {
		r.h.removed(abs)
	}
	return r.fail("remove", p, err)
}

func (r hostRemote) Rmdir(ctx context.Context, p string) error {
	abs := r.abs(p)
	err := r.h.do(ctx, mutation, func(c *channel) error { return c.client.RemoveDirectory(abs) })
	switch statusCode(err) {
	case fxFailure:
		err = r.settle(ctx, p, err, probeNotDir, probeNotEmpty, probeFS)
	case fxNoSuchFile: // OpenSSH reports ENOTDIR as "no such file"
		err = r.settle(ctx, p, err, probeNotDir)
	}
	return r.fail("rmdir", p, err)
}

// Rename uses posix-rename@openssh.com (atomic replace) when offered. With
// noReplace it sends a plain SFTP RENAME, which OpenSSH implements with
// link+unlink for files and so refuses to replace; an existing target
// found first or after a failure is reported as EEXIST.
func (r hostRemote) Rename(ctx context.Context, oldp, newp string, noReplace bool) error {
	if noReplace {
		if _, err := r.stat(ctx, newp, false); err == nil {
			return r.fail("rename", newp, fs.ErrExist)
		}
	}
	oldAbs, newAbs := r.abs(oldp), r.abs(newp)
	err := r.changeTold(ctx, func(c *channel) error {
		if !noReplace && c.ext("posix-rename@openssh.com") {
			return c.client.PosixRename(oldAbs, newAbs)
		}
		return c.client.Rename(oldAbs, newAbs)
	}, r.renameOutcome(oldp, newp))
	if isFailure(err) && noReplace {
		err = r.settle(ctx, newp, err, probeExists, probeFS)
	} else if isFailure(err) {
		err = r.settleRename(ctx, oldp, newp, err)
	}
	if err == nil {
		r.h.moved(oldAbs, newAbs)
	}
	return r.fail("rename", oldp+" -> "+newp, err)
}

func (r hostRemote) Symlink(ctx context.Context, target, linkp string) error {
	abs := r.abs(linkp)
	err := r.h.do(ctx, mutation, func(c *channel) error { return c.client.Symlink(target, abs) })
	if isFailure(err) {
		err = r.settle(ctx, linkp, err, probeExists, probeFS)
	}
	return r.fail("symlink", linkp, err)
}

func (r hostRemote) Link(ctx context.Context, oldp, newp string) error {
	oldAbs, newAbs := r.abs(oldp), r.abs(newp)
	err := r.h.do(ctx, mutation, func(c *channel) error {
		if !c.ext("hardlink@openssh.com") {
			return syscall.ENOTSUP
		}
		return c.client.Link(oldAbs, newAbs)
	})
	if isFailure(err) {
		err = r.settle(ctx, newp, err, probeExists, probeFS)
	}
	return r.fail("link", newp, err)
}

// SetAttr applies the changes one SETSTAT at a time. SFTP sets atime and
// mtime together (and uid with gid): a missing half is read from a stat.
func (r hostRemote) SetAttr(ctx context.Context, p string, a remote.SetAttr) error {
	abs := r.abs(p)
	var cur *remote.Attr
	if (a.Atime == nil) != (a.Mtime == nil) || (a.UID == nil) != (a.GID == nil) {
		st, err := r.stat(ctx, p, true)
		if err != nil {
			return r.fail("setattr", p, err)
		}
		cur = &st
	}
	// A size changed by path is a change to the file like a handle's
	// truncate: the log of its writable handles here records it, or they
	// would take the new size for someone else's change after a reconnect.
	var lg *fileLog
	if a.Size != nil {
		if lg = r.h.openLog(abs); lg != nil {
			defer r.h.releaseLog(abs, lg)
			lg.truncateSent(int64(*a.Size))
			lg.holdGate()
		}
	}
	err := r.h.do(ctx, mutation, func(c *channel) error {
		err := setAttr(c.client, abs, a, cur)
		if err == nil && lg != nil {
			lg.truncateDone(int64(*a.Size))
		}
		return err
	})
	lg.releaseGate()
	if isFailure(err) {
		err = r.settle(ctx, p, err, probeFS)
	}
	return r.fail("setattr", p, err)
}

func setAttr(cl *sftp.Client, abs string, a remote.SetAttr, cur *remote.Attr) error {
	if a.Mode != nil {
		if err := cl.Chmod(abs, os.FileMode(*a.Mode&07777)); err != nil {
			return err
		}
	}
	if a.UID != nil || a.GID != nil {
		uid, gid := pick32(a.UID, cur, true), pick32(a.GID, cur, false)
		if err := cl.Chown(abs, int(uid), int(gid)); err != nil {
			return err
		}
	}
	if a.Size != nil {
		if err := cl.Truncate(abs, int64(*a.Size)); err != nil {
			return err
		}
	}
	if a.Atime != nil || a.Mtime != nil {
		at, mt := pickTime(a.Atime, cur, true), pickTime(a.Mtime, cur, false)
		return cl.Chtimes(abs, at, mt)
	}
	return nil
}

func pick32(v *uint32, cur *remote.Attr, uid bool) uint32 {
	switch {
	case v != nil:
		return *v
	case uid:
		return cur.UID
	}
	return cur.GID
}

func pickTime(v *time.Time, cur *remote.Attr, atime bool) time.Time {
	switch {
	case v != nil:
		return *v
	case atime:
		return cur.Atime
	}
	return cur.Mtime
}

// StatFS uses statvfs@openssh.com when offered, else reports a large
// synthetic filesystem.
func (r hostRemote) StatFS(ctx context.Context, p string) (remote.StatFS, error) {
	var s remote.StatFS
	abs := r.abs(p)
	err := r.h.do(ctx, idempotent, func(c *channel) error {
		if !c.ext("statvfs@openssh.com") {
			s = syntheticStatFS
			return nil
		}
		v, err := c.client.StatVFS(abs)
		if err == nil {
			s = remote.StatFS{Bsize: v.Bsize, Frsize: v.Frsize, Blocks: v.Blocks, Bfree: v.Bfree,
				Bavail: v.Bavail, Files: v.Files, Ffree: v.Ffree, Favail: v.Favail,
				NameMax: v.Namemax, Fsid: v.Fsid}
		}
		return err
	})
	if err != nil {
		return remote.StatFS{}, r.fail("statfs", p, err)
	}
	return s, nil
}

var syntheticStatFS = remote.StatFS{
	Bsize: 4096, Frsize: 4096, Blocks: 1 << 30, Bfree: 1 << 30, Bavail: 1 << 30,
	Files: 1 << 30, Ffree: 1 << 30, Favail: 1 << 30, NameMax: 255,
}

// Close closes the Host for its own tree; a tree of RemoteAt leaves the
// Host to its owner.
func (r hostRemote) Close() error {
	if !r.own {
		return nil
	}
	return r.h.Close()
}

var _ remote.Health = hostRemote{}

func (r hostRemote) Up() bool                 { return r.h.Up() }
func (r hostRemote) Changed() <-chan struct{} { return r.h.Changed() }
