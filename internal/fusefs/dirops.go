package fusefs

import (
	"context"
	"os"
	"syscall"
	"time"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"

	"sshfsm/internal/interrupt"
	"sshfsm/internal/namespace"
	"sshfsm/internal/remote"
)

var (
	_ = (fs.NodeCreater)((*node)(nil))
	_ = (fs.NodeMkdirer)((*node)(nil))
	_ = (fs.NodeMknoder)((*node)(nil))
	_ = (fs.NodeUnlinker)((*node)(nil))
	_ = (fs.NodeRmdirer)((*node)(nil))
	_ = (fs.NodeRenamer)((*node)(nil))
	_ = (fs.NodeSymlinker)((*node)(nil))
	_ = (fs.NodeLinker)((*node)(nil))
)

// prepare checks a name for a new entry in a writable mount.
func (n *node) prepare(name string) (dir, p string, errno syscall.Errno) {
	if errno := n.fsys.readOnly(); errno != 0 {
		return "", "", errno
	}
	return n.childPath(name)
}

// afterChange is the context of the calls that follow a change the server
// made: an interrupt must no longer turn the operation into EINTR, or the
// caller would retry what already happened. It keeps the request's
// deadline: the change and what follows it share one timeout.
func afterChange(ctx context.Context) (context.Context, context.CancelFunc) {
	d := context.WithoutCancel(ctx)
	if dl, ok := ctx.Deadline(); ok {
		return context.WithDeadline(d, dl)
	}
	return d, func() {}
}

// changing narrows a request that changes the server as Filter does, and
// bounds it as a whole by the timeout: its server requests one after
// another (a look at what is replaced, the change, the attributes after
// it) must not wait a timeout each.
func (n *node) changing(ctx context.Context) (context.Context, *interrupt.Request) {
	return interrupt.FilterWithin(ctx, n.fsys, n.fsys.opts.RequestTimeout)
}

// provisional answers for a node the server made whose attributes could
// not be fetched in the request's time: the entry carries what the change
// implies, and the kernel asks again at its next use. The change was
// made, and failing the request would say otherwise.
func (n *node) provisional(ctx context.Context, dir, name, p string, a remote.Attr, out *fuse.EntryOut) *fs.Inode {
	n.fsys.log.Debug("attributes of a new node not known in time", "path", p)
	if a.Mtime.IsZero() {
		a.Atime, a.Mtime = time.Now(), time.Now()
	}
	if n.fsys.opts.RemoteIDsKnown {
		a.UID, a.GID = n.fsys.opts.RemoteUID, n.fsys.opts.RemoteGID
	}
	ino := n.added(ctx, dir, name, p, a, time.Time{}, out)
	n.fsys.dirs.Forget(dir, name)
	ino.Operations().(*node).unsure(out)
	return ino
}

// unsure marks the attributes just reported for n in out as a guess: the
// kernel keeps neither the entry nor the attributes, and an open does not
// take them for the server's.
func (n *node) unsure(out *fuse.EntryOut) {
	n.mu.Lock()
	n.lastAt = time.Time{}
	n.mu.Unlock()
	out.SetEntryTimeout(time.Nanosecond)
	out.SetAttrTimeout(time.Nanosecond)
}

// added registers a new entry: the listing cache learns it and a fresh
// Inode is returned. at is when the server made it (zero: not known),
// which is when its directory changed (changed.go).
func (n *node) added(ctx context.Context, dir, name, p string, a remote.Attr, at time.Time, out *fuse.EntryOut) *fs.Inode {
	n.fsys.dirs.Set(dir, name, a)
	n.fsys.entriesChanged(dir, at)
	child := &node{fsys: n.fsys}
	// A file just made has one link (changed.go).
	child.last = remote.Attr{Mode: a.Mode, Nlink: 1}
	child.report(a, 0, &out.Attr)
	typ := fileType(a)
	n.fsys.own.created(p, typ == syscall.S_IFDIR)
	ino := n.fsys.inos.forType(p, typ, n.fsys.inos.get(p))
	return n.NewInode(ctx, child, fs.StableAttr{Mode: typ, Ino: ino})
}

