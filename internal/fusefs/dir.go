package fusefs

import (
	"context"
	"sync"
	"syscall"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"

	"sshfsm/internal/interrupt"
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
	inos    []uint64          // inode number of ents[i] once returned, else 0
	// noFiles: READDIRPLUS carries the entries of subdirectories only
	// (prefetch.go, filesLeftOut).
	noFiles bool
	byName  map[string]int // index into ents; built by the first Lookup that needs it
	pos     int            // next index to return
	cur     fuse.DirEntry  // storage for the entry returned last
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
	list, ok, err := d.n.fsys.dirs.Get(ctx, d.dir, d.n.fsys.readDir)
	if err != nil {
		return d.n.fsys.toErrno(err)
	}
	d.ents = make([]remote.DirEntry, 0, len(list)+2)
	d.ents = append(d.ents,
		remote.DirEntry{Name: ".", Attr: remote.Attr{Mode: syscall.S_IFDIR}},
		remote.DirEntry{Name: "..", Attr: remote.Attr{Mode: syscall.S_IFDIR}})
	for _, e := range list {
		if e.Name == "." || e.Name == ".." || namespace.ValidName(e.Name) != nil {
			continue
		}
		d.ents = append(d.ents, e)
	}
	d.inos = make([]uint64, len(d.ents))
	d.byName = nil
	d.fetched = true
	walking := d.n.fsys.pre.read(d.dir, list, ok && d.n.fsys.dirs.TakePrefetched(d.dir))
	d.noFiles = d.n.fsys.pre.leavesFilesOut(d.dir, walking)
	return 0
}

func (d *dirHandle) Readdirent(ctx context.Context) (*fuse.DirEntry, syscall.Errno) {
	ctx, req := interrupt.FilterWithin(ctx, d.n.fsys, d.n.fsys.opts.RequestTimeout)
	defer req.End()
	d.mu.Lock()
	defer d.mu.Unlock()
	if errno := d.fetch(ctx); errno != 0 {
		return nil, errno
	}
	if d.pos >= len(d.ents) {
		return nil, 0
	}
	e := d.ents[d.pos]
	ino := d.inos[d.pos]
	if ino == 0 {
		var table bool
		if ino, table = d.ino(e.Name, e.Attr); table {
			d.inos[d.pos] = ino
		}
	}
	d.cur = fuse.DirEntry{Name: e.Name, Mode: fileType(e.Attr), Ino: ino, Off: uint64(d.pos + 1)}
	d.pos++
	return &d.cur, 0
}

// ino numbers an entry the way Lookup will. table says the number came
// from the inode table (no node holds the name yet): the one Lookup would
// take from there too, so it is kept for Lookup.
func (d *dirHandle) ino(name string, a remote.Attr) (ino uint64, table bool) {
	switch name {
	case ".":
		return d.n.StableAttr().Ino, false
	case "..":
		if _, parent := d.n.Parent(); parent != nil {
			return parent.StableAttr().Ino, false
		}
		return rootIno, false
	}
	if ch := d.n.GetChild(name); ch != nil {
		return ch.StableAttr().Ino, false
	}
	return d.n.fsys.inoOf(join(d.dir, name), a), true
}

// entry returns the attributes of name in the listing just read and the
// inode number Readdirent took from the table for it (0 if none); noFiles
// says files are left out. go-fuse asks for the entry Readdirent returned
// last; others (a reply that overflowed, a read the kernel repeats) are
// found by name.
func (d *dirHandle) entry(name string) (a remote.Attr, ino uint64, noFiles, ok bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	i := d.pos - 1
	if i < 0 || i >= len(d.ents) || d.ents[i].Name != name {
		if d.byName == nil {
			d.byName = make(map[string]int, len(d.ents))
			for j := 2; j < len(d.ents); j++ {
				d.byName[d.ents[j].Name] = j
			}
		}
		if i, ok = d.byName[name]; !ok {
			return a, 0, false, false
		}
	}
	return d.ents[i].Attr, d.inos[i], d.noFiles, true
}

// Lookup answers READDIRPLUS from the listing just read. An entry left
// out (an error here) has node id 0: the kernel shows the name and its
// type, and looks the name up when it is used.
func (d *dirHandle) Lookup(ctx context.Context, name string, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	ctx, req := interrupt.FilterWithin(ctx, d.n.fsys, d.n.fsys.opts.RequestTimeout)
	defer req.End()
	a, ino, noFiles, ok := d.entry(name)
	if !ok || name == "." || name == ".." {
		return d.n.lookup(ctx, name, out)
	}
	if noFiles && fileType(a) != syscall.S_IFDIR {
		d.n.filesLeftOut.Store(true)
		return nil, syscall.ENOENT
	}
	p := join(d.dir, name)
	if ch := d.n.GetChild(name); (ch != nil && ch.Operations().(*node).writing()) || d.n.fsys.inos.hardLinked(p, ino) {
		return d.n.lookup(ctx, name, out)
	}
	if d.n.fsys.opts.FollowSymlinks && isLink(a) {
		var err error
		if a, err = d.n.fsys.ns.Stat(ctx, p); err != nil {
			return nil, d.n.fsys.toErrno(err)
		}
	}
	return d.n.newChildIno(ctx, name, p, ino, a, 0, out), 0
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
