package fusefs

import (
	"context"
	"os"
	"syscall"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"

	"sshfsm/internal/remote"
)

// Mknod creates a regular file over SFTP, and a FIFO, a Unix socket (a
// bind on the mount) or a device node with a command on a server that
// runs them (remote.NodeMaker); EPERM where the server cannot. The
// kernel serves the opens of the special files itself: a FIFO opened on
// the mount is a local pipe, and never reaches the server.
func (n *node) Mknod(ctx context.Context, name string, mode, dev uint32, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	ctx, req := n.changing(ctx)
	defer req.End()
	dir, p, errno := n.prepare(name)
	if errno != 0 {
		return nil, errno
	}
	switch mode & syscall.S_IFMT {
	case 0, syscall.S_IFREG:
		return n.mknodRegular(ctx, dir, name, p, mode, out)
	case syscall.S_IFIFO, syscall.S_IFSOCK, syscall.S_IFCHR, syscall.S_IFBLK:
	default:
		return nil, syscall.EINVAL
	}
	nm, ok := n.fsys.ns.(remote.NodeMaker)
	if !ok {
		return nil, syscall.EPERM
	}
	if err := nm.Mknod(ctx, p, mode&(syscall.S_IFMT|07777), dev); err != nil {
		return nil, n.fsys.toErrno(err)
	}
	ctx, cancel := afterChange(ctx)
	defer cancel()
	a, err := n.fsys.ns.Lstat(ctx, p)
	if err != nil {
		return n.provisional(ctx, dir, name, p, remote.Attr{Mode: mode & (syscall.S_IFMT | 07777), Nlink: 1}, out), 0
	}
	n.ownByCaller(ctx, p, &a)
	return n.added(ctx, dir, name, p, a, a.Mtime, out), 0
}

// mknodRegular creates an empty regular file, as SFTP can.
func (n *node) mknodRegular(ctx context.Context, dir, name, p string, mode uint32, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	f, err := n.fsys.ns.Open(ctx, p, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode&07777)
	if err != nil {
		return nil, n.fsys.toErrno(err)
	}
	ctx, cancel := afterChange(ctx)
	defer cancel()
	a, _, err := createdAttr(ctx, f)
	if err != nil {
		go n.fsys.closeRemote(f)
		return n.provisional(ctx, dir, name, p, remote.Attr{Mode: syscall.S_IFREG | mode&07777, Nlink: 1}, out), 0
	}
	// Nothing was written: the close has nothing to report, and need
	// not hold the request.
	go n.fsys.closeRemote(f)
	n.ownByCaller(ctx, p, &a)
	return n.added(ctx, dir, name, p, a, a.Mtime, out), 0
}
