package fusefs

import (
	"context"
	"sync"
	"syscall"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"

	"sshfsm/internal/namespace"
	"sshfsm/internal/remote"
)

// dirHandle is one open directory. On the first read it takes the fresh
// cached listing, or lists the remote once, and serves READDIRPLUS lookups
// from that listing.
type dirHandle struct {
	n *node

	// mu guards the fields below.
	mu      sync.Mutex
	dir     string
	fetched bool
	ents    []remote.DirEntry // "." and ".." first
	byName  map[string]int    // index into ents
	pos     int               // next index to return
	cur     fuse.DirEntry     // storage for the entry returned last
}

var (
	_ = (fs.NodeOpendirHandler)((*node)(nil))
	_ = (fs.FileReaddirenter)((*dirHandle)(nil))
	_ = (fs.FileLookuper)((*dirHandle)(nil))
	_ = (fs.FileSeekdirer)((*dirHandle)(nil))
	_ = (fs.FileReleasedirer)((*dirHandle)(nil))
)

func (n *node) OpendirHandle(ctx context.Context, flags uint32) (fs.FileHandle, uint32, syscall.Errno) {
	p, ok := n.path()
	if !ok {
		return nil, 0, syscall.ENOENT
	}
	return &dirHandle{n: n, dir: p}, n.dirOpenFlags(p), 0
}

// dirOpenFlags lets the kernel cache the directory's contents while our
// listing of it is fresh. Once that has expired, the kernel's copy is
// dropped too, so a name created on the server shows within
// DirCacheTimeout, as without the kernel's cache: the directory's mtime,
// which the kernel also watches, has a resolution of seconds over SFTP.
// (The kernel drops its copy itself when the mount changes the directory.)
func (n *node) dirOpenFlags(dir string) uint32 {
	if !n.fsys.dirs.Enabled() {
		return 0
	}
	if !n.fsys.dirs.Fresh(dir) && n.kernelListed.Swap(false) {
		// Nothing of this package is locked here, as notifying asks.
		n.NotifyContent(0, 0)
	}
	n.kernelListed.Store(true)
	return fuse.FOPEN_CACHE_DIR | fuse.FOPEN_KEEP_CACHE
}

func (d *dirHandle) fetch(ctx context.Context) syscall.Errno {
	if d.fetched {
		return 0
	}
	// A listing prefetched for this directory may be on its way.
	d.n.fsys.dirs.Wait(ctx, d.dir)
	list, ok := d.n.fsys.dirs.List(d.dir)
	if !ok {
		var err error
		if list, err = d.n.fsys.dirs.Fetch(ctx, d.dir, d.n.fsys.ns.ReadDir); err != nil {
			return d.n.fsys.toErrno(err)
		}
	}
	d.ents = make([]remote.DirEntry, 0, len(list)+2)
	d.ents = append(d.ents,
		remote.DirEntry{Name: ".", Attr: remote.Attr{Mode: syscall.S_IFDIR}},
		remote.DirEntry{Name: "..", Attr: remote.Attr{Mode: syscall.S_IFDIR}})
	d.byName = make(map[string]int, len(list))
	for _, e := range list {
		if e.Name == "." || e.Name == ".." || namespace.ValidName(e.Name) != nil {
			continue
		}
		d.byName[e.Name] = len(d.ents)
		d.ents = append(d.ents, e)
	}
	d.fetched = true
	d.n.fsys.pre.read(d.dir, list, ok && d.n.fsys.dirs.TakePrefetched(d.dir))
	return 0
}

func (d *dirHandle) Readdirent(ctx context.Context) (*fuse.DirEntry, syscall.Errno) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if errno := d.fetch(ctx); errno != 0 {
		return nil, errno
	}
	if d.pos >= len(d.ents) {
		return nil, 0
	}
	e := d.ents[d.pos]
	d.pos++
	d.cur = fuse.DirEntry{Name: e.Name, Mode: fileType(e.Attr), Ino: d.ino(e.Name), Off: uint64(d.pos)}
	return &d.cur, 0
}

// ino numbers an entry the way Lookup will.
func (d *dirHandle) ino(name string) uint64 {
	switch name {
	case ".":
		return d.n.StableAttr().Ino
	case "..":
		if _, parent := d.n.Parent(); parent != nil {
			return parent.StableAttr().Ino
		}
		return rootIno
	}
	if ch := d.n.GetChild(name); ch != nil {
		return ch.StableAttr().Ino
	}
	return d.n.fsys.inos.get(join(d.dir, name))
}

// Lookup answers READDIRPLUS from the listing just read.
func (d *dirHandle) Lookup(ctx context.Context, name string, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	d.mu.Lock()
	i, ok := d.byName[name]
	var a remote.Attr
	if ok {
		a = d.ents[i].Attr
	}
	d.mu.Unlock()
	if !ok {
		return d.n.Lookup(ctx, name, out)
	}
	p := join(d.dir, name)
	if ch := d.n.GetChild(name); ch != nil && ch.Operations().(*node).writing() {
		return d.n.Lookup(ctx, name, out)
	}
	if d.n.fsys.opts.FollowSymlinks && isLink(a) {
		var err error
		if a, err = d.n.fsys.ns.Stat(ctx, p); err != nil {
			return nil, d.n.fsys.toErrno(err)
		}
	}
	return d.n.newChild(ctx, name, p, a, 0, out), 0
}

func (d *dirHandle) Seekdir(ctx context.Context, off uint64) syscall.Errno {
	d.mu.Lock()
	defer d.mu.Unlock()
	if off == 0 {
		// Rewinding reads the directory afresh.
		d.fetched = false
	}
	d.pos = int(off)
	return 0
}

func (d *dirHandle) Releasedir(ctx context.Context, flags uint32) {}