func (n *node) Create(ctx context.Context, name string, flags, mode uint32, out *fuse.EntryOut) (*fs.Inode, fs.FileHandle, uint32, syscall.Errno) {
	ctx, req := n.changing(ctx)
	defer req.End()
	dir, p, errno := n.prepare(name)
	if errno != 0 {
		return nil, nil, 0, errno
	}
	f, err := n.fsys.ns.Open(ctx, p, remoteFlags(flags)|os.O_CREATE, mode&07777)
	if err != nil {
		return nil, nil, 0, n.fsys.toErrno(err)
	}
	ctx, cancel := afterChange(ctx)
	defer cancel()
	a, fresh, err := createdAttr(ctx, f)
	if err != nil {
		// Closing must not cost a second timeout after the first.
		go n.fsys.closeRemote(f)
		return nil, nil, 0, n.fsys.toErrno(err)
	}
	n.ownByCaller(ctx, p, &a)
	var at time.Time
	if fresh {
		at = a.Mtime
	}
	ino := n.added(ctx, dir, name, p, a, at, out)
	child := ino.Operations().(*node)
	h := child.newHandle(f, flags)
	if fresh && h.w != nil {
		child.created(h)
	}
	return ino, h, child.openFlags(flags), 0
}

func (n *node) Mkdir(ctx context.Context, name string, mode uint32, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	ctx, req := n.changing(ctx)
	defer req.End()
	dir, p, errno := n.prepare(name)
	if errno != 0 {
		return nil, errno
	}
	a, err := namespace.MkdirAttr(ctx, n.fsys.ns, p, mode&07777)
	if err != nil {
		return nil, n.fsys.toErrno(err)
	}
	ctx, cancel := afterChange(ctx)
	defer cancel()
	n.ownByCaller(ctx, p, &a)
	// A new directory is empty: lookups in it need no listing, and a
	// name looked up there is absent without asking. That listing is
	// like any other the mount keeps: a name another client creates
	// there is seen when the change watcher reports it (it forgets the
	// name) or when the listing expires (dir_cache_timeout), and until
	// then a create of that name still goes to the server, which
	// answers EEXIST to an exclusive one. The mount's own changes keep
	// the listing current (added, removed, forgetListing).
	n.fsys.dirs.Put(p, nil)
	return n.added(ctx, dir, name, p, a, a.Mtime, out), 0
}

func (n *node) Symlink(ctx context.Context, target, name string, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	ctx, req := n.changing(ctx)
	defer req.End()
	dir, p, errno := n.prepare(name)
	if errno != 0 {
		return nil, errno
	}
	if err := n.fsys.ns.Symlink(ctx, target, p); err != nil {
		return nil, n.fsys.toErrno(err)
	}
	ctx, cancel := afterChange(ctx)
	defer cancel()
	a, err := n.fsys.ns.Lstat(ctx, p)
	if err != nil {
		return n.provisional(ctx, dir, name, p, remote.Attr{Mode: syscall.S_IFLNK | 0o777, Size: uint64(len(target)), Nlink: 1}, out), 0
	}
	n.ownByCaller(ctx, p, &a)
	return n.added(ctx, dir, name, p, a, a.Mtime, out), 0
}

