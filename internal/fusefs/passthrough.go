package fusefs

import (
	"context"
	"os"
	"sync"
	"sync/atomic"
	"syscall"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
	"golang.org/x/sys/unix"

	"sshfsm/internal/cache"
	"sshfsm/internal/interrupt"
)

// FUSE passthrough of files whose contents are all in the disk cache.
//
// In cache=immutable mode, a read-only open of a file whose cached
// version is complete and verified during this boot (Entry.Verified)
// hands the cache's data file to the kernel, which then serves read(2)
// and mmap from it directly: no READ reaches the daemon. It needs
// CAP_SYS_ADMIN (a daemon run as root); probe finds out once per mount.
//
// The kernel keeps one I/O mode per inode. While a descriptor is open in
// passthrough, any open not in passthrough fails (EIO), and a
// passthrough open fails while a descriptor is open in the page-cache
// mode; go-fuse registers the backing file per inode and gives its id to
// every later open whose handle can take it. So, per node:
//   - a writable open while a descriptor is in passthrough fails with
//     ETXTBSY here, before reaching the server (the tree was declared
//     immutable; writes must go to the server, never to the cache file);
//   - every read-only open is a ptHandle, so it shares the passthrough of
//     a descriptor already open that way;
//   - a ptHandle asks for passthrough only while no descriptor of the
//     node is in page-cache mode (a writer, or a reader opened before the
//     entry was complete or verified).
//
// auto and strict modes never pass through: a file may change on the
// server while open, and then reads must reach the daemon to notice it;
// and a writer appears at any time, whose open would fail.
//
// direct_io turns passthrough off: it promises every read reaches the
// server.
type passthrough struct {
	on atomic.Bool // registering a backing file works on this mount

	mu    sync.Mutex           // guards nodes and verifying
	nodes map[*node]*ioCounts  // nodes with open handles counted here
	verif map[versionPath]bool // background verifications in progress
	sem   chan struct{}        // one verification at a time
}

// ioCounts are a node's open handles by the kernel's I/O mode.
type ioCounts struct {
	pt     int // in passthrough, or about to ask for it
	cached int // in page-cache mode
}

// ioMode is the mode a handle was counted under.
type ioMode uint8

const (
	ioNone   ioMode = iota // not counted: passthrough is off for the mount
	ioPT                   // passthrough (or asking for it)
	ioCached               // page cache
)

type versionPath struct {
	path string
	v    versionKey
}

// probe registers a throwaway backing file to learn whether the kernel
// lets this process use passthrough. A memfd is a plain in-memory file
// that any kernel with passthrough accepts as backing.
func (pt *passthrough) probe(srv *fuse.Server, o Options) {
	if o.Content == nil || o.DirectIO || o.Mode != cache.Immutable {
		return
	}
	fd, err := unix.MemfdCreate("sshfsm-passthrough-probe", unix.MFD_CLOEXEC)
	if err != nil {
		return
	}
	defer unix.Close(fd)
	id, errno := srv.RegisterBackingFd(&fuse.BackingMap{Fd: int32(fd)})
	if errno != 0 {
		return
	}
	_ = srv.UnregisterBackingFd(id)
	pt.on.Store(true)
}

// enter counts an open of n before it is made. A writable open while a
// descriptor of n is in passthrough fails with ETXTBSY.
func (pt *passthrough) enter(n *node, flags uint32) (ioMode, syscall.Errno) {
	if !pt.on.Load() {
		return ioNone, 0
	}
	pt.mu.Lock()
	defer pt.mu.Unlock()
	c := pt.nodes[n]
	if c == nil {
		c = &ioCounts{}
		if pt.nodes == nil {
			pt.nodes = map[*node]*ioCounts{}
		}
		pt.nodes[n] = c
	}
	if !writable(flags) {
		c.pt++
		return ioPT, 0
	}
	if c.pt > 0 {
		pt.dropIfIdle(n, c)
		return ioNone, syscall.ETXTBSY
	}
	c.cached++
	return ioCached, 0
}

// leave uncounts an open counted under m that failed.
func (pt *passthrough) leave(n *node, m ioMode) {
	pt.mu.Lock()
	defer pt.mu.Unlock()
	pt.uncount(n, m)
}

// release uncounts a handle being released.
func (pt *passthrough) release(h *handle) {
	pt.mu.Lock()
	defer pt.mu.Unlock()
	pt.uncount(h.n, h.io)
	h.io = ioNone
}

func (pt *passthrough) uncount(n *node, m ioMode) {
	if m == ioNone {
		return
	}
	c := pt.nodes[n]
	if m == ioPT {
		c.pt--
	} else {
		c.cached--
	}
	pt.dropIfIdle(n, c)
}

