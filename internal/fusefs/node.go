package fusefs

import (
	"context"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"

	"sshfsm/internal/cache"
	"sshfsm/internal/interrupt"
	"sshfsm/internal/namespace"
	"sshfsm/internal/remote"
)

// node is one file, directory or symlink of the mount. Its path is not
// stored: it is the position of its Inode in go-fuse's tree, which go-fuse
// updates on rename and unlink.
type node struct {
	fs.Inode
	fsys *filesys

	// mu guards the fields below up to pending. It is a leaf: no other
	// lock is taken while holding it. Locks of this package never nest;
	// go-fuse's own Inode locks are only taken through its methods,
	// never while one of ours is held.
	mu sync.Mutex
	// opened and openAttr record size and mtime when the page cache was
	// last filled through an open, for FOPEN_KEEP_CACHE.
	opened   bool
	openSize uint64
	openTime time.Time
	openAt   time.Time // when, by the local clock
	// lastSize and lastTime are the newest size and mtime fetched; last
	// is the newest attributes, reported after unlink when no open
	// handle can be asked, and lastAt when they were learned.
	lastSize uint64
	lastTime time.Time
	last     remote.Attr
	lastAt   time.Time
	detached uint64               // inode number reserved by inoTable.detach, 0 if none
	writers  int                  // open writable handles; while > 0 cached listings are bypassed
	lazies   map[*handle]struct{} // lazy handles that have not opened their file yet
	known    knownAttrs           // attributes known without asking (known.go)

	pending pending // writes of all handles of this node in flight

	// kernelListed: the kernel may hold this directory's contents.
	kernelListed atomic.Bool
	// filesLeftOut: a read of this directory left the entries of files
	// out of READDIRPLUS (prefetch.go).
	filesLeftOut atomic.Bool
}

var (
	_ = (fs.NodeLookuper)((*node)(nil))
	_ = (fs.NodeGetattrer)((*node)(nil))
	_ = (fs.NodeSetattrer)((*node)(nil))
	_ = (fs.NodeOnForgetter)((*node)(nil))
	_ = (fs.NodeAccesser)((*node)(nil))
	_ = (fs.NodeStatfser)((*node)(nil))
)

// path returns the node's path relative to the mount root; ok is false
// once the node is unlinked.
func (n *node) path() (p string, ok bool) {
	root := &n.fsys.root.Inode
	var segs []string
	for i := &n.Inode; i != root; {
		name, parent := i.Parent()
		if parent == nil {
			return "", false
		}
		segs = append(segs, name)
		i = parent
	}
	slices.Reverse(segs)
	return strings.Join(segs, "/"), true
}

// childPath validates name and returns the directory's path and the
// child's path.
func (n *node) childPath(name string) (dir, p string, errno syscall.Errno) {
	if err := namespace.ValidName(name); err != nil {
		return "", "", n.fsys.toErrno(err)
	}
	dir, ok := n.path()
	if !ok {
		return "", "", syscall.ENOENT
	}
	return dir, join(dir, name), 0
}

func join(dir, name string) string {
	if dir == "" {
		return name
	}
	return dir + "/" + name
}

func split(p string) (dir, name string) {
	i := strings.LastIndexByte(p, '/')
	if i < 0 {
		return "", p
	}
	return p[:i], p[i+1:]
}

// Lookup answers from the parent's cached listing when it can. A file
// whose entry a read of this directory left out being looked up means
// that walkers stat files.
func (n *node) Lookup(ctx context.Context, name string, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	ctx, req := interrupt.FilterWithin(ctx, n.fsys, n.fsys.opts.RequestTimeout)
	defer req.End()
	ch, errno := n.lookup(ctx, name, out)
	if errno == 0 && n.filesLeftOut.Load() && ch.StableAttr().Mode != syscall.S_IFDIR {
		n.fsys.pre.statsFiles()
	}
	return ch, errno
}