// Link makes a hard link; the new name reports the target's inode.
func (n *node) Link(ctx context.Context, target fs.InodeEmbedder, name string, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	if n.fsys.opts.DisableHardlink {
		return nil, syscall.EPERM
	}
	ctx, req := n.changing(ctx)
	defer req.End()
	dir, p, errno := n.prepare(name)
	if errno != 0 {
		return nil, errno
	}
	tn := target.(*node)
	oldp, ok := tn.path()
	if !ok {
		return nil, syscall.ENOENT
	}
	// The attributes reported next are the server's: the changes queued
	// on a new file's handle go first (known.go).
	if err := tn.inexact(ctx); err != nil {
		return nil, n.fsys.toErrno(err)
	}
	end := tn.pending.end()
	if err := n.fsys.ns.Link(ctx, oldp, p); err != nil {
		return nil, n.fsys.toErrno(err)
	}
	ctx, cancel := afterChange(ctx)
	defer cancel()
	a, err := n.fsys.ns.Lstat(ctx, p)
	if err != nil {
		// The new name is the target's file: its last attributes, one
		// link more, to be asked again.
		tn.mu.Lock()
		a = tn.last
		tn.mu.Unlock()
		if a.Nlink > 0 {
			a.Nlink++
		}
		n.fsys.dirs.Forget(dir, name)
		n.fsys.inos.link(oldp, p, tn.StableAttr().Ino)
		tn.report(a, end, &out.Attr)
		tn.unsure(out)
		return tn.EmbeddedInode(), 0
	}
	if tn.StableAttr().Mode == syscall.S_IFLNK {
		// A link's target is relative to its directory, and the kernel
		// keeps one target per inode: each name of a link gets an inode
		// of its own, so that a target checked for one directory is never
		// followed from another.
		return n.added(ctx, dir, name, p, a, time.Time{}, out), 0
	}
	n.fsys.dirs.Set(dir, name, a)
	n.fsys.entriesChanged(dir, time.Time{})
	tn.changedInode(+1)
	n.fsys.own.created(p, false)
	n.fsys.inos.link(oldp, p, tn.StableAttr().Ino)
	tn.report(a, end, &out.Attr)
	return tn.EmbeddedInode(), 0
}

func (n *node) Unlink(ctx context.Context, name string) syscall.Errno {
	ctx, req := n.changing(ctx)
	defer req.End()
	dir, p, errno := n.prepare(name)
	if errno != 0 {
		return errno
	}
	if ch := n.GetChild(name); ch != nil {
		if err := ch.Operations().(*node).openLazies(ctx); err != nil {
			return n.fsys.toErrno(err)
		}
	}
	if err := n.fsys.ns.Remove(ctx, p); err != nil {
		return n.fsys.toErrno(err)
	}
	n.fsys.own.removed(p, false)
	if ch := n.GetChild(name); ch != nil {
		ch.Operations().(*node).changedInode(-1)
	}
	n.removed(dir, name, p)
	return 0
}

func (n *node) Rmdir(ctx context.Context, name string) syscall.Errno {
	ctx, req := n.changing(ctx)
	defer req.End()
	dir, p, errno := n.prepare(name)
	if errno != 0 {
		return errno
	}
	if err := n.fsys.ns.Rmdir(ctx, p); err != nil {
		return n.fsys.toErrno(err)
	}
	n.fsys.own.removed(p, true)
	n.removed(dir, name, p)
	n.fsys.dirs.DropTree(p)
	return 0
}

// removed updates caches and inode numbers after name left the directory.
func (n *node) removed(dir, name, p string) {
	n.fsys.dirs.Remove(dir, name)
	n.fsys.entriesChanged(dir, time.Time{})
	n.fsys.forgetContent(p)
	if ch := n.GetChild(name); ch != nil {
		ch.Operations().(*node).detach(p)
	}
}

// createdAttr returns the attributes of f, just opened creating its file:
// those the open learned when it could (remote.CreatedFile), else asked.
// fresh reports that the open created the file (it did not exist).
func createdAttr(ctx context.Context, f remote.File) (a remote.Attr, fresh bool, err error) {
	if cf, ok := f.(remote.CreatedFile); ok {
		if a, ok := cf.CreatedAttr(); ok {
			return a, true, nil
		}
	}
	a, err = f.Stat(ctx)
	return a, false, err
}
