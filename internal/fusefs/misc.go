package fusefs

import (
	"context"
	"syscall"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"

	"sshfsm/internal/interrupt"
)

var (
	_ = (fs.NodeGetxattrer)((*node)(nil))
	_ = (fs.NodeListxattrer)((*node)(nil))
	_ = (fs.NodeSetxattrer)((*node)(nil))
	_ = (fs.NodeRemovexattrer)((*node)(nil))
)

// SFTP has no extended attributes. Without Options.Xattr, reading them
// answers ENOSYS, which the kernel remembers for the mount and turns into
// EOPNOTSUPP (ENODATA for ACLs: none) for every later call without asking
// again: ls -l asks for each file's ACL otherwise. With it, the mount's
// own attributes are served (xattr.go).

func (n *node) Getxattr(ctx context.Context, attr string, dest []byte) (uint32, syscall.Errno) {
	ctx, req := interrupt.FilterWithin(ctx, n.fsys, n.fsys.opts.RequestTimeout)
	defer req.End()
	if !n.fsys.opts.Xattr {
		return 0, syscall.ENOSYS
	}
	return n.getxattr(ctx, attr, dest)
}

func (n *node) Listxattr(ctx context.Context, dest []byte) (uint32, syscall.Errno) {
	if !n.fsys.opts.Xattr {
		return 0, syscall.ENOSYS
	}
	return n.listxattr(dest)
}

func (n *node) Setxattr(ctx context.Context, attr string, data []byte, flags uint32) syscall.Errno {
	return syscall.ENOTSUP
}

func (n *node) Removexattr(ctx context.Context, attr string) syscall.Errno {
	return syscall.ENOTSUP
}

// Statfs reports the remote's statvfs, or a large empty filesystem when
// the server cannot tell (df and installers must not fail on that).
func (n *node) Statfs(ctx context.Context, out *fuse.StatfsOut) syscall.Errno {
	ctx, req := interrupt.FilterWithin(ctx, n.fsys, n.fsys.opts.RequestTimeout)
	defer req.End()
	s, err := n.fsys.ns.StatFS(ctx, "")
	if err != nil {
		if errno := n.fsys.toErrno(err); errno == syscall.EINTR || errno == syscall.ETIMEDOUT {
			return errno
		}
		const blocks = 1 << 30
		*out = fuse.StatfsOut{Blocks: blocks, Bfree: blocks, Bavail: blocks, Bsize: 4096, Frsize: 4096, NameLen: 255}
		return 0
	}
	*out = fuse.StatfsOut{
		Blocks: s.Blocks, Bfree: s.Bfree, Bavail: s.Bavail,
		Files: s.Files, Ffree: s.Ffree,
		Bsize: uint32(s.Bsize), Frsize: uint32(s.Frsize), NameLen: uint32(s.NameMax),
	}
	if out.NameLen == 0 || out.NameLen > 255 {
		out.NameLen = 255
	}
	return 0
}

// Access checks the reported attributes; the remote enforces its own
// permissions on every operation anyway.
func (n *node) Access(ctx context.Context, mask uint32) syscall.Errno {
	ctx, req := interrupt.FilterWithin(ctx, n.fsys, n.fsys.opts.RequestTimeout)
	defer req.End()
	if mask&2 != 0 {
		if errno := n.fsys.readOnly(); errno != 0 {
			return errno
		}
	}
	var out fuse.AttrOut
	if errno := n.Getattr(ctx, nil, &out); errno != 0 {
		return errno
	}
	caller, ok := fuse.FromContext(ctx)
	if !ok || permits(caller, &out.Attr, mask) {
		return 0
	}
	return syscall.EACCES
}

// permits applies the owner/group/other permission bits to the caller.
func permits(c *fuse.Caller, a *fuse.Attr, mask uint32) bool {
	mask &= 7
	if c.Uid == 0 {
		// root needs an execute bit somewhere to execute a file.
		return mask&1 == 0 || a.Mode&0111 != 0 || a.Mode&syscall.S_IFMT == syscall.S_IFDIR
	}
	var perm uint32
	switch {
	case c.Uid == a.Uid:
		perm = a.Mode >> 6
	case c.Gid == a.Gid:
		perm = a.Mode >> 3
	default:
		perm = a.Mode
	}
	return perm&mask == mask
}