func (n *node) lookup(ctx context.Context, name string, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	dir, p, errno := n.childPath(name)
	if errno != 0 {
		return nil, errno
	}
	var a remote.Attr
	var err error
	var end uint64
	if ch := n.GetChild(name); ch != nil && ch.Operations().(*node).writing() {
		cn := ch.Operations().(*node)
		end = cn.pending.end()
		a, err = cn.writtenAttr(ctx, p)
	} else if n.fsys.inos.hardLinked(p, 0) {
		a, err = n.fsys.ns.Lstat(ctx, p)
	} else {
		a, err = n.fsys.lookupAttr(ctx, dir, name, p)
	}
	if err != nil {
		return nil, n.fsys.toErrno(err)
	}
	return n.newChild(ctx, name, p, a, end, out), 0
}

// lookupAttr returns the attributes of p = dir/name. It asks for the
// single name only when the listing has no answer; a listing the remote
// did not answer fails the lookup at once (one timeout, not two).
func (f *filesys) lookupAttr(ctx context.Context, dir, name, p string) (remote.Attr, error) {
	a, st, err := f.dirs.Lookup(ctx, dir, name, f.listAhead)
	if err != nil {
		return a, err
	}
	switch st {
	case cache.Absent:
		return a, syscall.ENOENT
	case cache.Hit:
		f.pre.walked(dir)
		if f.opts.FollowSymlinks && isLink(a) {
			return f.ns.Stat(ctx, p)
		}
		return a, nil
	}
	if f.opts.FollowSymlinks {
		return f.ns.Stat(ctx, p)
	}
	a, err = f.ns.Lstat(ctx, p)
	if err == nil {
		f.dirs.Set(dir, name, a)
	}
	return a, err
}

// newChild returns the Inode for name with attributes a, reusing the one
// the tree already holds when its file type still matches. end is the
// end of the child's writes in flight before a was fetched.
func (n *node) newChild(ctx context.Context, name, p string, a remote.Attr, end uint64, out *fuse.EntryOut) *fs.Inode {
	return n.newChildIno(ctx, name, p, 0, a, end, out)
}

// newChildIno is newChild for a path whose inode number ino was just
// taken from the table (0: not yet).
func (n *node) newChildIno(ctx context.Context, name, p string, ino uint64, a remote.Attr, end uint64, out *fuse.EntryOut) *fs.Inode {
	typ := fileType(a)
	if ch := n.GetChild(name); ch != nil && ch.StableAttr().Mode == typ {
		old := ch.Operations().(*node)
		if !n.fsys.replacedOnServer(old, a) {
			old.report(a, end, &out.Attr)
			return ch
		}
		// Another file now has this name on the server: as on a local
		// disk (or NFS), the name gets a node and number of its own, and
		// the old node, which open files may hold, keeps its number
		// until the kernel forgets it.
		old.detach(p)
		ino = 0
	}
	if ino == 0 {
		ino = n.fsys.inoOf(p, a)
	}
	ino = n.fsys.inos.forType(p, typ, ino)
	child := &node{fsys: n.fsys}
	child.report(a, 0, &out.Attr)
	return n.NewInode(ctx, child, fs.StableAttr{Mode: typ, Ino: ino})
}

// report fills out from a and remembers size and mtime. end is the end
// offset of the writes that were in flight when a was fetched (pending.end
// read before the fetch): a may predate them.
func (n *node) report(a remote.Attr, end uint64, out *fuse.Attr) {
	if end > a.Size {
		a.Size = end
	}
	a = n.remember(a)
	n.fsys.fillAttr(out, a)
}

// remember records a as the node's newest attributes, with the identity
// and change time a listing told before if a lacks them (or the link
// count and change time the mount's own changes gave it: changed.go),
// and returns what it recorded.
func (n *node) remember(a remote.Attr) remote.Attr {
	now := time.Now()
	n.mu.Lock()
	a = keepOwn(n.last, a, now)
	n.lastSize, n.lastTime, n.last, n.lastAt = a.Size, a.Mtime, a, now
	n.mu.Unlock()
	return a
}

