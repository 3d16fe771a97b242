package remote

import (
	"context"
	"errors"
	"time"
)

// TreeLister is implemented by remotes that can list a whole subtree in one
// request.
type TreeLister interface {
	// ListTree lists dir and the directories below it down to depth levels,
	// calling fn once per directory whose listing is complete (all of its
	// entries, with the attributes a ReadDir would give), as soon as it is
	// complete. ErrTreeUnsupported: the host cannot (no exec, no GNU find).
	//
	// Directories are reported children before parents; a directory that
	// could not be read is not reported, the others still are. fn is
	// called from one goroutine at a time and must not block for long.
	// ErrTreeTruncated: the listing stopped at its size limit; the
	// directories reported before it are complete.
	ListTree(ctx context.Context, dir string, depth int, fn func(dir string, ents []DirEntry)) error
}

var (
	// ErrTreeUnsupported says that the remote cannot list trees at all; a
	// caller lists directory by directory instead and need not ask again.
	ErrTreeUnsupported = errors.New("listing a tree in one request is not supported")
	// ErrTreeTruncated says that a tree listing stopped at its entry limit.
	ErrTreeTruncated = errors.New("tree listing stopped at its entry limit")
)

// ChangeLister is implemented by remotes that can list, in one request,
// what changed recently in a subtree.
type ChangeLister interface {
	// ListChanged calls fn with the path of every name at or below dir
	// (dir itself included) whose inode changed within the last within,
	// and how long ago, as the server's clock measures both: its ctime,
	// which a write, a change of attributes, a rename, and in a directory
	// a name added or removed all set, and which no one can set back. fn
	// is called from one goroutine at a time. ErrTreeUnsupported: the
	// host cannot (no exec, no GNU find).
	ListChanged(ctx context.Context, dir string, within time.Duration, fn func(path string, age time.Duration)) error
}