func (pt *passthrough) dropIfIdle(n *node, c *ioCounts) {
	if c.pt == 0 && c.cached == 0 {
		delete(pt.nodes, n)
	}
}

// toCached moves a handle counted in passthrough to the page-cache mode.
func (pt *passthrough) toCached(n *node) {
	c := pt.nodes[n]
	c.pt--
	c.cached++
}

// ptHandle is a read-only handle that may be in passthrough.
type ptHandle struct {
	*handle
	vf *os.File // the verified data file handed to the kernel, nil if none
}

// handleOf is the handle behind a file handle the kernel passed back.
func handleOf(fh fs.FileHandle) *handle {
	switch h := fh.(type) {
	case *handle:
		return h
	case *ptHandle:
		return h.handle
	}
	return nil
}

var (
	_ = (fs.FilePassthroughFder)((*ptHandle)(nil))
	_ = (fs.FileReader)((*ptHandle)(nil))
	_ = (fs.FileReleaser)((*ptHandle)(nil))
)

// wrap makes the handle of an open counted under m. A read-only handle
// whose disk cache entry is verified carries the data file; one that is
// complete but not verified has it verified in the background, for the
// next open.
func (pt *passthrough) wrap(h *handle, m ioMode) fs.FileHandle {
	h.io = m
	if m != ioPT {
		return h
	}
	ph := &ptHandle{handle: h}
	if e := h.cached(); e != nil && e.Complete() {
		if f, ok := e.Verified(); ok {
			ph.vf = f
		} else {
			pt.verifyLater(h.n, h.ck)
		}
	}
	return ph
}

// PassthroughFd is asked by go-fuse when no backing file is registered
// for the node: the handle enters passthrough only if it has the
// verified file and no descriptor of the node is in page-cache mode.
func (ph *ptHandle) PassthroughFd() (int, bool) {
	pt := &ph.n.fsys.pt
	pt.mu.Lock()
	defer pt.mu.Unlock()
	if ph.vf != nil && ph.io == ioPT && pt.nodes[ph.n].cached == 0 {
		return int(ph.vf.Fd()), true
	}
	if ph.io == ioPT {
		pt.toCached(ph.n)
		ph.io = ioCached
	}
	return 0, false
}

// Read reaches a ptHandle only when it is not in passthrough. One counted
// in passthrough means go-fuse's registration failed, which turns
// passthrough off for the mount: the handle is in page-cache mode.
func (ph *ptHandle) Read(ctx context.Context, dest []byte, off int64) (fuse.ReadResult, syscall.Errno) {
	ctx, req := interrupt.Filter(ctx, ph.n.fsys)
	defer req.End()
	pt := &ph.n.fsys.pt
	pt.mu.Lock()
	if ph.io == ioPT {
		pt.toCached(ph.n)
		ph.io = ioCached
		if pt.on.Swap(false) {
			ph.n.fsys.log.Warn("FUSE passthrough refused by the kernel; reads go through the daemon")
		}
	}
	pt.mu.Unlock()
	return ph.handle.Read(ctx, dest, off)
}

// Release closes the data file: the kernel holds its own reference to a
// registered backing file, which go-fuse unregisters at the node's last
// release.
func (ph *ptHandle) Release(ctx context.Context) syscall.Errno {
	ctx, req := interrupt.Filter(ctx, ph.n.fsys)
	defer req.End()
	errno := ph.handle.Release(ctx)
	if ph.vf != nil {
		_ = ph.vf.Close()
	}
	return errno
}

// verifyLater checks every block of the complete entry of n's version v
// in the background, one entry at a time, so that a later open can pass
// it through. An open never waits for it: a large file takes long.
func (pt *passthrough) verifyLater(n *node, v versionKey) {
	p, ok := n.path()
	if !ok {
		return
	}
	k := versionPath{p, v}
	pt.mu.Lock()
	if pt.verif[k] {
		pt.mu.Unlock()
		return
	}
	if pt.verif == nil {
		pt.verif = map[versionPath]bool{}
		pt.sem = make(chan struct{}, 1)
	}
	pt.verif[k] = true
	pt.mu.Unlock()
	go pt.verify(n.fsys, k)
}

func (pt *passthrough) verify(f *filesys, k versionPath) {
	defer func() {
		pt.mu.Lock()
		delete(pt.verif, k)
		pt.mu.Unlock()
	}()
	pt.sem <- struct{}{}
	defer func() { <-pt.sem }()
	e, err := f.opts.Content.Entry(f.cacheKey(k.path, k.v))
	if err != nil {
		return
	}
	defer e.Release()
	if err := e.VerifyAll(context.Background()); err != nil {
		f.log.Debug("disk cache: verifying for passthrough", "path", k.path, "err", err)
	}
}