// changedOnServer handles word from the server (a pushed change, a
// revalidated listing) that in's file changed: the node's remembered
// attributes stop counting as fresh, so that the next open asks the
// server instead of choosing a cached version by them (contentVersion,
// freshAttr), and the kernel drops its attributes and, unless attrsOnly,
// its cached data. Nothing of ours may be locked: it notifies the kernel.
func changedOnServer(in *fs.Inode, attrsOnly bool) {
	if n, ok := in.Operations().(*node); ok {
		n.mu.Lock()
		n.lastAt = time.Time{}
		n.mu.Unlock()
	}
	if attrsOnly {
		in.NotifyContent(-1, 0)
	} else {
		in.NotifyContent(0, 0)
	}
}

// Getattr prefers the open handle (it works after unlink), then the
// parent's cached listing, then asks the remote.
func (n *node) Getattr(ctx context.Context, fh fs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	ctx, req := interrupt.FilterWithin(ctx, n.fsys, n.fsys.opts.RequestTimeout)
	defer req.End()
	end := n.pending.end()
	a, errno := n.getattr(ctx, fh)
	if errno != 0 {
		return errno
	}
	n.report(a, end, &out.Attr)
	if _, ok := n.path(); !ok {
		out.Nlink = 0
	}
	return 0
}

func (n *node) getattr(ctx context.Context, fh fs.FileHandle) (remote.Attr, syscall.Errno) {
	p, linked := n.path()
	h := handleOf(fh)
	f := h.opened()
	var a remote.Attr
	var err error
	// In strict mode a file's attributes always come from the server:
	// the kernel asks for them before reads (attr_timeout is 0), and a
	// size it had wrong would cut or pad what it reads.
	strict := n.fsys.opts.Mode == cache.Strict && n.StableAttr().Mode == syscall.S_IFREG
	if a, ok := n.exactAttr(); ok {
		return a, 0 // known.go
	}
	switch {
	case linked && !n.writing() && !strict && !n.fsys.inos.hardLinked(p, n.StableAttr().Ino):
		a, err = n.fsys.statPath(ctx, p)
	case f != nil:
		a, err = f.Stat(ctx)
		n.overlayQueued(&a)
	case linked:
		a, err = n.writtenAttr(ctx, p)
	default:
		n.mu.Lock()
		a = n.last
		n.mu.Unlock()
		if a.Mode == 0 {
			return a, syscall.ENOENT
		}
	}
	return a, n.fsys.toErrno(err)
}

// writing reports whether a writable handle is open on the node.
func (n *node) writing() bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.writers > 0
}

func (n *node) addWriter(d int) {
	n.mu.Lock()
	n.writers += d
	n.mu.Unlock()
}

// statPath returns the attributes of p, from a fresh listing if one has
// them.
func (f *filesys) statPath(ctx context.Context, p string) (remote.Attr, error) {
	if p == "" {
		return f.ns.Stat(ctx, p)
	}
	dir, name := split(p)
	a, st := f.dirs.Peek(dir, name)
	switch {
	case st == cache.Hit && !(f.opts.FollowSymlinks && isLink(a)):
		return a, nil
	case f.opts.FollowSymlinks:
		return f.ns.Stat(ctx, p)
	}
	a, err := f.ns.Lstat(ctx, p)
	if err == nil {
		f.dirs.Set(dir, name, a)
	}
	return a, err
}

// OnForget frees the inode number of an unlinked file once the kernel
// forgets it.
func (n *node) OnForget() {
	n.mu.Lock()
	v := n.detached
	n.mu.Unlock()
	if v != 0 {
		n.fsys.inos.release(v)
	}
}

// detach reserves the node's number after its last path went away.
func (n *node) detach(p string) {
	v := n.StableAttr().Ino
	n.fsys.inos.detach(p, v)
	n.mu.Lock()
	n.detached = v
	n.mu.Unlock()
}
