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
