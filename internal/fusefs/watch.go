package fusefs

import (
	"context"
	"strings"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"

	"sshfsm/internal/namespace"
)

// Changes made on the servers directly (an editor there, a build, git)
// arrive as batches of namespace paths (Options.Changes, from
// internal/watch). For each path the mount drops what it holds and tells
// the kernel to drop its copy; the next access asks the server:
//
//   - attributes changed: the entry of the parent's cached listing, the
//     kernel's attributes;
//   - contents changed: also the kernel's cached data of the file;
//   - a name created or removed: the listing's entry, the kernel's entry
//     of the name (a name looked up in vain shows at once), the kernel's
//     data of a file it knows under that name, and the parent's cached
//     contents and attributes, once per batch. A file the kernel knows
//     that was removed is reported deleted (NotifyDelete; local inotify
//     watchers of the mount see it). A directory's cached listings below
//     it go too. A directory created where the kernel knows a directory
//     keeps its entry (see changedName), and the kernel's attributes and
//     data of everything it knows below it are dropped;
//   - a tree (the watcher lost events, or was not running for a while):
//     as when the hosts that answer change (health.go), every listing
//     below it, the kernel's attributes and data of every inode below it,
//     and its negative entries of names that reappeared.
//
// Changes the mount makes itself come back as events too. Those its own
// recent changes explain are ignored (echo.go). A file the mount has open
// for writing keeps what the kernel caches of it: the mount's view of it
// is the current one. Any other echo costs one revalidation of the names
// concerned when they are used next.
//
// Nothing of this package is locked while the kernel is notified.

// followChanges applies Options.Changes until the server stops serving or
// the channel is closed.
func (f *filesys) followChanges(srv *fuse.Server) {
	ch := f.opts.Changes
	if ch == nil {
		return
	}
	done := make(chan struct{})
	go func() {
		srv.Wait()
		close(done)
	}()
	go func() {
		trees := map[string]context.CancelFunc{} // refreshes of trees running
		defer func() {
			for _, cancel := range trees {
				cancel()
			}
		}()
		for {
			select {
			case batch, ok := <-ch:
				if !ok {
					return
				}
				f.applyChanges(batch, trees)
			case <-done:
				return
			}
		}
	}()
}

// applyChanges drops what the mount and the kernel hold of each path of
// batch (sorted by path, so a directory comes before what is in it).
func (f *filesys) applyChanges(batch []namespace.Change, trees map[string]context.CancelFunc) {
	changedDirs := map[*fs.Inode]bool{} // whose contents changed
	for _, c := range batch {
		if f.own.echo(c) {
			continue // the mount's own change, known (echo.go)
		}
		namespace.Forget(f.ns, c)
		var dir *fs.Inode
		if c.Kind == namespace.ChangeTree {
			dir = f.changedTree(c.Path, trees)
		} else {
			dir = f.changedName(c)
		}
		if dir != nil {
			changedDirs[dir] = true
		}
	}
	for dir := range changedDirs {
		dir.NotifyContent(0, 0)
	}
}

// changedName handles a change of one name and returns its parent's inode
// when the parent's contents changed.
func (f *filesys) changedName(c namespace.Change) *fs.Inode {
	dir, name := split(c.Path)
	parent, child := f.knownInode(dir), &f.root.Inode
	if c.Path != "" {
		f.dirs.Forget(dir, name)
		child = nil
		if parent != nil {
			child = parent.GetChild(name)
		}
	}
	if c.Dir && c.Kind >= namespace.ChangeCreated {
		f.dirs.DropTree(c.Path)
	}
	if child != nil && child.Operations().(*node).writing() {
		return nil // the mount's own writes
	}
	switch c.Kind {
	case namespace.ChangeAttr:
		if child != nil {
			changedOnServer(child, true)
		}
		return nil
	case namespace.ChangeData:
		if child != nil {
			changedOnServer(child, false)
		}
		return nil
	}
	if parent == nil || c.Path == "" {
		return nil
	}
	switch {
	case child == nil:
		parent.NotifyEntry(name) // a negative entry, if any
	case c.Kind == namespace.ChangeCreated && c.Dir && child.IsDir():
		// Still a directory, maybe another one. Its entry stays:
		// dropping it would unhash it under processes whose working
		// directory it is (getcwd fails), and a lookup would find the
		// same inode again. What the kernel holds below it goes.
		inodes, _ := f.known(child, c.Path)
		for _, in := range inodes {
			changedOnServer(in, false)
		}
	case c.Kind == namespace.ChangeRemoved && !child.IsDir():
		parent.NotifyDelete(name, child)
	default:
		// Another file under the name, or a directory gone.
		changedOnServer(child, false)
		parent.NotifyEntry(name)
	}
	return parent
}

// changedTree handles a change of everything at and below p and returns
// p's parent's inode when the kernel knows it. The refresh of what the
// kernel knows below p runs in the background, replacing one of p still
// running; trees holds them by path (the roots of branches, in practice:
// watchers restarted, events lost).
func (f *filesys) changedTree(p string, trees map[string]context.CancelFunc) *fs.Inode {
	dir, name := split(p)
	parent := f.knownInode(dir)
	var in *fs.Inode
	switch {
	case p == "":
		in, parent = &f.root.Inode, nil
	case parent != nil:
		in = parent.GetChild(name)
	}
	if p != "" {
		f.dirs.Forget(dir, name)
	}
	f.dirs.DropTree(p)
	if in == nil {
		if parent != nil {
			parent.NotifyEntry(name) // a negative entry
		}
		return parent
	}
	if !in.IsDir() {
		changedOnServer(in, false)
		return parent
	}
	if cancel := trees[p]; cancel != nil {
		cancel()
	}
	ctx, cancel := context.WithCancel(context.Background())
	trees[p] = cancel
	go func() {
		inodes, dirs := f.refreshBelow(ctx, in, p)
		if ctx.Err() == nil {
			f.log.Debug("caches below a tree changed on the server refreshed", "path", p, "inodes", inodes, "dirs", dirs)
		}
	}()
	return parent
}

// knownInode returns the inode of path p if the kernel knows it.
func (f *filesys) knownInode(p string) *fs.Inode {
	in := &f.root.Inode
	for p != "" && in != nil {
		var name string
		name, p, _ = strings.Cut(p, "/")
		in = in.GetChild(name)
	}
	return in
}
