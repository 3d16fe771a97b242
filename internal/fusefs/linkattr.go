package fusefs

import (
	"context"
	"syscall"

	"github.com/hanwen/go-fuse/v2/fuse"

	"sshfsm/internal/remote"
)

// setLinkAttr changes a symbolic link's own owner and times (lchown,
// utimensat with AT_SYMLINK_NOFOLLOW). SFTP's SETSTAT would change the
// target's instead, so this takes a remote that can change the link
// itself (remote.LinkAttrSetter: a command on the server); elsewhere, and
// for a mode or a size, which Linux links do not have, it fails with
// EOPNOTSUPP.
func (n *node) setLinkAttr(ctx context.Context, in *fuse.SetAttrIn, out *fuse.AttrOut) syscall.Errno {
	if _, ok := in.GetMode(); ok {
		return syscall.EOPNOTSUPP
	}
	if _, ok := in.GetSize(); ok {
		return syscall.EOPNOTSUPP
	}
	p, linked := n.path()
	if !linked {
		return syscall.ENOENT
	}
	ls, ok := n.fsys.ns.(remote.LinkAttrSetter)
	if !ok {
		return syscall.EOPNOTSUPP
	}
	sa := n.fsys.remoteSetAttr(in)
	if sa.UID != nil || sa.GID != nil || sa.Atime != nil || sa.Mtime != nil {
		if err := ls.SetLinkAttr(ctx, p, sa); err != nil {
			return n.fsys.toErrno(err)
		}
		n.fsys.dirs.Forget(split(p))
		n.changedInode(0) // changed.go
		return n.attrAfterChange(ctx, nil, sa, false, 0, out)
	}
	return n.Getattr(ctx, nil, out)
}
