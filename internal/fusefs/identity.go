package fusefs

import (
	"context"
	"errors"
	"syscall"

	"sshfsm/internal/remote"
)

// The server's identity of its files (inode number, device, link count
// and change time) comes with tree listings only: SFTP carries none of
// it. git, for one, records st_ino and st_ctime in its index and takes a
// file whose numbers differ for changed, reading it whole. So when the
// mount shows server inode numbers (Options.ServerInodes), directories
// are listed by one-level tree listings, and what a later SFTP request
// returns keeps what a listing said (remote.KeepIdentity): the numbers
// never flip between sources.

// readDir lists dir, by a tree listing of one level when the mount shows
// server inode numbers and the namespace can list trees, so that its
// entries carry their identity.
func (f *filesys) readDir(ctx context.Context, dir string) ([]remote.DirEntry, error) {
	tl, ok := f.ns.(remote.TreeLister)
	if !ok || !f.serverIDs() || f.noTree.Load() {
		return f.ns.ReadDir(ctx, dir)
	}
	var ents []remote.DirEntry
	listed := false
	err := tl.ListTree(ctx, dir, 0, func(d string, e []remote.DirEntry) {
		if d == dir {
			ents, listed = e, true
		}
	})
	switch {
	case errors.Is(err, remote.ErrTreeUnsupported):
		f.noTree.Store(true)
	case err != nil && (ctx.Err() != nil || errors.Is(err, remote.ErrTreeTruncated)):
		return nil, err
	case err != nil:
		// The command failed, most likely with its connection (a link
		// cut under it): READDIR, which a lost channel sends again on
		// another, lists dir without the identities rather than fail.
		f.log.Debug("tree listing failed; listing by READDIR", "dir", dir, "err", err)
	case listed:
		return ents, nil
	}
	// The listing could not read dir, or the server cannot list trees:
	// READDIR says why, or lists it.
	return f.ns.ReadDir(ctx, dir)
}

// inoOf returns the inode number of path p whose file has attributes a:
// the server's when the mount shows those and a tells it, else (and for
// a path numbered before) the table's.
func (f *filesys) inoOf(p string, a remote.Attr) uint64 {
	if f.serverIDs() && a.HasIdentity() {
		return f.inos.serverIno(p, a)
	}
	return f.inos.get(p)
}

// serverIDs reports whether the mount shows the server's identities. It
// needs the listing cache: without it lookups ask SFTP, which has none,
// and a file's number would depend on whether a lookup or a directory
// read met it first. Everything else shows numbers, ctime and link
// counts of its own, whatever a listing tells.
func (f *filesys) serverIDs() bool { return f.opts.ServerInodes && f.dirs.Enabled() }

// replacedOnServer reports whether a, which a tree listing told, is
// another file than the one old was made for: the server's device or
// inode number differ. Directories keep their node (what lies below
// them, and a shell's working directory, would be cut off).
func (f *filesys) replacedOnServer(old *node, a remote.Attr) bool {
	if !f.serverIDs() || !a.HasIdentity() || a.Mode&syscall.S_IFMT == syscall.S_IFDIR {
		return false
	}
	old.mu.Lock()
	was := old.last
	old.mu.Unlock()
	return was.HasIdentity() && (was.Dev != a.Dev || was.Ino != a.Ino)
}
