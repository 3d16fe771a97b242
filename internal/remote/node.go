package remote

import (
	"context"
	"fmt"
	"syscall"
)

// NodeMaker is implemented by remotes that can create the special files
// SFTP has no request for: FIFOs, Unix sockets and device nodes.
type NodeMaker interface {
	// Mknod creates path as the special file of mode (file type and
	// permission bits, used as they are: no umask applies) and, for a
	// device, of device number dev (Linux encoding, unix.Major and
	// unix.Minor). ErrNoNodes: the remote cannot create special files.
	Mknod(ctx context.Context, path string, mode, dev uint32) error
}

// ErrNoNodes is the error of a remote that cannot create special files
// (no command execution, or no mkfifo, mknod or socket binder on the
// server). It is EPERM, as for a filesystem that does not support them.
var ErrNoNodes = fmt.Errorf("special files cannot be created on this remote: %w", syscall.EPERM)

// LinkAttrSetter is implemented by remotes that can change a symbolic
// link's own owner and times, which SFTP's SETSTAT cannot (it follows
// the link).
type LinkAttrSetter interface {
	// SetLinkAttr applies a's UID, GID, Atime and Mtime (each when set) to
	// the link path itself; a.Mode and a.Size must be nil. ErrNoLinkAttr:
	// the remote cannot.
	SetLinkAttr(ctx context.Context, path string, a SetAttr) error
}

// ErrNoLinkAttr is the error of a remote that cannot change a link's own
// attributes: EOPNOTSUPP, as lchmod(2) answers on Linux.
var ErrNoLinkAttr = fmt.Errorf("a symbolic link's own attributes cannot be changed on this remote: %w", syscall.EOPNOTSUPP)
