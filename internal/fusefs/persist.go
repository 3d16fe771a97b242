package fusefs

import (
	"sync"
	"syscall"
	"time"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"

	"sshfsm/internal/cache"
	"sshfsm/internal/remote"
)

// Listings persisted across mounts (Options.MetaFile; cache/persist.go
// has the rules). The snapshot is loaded before the mount serves and
// written when the server stops, and periodically meanwhile. What the
// kernel was told from a loaded listing that a revalidation then found
// different is invalidated: names added or removed in the directory's
// entries (NotifyEntry, NotifyDelete), changed attributes and data on the
// child's inode, and the directory's cached contents. A directory known to
// the kernel keeps its dentry when only its attributes changed: unhashing
// it would strand a process whose working directory it is.

// startPersist loads the snapshot into the listing cache; it runs before
// the mount serves.
func (f *filesys) startPersist() {
	if f.opts.MetaFile == "" || !f.dirs.Enabled() {
		return
	}
	f.notes = &notifier{f: f, wake: make(chan struct{}, 1)}
	tree, _ := f.ns.(remote.TreeLister)
	changes, _ := f.ns.(remote.ChangeLister)
	f.dirs.Persist(cache.PersistOptions{
		Path:    f.opts.MetaFile,
		Mode:    f.opts.Mode,
		Logger:  f.log,
		Root:    f.rootAttr,
		ReadDir: f.readDir,
		Tree:    tree,
		Changes: changes,
		Checked: f.forgetContents,
		Changed: f.notes.add,
	})
}

// forgetContents drops the disk cache's versions of paths, changed on
// the server while it was not mounted.
func (f *filesys) forgetContents(paths []string) {
	for _, p := range paths {
		f.forgetContent(p)
	}
}

// persistUntilUnmount tells the kernel about revalidations while srv
// serves, and writes the snapshot once it has stopped.
func (f *filesys) persistUntilUnmount(srv *fuse.Server) {
	if f.notes == nil {
		return
	}
	done := make(chan struct{})
	go f.notes.run(done)
	go func() {
		srv.Wait()
		close(done)
		f.dirs.Close()
	}()
}

// rootAttr returns the root's newest attributes and when they were
// learned, for the snapshot.
func (f *filesys) rootAttr() (remote.Attr, time.Time) {
	r := f.root
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.last, r.lastAt
}

// rawFS is the filesystem go-fuse serves. In Immutable mode with a
// snapshot, the root's attributes come from the snapshot too: every other
// name's come from its parent's listing. With Options.Requests, every
// request is recorded while it is served.
func (f *filesys) rawFS(fo *fs.Options) fuse.RawFileSystem {
	raw := fs.NewNodeFS(f.root, fo)
	if f.notes != nil && f.opts.Mode == cache.Immutable {
		raw = persistedRoot{RawFileSystem: raw, f: f}
	}
	if f.opts.Requests != nil {
		raw = tracked{RawFileSystem: raw, t: f.opts.Requests, m: f.opts.Metrics}
	}
	return raw
}

// persistedRoot answers GETATTR of the root from the snapshot until the
// mount changes the root directory.
type persistedRoot struct {
	fuse.RawFileSystem
	f *filesys
}

func (r persistedRoot) GetAttr(cancel <-chan struct{}, in *fuse.GetAttrIn, out *fuse.AttrOut) fuse.Status {
	if in.NodeId != fuse.FUSE_ROOT_ID {
		return r.RawFileSystem.GetAttr(cancel, in, out)
	}
	a, ok := r.f.dirs.PersistedRoot()
	if !ok {
		return r.RawFileSystem.GetAttr(cancel, in, out)
	}
	r.f.root.report(a, 0, &out.Attr)
	// What go-fuse's own GETATTR adds.
	out.Ino = rootIno
	out.Mode = syscall.S_IFDIR | out.Mode&07777
	out.SetTimeout(r.f.opts.AttrTimeout)
	return fuse.OK
}

// notifier tells the kernel what revalidations found, from a goroutine of
// its own: the cache reports with its lock held, and an invalidation
// waits for the kernel's locks of the directory, which a request in
// flight may hold.
type notifier struct {
	f *filesys
	// mu guards queue. It is a leaf, taken while the cache's lock is held.
	mu    sync.Mutex
	queue []cache.Change
	wake  chan struct{}
}

func (n *notifier) add(c cache.Change) {
	n.mu.Lock()
	n.queue = append(n.queue, c)
	n.mu.Unlock()
	select {
	case n.wake <- struct{}{}:
	default:
	}
}

// run invalidates until done is closed.
func (n *notifier) run(done <-chan struct{}) {
	for {
		select {
		case <-n.wake:
		case <-done:
			return
		}
		for {
			n.mu.Lock()
			q := n.queue
			n.queue = nil
			n.mu.Unlock()
			if len(q) == 0 {
				break
			}
			for _, c := range q {
				n.f.invalidate(c)
			}
		}
	}
}

// invalidate drops what the kernel may hold of the names of c.
func (f *filesys) invalidate(c cache.Change) {
	dir := f.knownInode(c.Dir)
	if dir == nil {
		return // the kernel holds nothing below a directory it does not know
	}
	if c.Listed {
		dir.NotifyContent(0, 0)
	}
	for _, nc := range c.Names {
		ch := dir.GetChild(nc.Name)
		switch {
		case ch == nil:
			dir.NotifyEntry(nc.Name) // a negative entry, if any
		case nc.Exists && fileType(nc.Attr) == ch.StableAttr().Mode:
			changedOnServer(ch, false)
		// A file gone is deleted from the kernel. Not a directory: the
		// kernel marks it dead, and one made again under the name gets
		// the same inode number (watch.go does the same).
		case !nc.Exists && !ch.IsDir() && dir.NotifyDelete(nc.Name, ch) == 0:
		default:
			changedOnServer(ch, false)
			dir.NotifyEntry(nc.Name)
		}
	}
	f.log.Debug("revalidation changed a listing", "dir", c.Dir, "names", len(c.Names))
}
