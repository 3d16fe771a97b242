package fusefs

import (
	"context"
	"syscall"
	"time"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"

	"sshfsm/internal/cache"
	"sshfsm/internal/remote"
)

// Setattr changes mode, owner, size and times. Truncation goes through
// the open handle when the kernel names one, after that handle's queued
// writes. SFTP sets owner and group together, and both times together:
// a missing half is filled in from the current attributes.
//
// Symlinks: SFTP's setstat follows them, so a link's own owner and times
// are changed otherwise (setLinkAttr).
func (n *node) Setattr(ctx context.Context, fh fs.FileHandle, in *fuse.SetAttrIn, out *fuse.AttrOut) syscall.Errno {
	ctx, req := n.changing(ctx)
	defer req.End()
	if errno := n.fsys.readOnly(); errno != 0 {
		return errno
	}
	if n.StableAttr().Mode == syscall.S_IFLNK {
		return n.setLinkAttr(ctx, in, out)
	}
	h := handleOf(fh)
	p, linked := n.path()
	if h == nil && !linked {
		return syscall.ENOENT
	}
	size, sized := in.GetSize()
	changed := false // the server made a change
	if sized {
		_ = n.inexact(ctx) // queued changes are the handle's to report
		if errno := n.truncate(ctx, h, p, size); errno != 0 {
			return errno
		}
		changed = true
	}
	sa := n.fsys.remoteSetAttr(in)
	if sa.Mode != nil || sa.UID != nil || sa.GID != nil || sa.Atime != nil || sa.Mtime != nil {
		if !linked {
			return syscall.EOPNOTSUPP
		}
		if w := n.queueFor(&sa); w != nil {
			w.setAttrs(sa)
		} else if err := n.inexact(ctx); err != nil {
			return n.fsys.toErrno(err)
		} else if errno := n.setRemote(ctx, h, p, sa); errno != 0 {
			return errno
		} else {
			changed = true
		}
	}
	if linked {
		n.fsys.own.changed(p)
		dir, name := split(p)
		if sized {
			n.fsys.dirs.Forget(dir, name)
		} else {
			// What was set is known; the rest of a cached entry stays.
			n.applyKnown(dir, name, sa)
		}
		if sized || sa.Mtime != nil {
			n.fsys.forgetContent(p)
		}
	}
	n.changedInode(0) // changed.go
	if !changed {
		return n.Getattr(ctx, fh, out)
	}
	return n.attrAfterChange(ctx, fh, sa, sized, size, out)
}

// attrAfterChange answers a setattr whose change the server made with the
// attributes after it. When they are not known in the request's time,
// failing would say the change was not made: the answer is then the last
// attributes with the change applied, which the kernel does not keep.
func (n *node) attrAfterChange(ctx context.Context, fh fs.FileHandle, sa remote.SetAttr, sized bool, size uint64, out *fuse.AttrOut) syscall.Errno {
	ctx, cancel := afterChange(ctx)
	defer cancel()
	if errno := n.Getattr(ctx, fh, out); errno == 0 {
		return 0
	}
	n.mu.Lock()
	a := n.last
	n.lastAt = time.Time{}
	n.mu.Unlock()
	if sized {
		a.Size = size
	}
	setAttrOn(&a, sa)
	n.fsys.fillAttr(&out.Attr, a)
	out.SetTimeout(time.Nanosecond)
	return 0
}

func (n *node) truncate(ctx context.Context, h *handle, p string, size uint64) syscall.Errno {
	if n.StableAttr().Mode == syscall.S_IFDIR {
		return syscall.EISDIR
	}
	if h != nil {
		return n.fsys.toErrno(h.truncate(ctx, size))
	}
	if err := n.pending.wait(ctx); err != nil {
		return n.fsys.toErrno(err)
	}
	return n.fsys.toErrno(n.fsys.ns.SetAttr(ctx, p, remote.SetAttr{Size: &size}))
}

// setRemote completes half-given owner or time pairs and applies sa.
func (n *node) setRemote(ctx context.Context, h *handle, p string, sa remote.SetAttr) syscall.Errno {
	halfIDs := (sa.UID == nil) != (sa.GID == nil)
	halfTimes := (sa.Atime == nil) != (sa.Mtime == nil)
	if halfIDs || halfTimes {
		// The other half is left as the caller sees it: the attributes
		// reported now (a cached listing's when fresh).
		var cur remote.Attr
		var err error
		if f := h.opened(); f != nil {
			cur, err = f.Stat(ctx)
		} else if n.writing() || n.fsys.opts.Mode == cache.Strict {
			cur, err = n.fsys.ns.Lstat(ctx, p)
		} else {
			cur, err = n.fsys.statPath(ctx, p)
		}
		if err != nil {
			return n.fsys.toErrno(err)
		}
		fillHalves(&sa, cur)
	}
	if sa.Mtime != nil {
		// Queued writes would move mtime past the value being set.
		if err := n.pending.wait(ctx); err != nil {
			return n.fsys.toErrno(err)
		}
	}
	return n.fsys.toErrno(n.fsys.ns.SetAttr(ctx, p, sa))
}

func fillHalves(sa *remote.SetAttr, cur remote.Attr) {
	if sa.UID == nil && sa.GID != nil {
		sa.UID = &cur.UID
	}
	if sa.GID == nil && sa.UID != nil {
		sa.GID = &cur.GID
	}
	if sa.Atime == nil && sa.Mtime != nil {
		sa.Atime = &cur.Atime
	}
	if sa.Mtime == nil && sa.Atime != nil {
		sa.Mtime = &cur.Mtime
	}
}
