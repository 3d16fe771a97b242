// Package remote defines the transport-neutral view of one remote directory tree
// that the filesystem layers above talk to.
package remote

import (
	"context"
	"time"
)

// Attr is what the remote says about one file. Mode carries the POSIX file
// type bits (S_IFMT) as well as the permission bits, exactly as on the wire.
type Attr struct {
	Mode  uint32
	Size  uint64
	UID   uint32
	GID   uint32
	Atime time.Time
	Mtime time.Time
	// The file's identity and change time, which a tree listing (find's
	// %D %i %n %C@) tells and SFTP does not: Ino is 0 when unknown, and
	// then Dev, Nlink and Ctime are zero too. Tools such as git compare
	// st_ino and st_ctime with what they recorded on the server.
	Dev, Ino uint64
	Nlink    uint64
	Ctime    time.Time
}

// HasIdentity reports whether a carries the server's inode number, device,
// link count and change time.
func (a Attr) HasIdentity() bool { return a.Ino != 0 }

// KeepIdentity returns a, which a request without them (SFTP) returned,
// with the identity and change time of old, what a tree listing said of
// the same file, while they can still be true: a changed modification
// time is the change time of a write (the kernel sets both), a changed
// mode or owner one of now. a is returned as it is when it has its own
// identity, old has none, or the file type differs (another file).
func KeepIdentity(old, a Attr, now time.Time) Attr {
	if a.HasIdentity() || !old.HasIdentity() || (old.Mode^a.Mode)&0o170000 != 0 {
		return a
	}
	a.Dev, a.Ino, a.Nlink, a.Ctime = old.Dev, old.Ino, old.Nlink, old.Ctime
	return MoveCtime(old, a, now)
}

// MoveCtime returns a, whose Ctime is the change time recorded with old,
// with that time moved by what changed from old to a: a changed
// modification time or size is the change time of a write (the kernel
// sets both), a changed mode or owner one of now.
func MoveCtime(old, a Attr, now time.Time) Attr {
	switch {
	case !a.Mtime.Equal(old.Mtime) || a.Size != old.Size:
		if a.Mtime.After(a.Ctime) {
			a.Ctime = a.Mtime
		}
	case a.Mode != old.Mode || a.UID != old.UID || a.GID != old.GID:
		if now.After(a.Ctime) {
			a.Ctime = now
		}
	}
	return a
}

// DirEntry is one name of a directory listing, with the attributes the
// listing carried (SFTP NAME replies carry lstat attributes).
type DirEntry struct {
	Name string
	Attr Attr
}

// SetAttr lists the attribute changes of one setattr call; nil fields are
// left as they are.
type SetAttr struct {
	Mode  *uint32 // permission bits only
	UID   *uint32
	GID   *uint32
	Size  *uint64
	Atime *time.Time
	Mtime *time.Time
}

// StatFS is the remote filesystem's statvfs.
type StatFS struct {
	Bsize, Frsize                 uint64
	Blocks, Bfree, Bavail         uint64
	Files, Ffree, Favail, NameMax uint64
	Fsid                          uint64
}

// Remote is one remote directory tree. Paths are relative to the tree's root
// ("" or "." is the root itself) and use "/" separators; they are already
// validated (no "..", no empty components). Every call honours ctx's
// deadline, even if the network does not answer. Cancellation is honoured
// at once by reads and by any call not yet sent; a mutation already sent
// waits for its answer (within the deadline), so that an error never
// claims a change did not happen when it did.
//
// Errors wrap the fs package's errors where one fits (fs.ErrNotExist,
// fs.ErrExist, fs.ErrPermission) or carry a syscall.Errno, so that one
// translator above can map them to errno.
type Remote interface {
	Lstat(ctx context.Context, path string) (Attr, error)
	Stat(ctx context.Context, path string) (Attr, error) // follows symlinks
	ReadDir(ctx context.Context, path string) ([]DirEntry, error)
	Readlink(ctx context.Context, path string) (string, error)

	// Open opens (and with os.O_CREATE creates with mode perm) a regular
	// file; flags are os.O_* values.
	Open(ctx context.Context, path string, flags int, perm uint32) (File, error)
	Mkdir(ctx context.Context, path string, perm uint32) error
	Remove(ctx context.Context, path string) error // a non-directory
	Rmdir(ctx context.Context, path string) error
	// Rename replaces newpath atomically when the server supports it
	// (posix-rename). With noReplace it fails with EEXIST if newpath
	// exists (RENAME_NOREPLACE).
	Rename(ctx context.Context, oldpath, newpath string, noReplace bool) error
	Symlink(ctx context.Context, target, linkpath string) error
	Link(ctx context.Context, oldpath, newpath string) error
	SetAttr(ctx context.Context, path string, a SetAttr) error
	StatFS(ctx context.Context, path string) (StatFS, error)

	// Close ends the connections; calls after it fail.
	Close() error
}

// File is an open remote file. Its methods may be called concurrently.
type File interface {
	ReadAt(ctx context.Context, p []byte, off int64) (int, error) // io.EOF at end
	WriteAt(ctx context.Context, p []byte, off int64) (int, error)
	Stat(ctx context.Context) (Attr, error)
	Truncate(ctx context.Context, size int64) error
	// Sync makes acknowledged writes durable (fsync extension when offered).
	Sync(ctx context.Context) error
	// Close reports any write error not reported before.
	Close(ctx context.Context) error
}
