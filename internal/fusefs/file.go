package fusefs

import (
	"context"
	"errors"
	"io"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"

	"sshfsm/internal/cache"
	"sshfsm/internal/contentcache"
	"sshfsm/internal/interrupt"
	"sshfsm/internal/remote"
)

// handle is one open regular file. A writable handle opens the remote
// file at once; a lazy read-only handle opens it at its first read (see
// lazy.go).
type handle struct {
	n *node
	w *writer // nil for read-only handles

	// mu guards the fields below. It is a leaf, like node.mu.
	mu       sync.Mutex
	f        remote.File // nil until a lazy handle's first read
	flight   *openFlight // the lazy open in progress, if any
	released bool
	// ce is the disk cache's entry of the version opened (content.go),
	// nil when reads go to the server; ck names that version.
	ce *contentcache.Entry
	ck versionKey
	// from names the branch whose file f is (namespace.OpenFrom): bytes
	// read through f are stored in ce only when it is ck's branch.
	from string
	// lateCache: a lazy open of a file whose data the kernel keeps; the
	// first read looks for version ck in the disk cache (attachCache),
	// as an eager open would have at open. attachMu is held while the
	// lookup runs (taken before mu).
	attachMu  sync.Mutex
	lateCache atomic.Bool
	// ra fetches the blocks ahead of a reader in order (fetchahead.go).
	ra readAhead
	// io is the kernel's I/O mode the handle is counted under
	// (passthrough.go); guarded by filesys.pt.mu once the handle is made.
	io ioMode
}

var (
	_ = (fs.NodeOpener)((*node)(nil))
	_ = (fs.FileReader)((*handle)(nil))
	_ = (fs.FileWriter)((*handle)(nil))
	_ = (fs.FileFlusher)((*handle)(nil))
	_ = (fs.FileFsyncer)((*handle)(nil))
	_ = (fs.FileReleaser)((*handle)(nil))
	_ = (fs.FileAllocater)((*handle)(nil))
)

// remoteFlags converts open(2) flags for the remote. O_APPEND is left to
// the kernel, which sends every append at the current end of file: writes
// travel in parallel and only explicit offsets keep them in order.
func remoteFlags(flags uint32) int {
	fl := int(flags) & (os.O_RDONLY | os.O_WRONLY | os.O_RDWR | os.O_CREATE | os.O_EXCL | os.O_TRUNC)
	return fl
}

func writable(flags uint32) bool {
	return flags&syscall.O_ACCMODE != syscall.O_RDONLY || flags&syscall.O_TRUNC != 0
}

// Open opens the remote file, or defers that to the first read (lazy.go);
// the data the kernel cached from a previous open is kept when size and
// mtime have not changed since. A read-only handle has nothing to flush:
// the kernel is told not to send FLUSH at each close(2) of it (a round
// trip per file that tools such as grep open).
func (n *node) Open(ctx context.Context, flags uint32) (fs.FileHandle, uint32, syscall.Errno) {
	// Bounded as a whole: a look at the attributes, a second writer's
	// queued changes, an O_TRUNC's wait for queued writes and the OPEN
	// share one timeout.
	ctx, req := n.changing(ctx)
	defer req.End()
	m, errno := n.fsys.pt.enter(n, flags)
	if errno != 0 {
		return nil, 0, errno
	}
	h, fl, errno := n.open(ctx, flags)
	if errno != 0 {
		n.fsys.pt.leave(n, m)
		return nil, 0, errno
	}
	if !writable(flags) {
		fl |= fuse.FOPEN_NOFLUSH
	}
	return n.fsys.pt.wrap(h, m), fl, 0
}

func (n *node) open(ctx context.Context, flags uint32) (*handle, uint32, syscall.Errno) {
	if writable(flags) {
		if errno := n.fsys.readOnly(); errno != 0 {
			return nil, 0, errno
		}
	}
	p, ok := n.path()
	if !ok {
		return nil, 0, syscall.ENOENT
	}
	if !writable(flags) {
		n.fsys.sib.opened(p)
		if n.fsys.checksOpens() && !n.writing() {
			return n.openChecked(ctx, p, flags)
		}
		if n.attachesLate() {
			if h, fl, ok := n.openKept(p, flags, true); ok {
				return h, fl, 0
			}
		}
		if h, fl, errno := n.openCached(ctx, p, flags); h != nil || errno != 0 {
			return h, fl, errno
		}
		if h, fl, ok := n.openKept(p, flags, false); ok {
			return h, fl, 0
		}
	}
	if writable(flags) {
		// A second writer: the attributes are no longer only the
		// mount's to know (known.go). The first handle's queued
		// changes are its own to report.
		_ = n.inexact(ctx)
	}
	if flags&syscall.O_TRUNC != 0 {
		if err := n.pending.wait(ctx); err != nil {
			return nil, 0, n.fsys.toErrno(err)
		}
	}
	f, err := n.fsys.ns.Open(ctx, p, remoteFlags(flags), 0)
	if err != nil {
		return nil, 0, n.fsys.toErrno(err)
	}
	h := n.newHandle(f, flags)
	if writable(flags) {
		n.fsys.dirs.Forget(split(p))
		n.fsys.forgetContent(p)
	}
	return h, n.openFlags(flags), 0
}

func (n *node) newHandle(f remote.File, flags uint32) *handle {
	h := &handle{n: n, f: f}
	if writable(flags) {
		h.w = newWriter(f, n, writeWindow)
		n.addWriter(1)
	}
	return h
}

// openFlags chooses the caching mode of a new handle.
func (n *node) openFlags(flags uint32) uint32 {
	fl, _ := n.cacheFlags(flags, false)
	return fl
}

// cacheFlags chooses the caching mode of a new handle. With ifKept it
// does so only if the kernel may still hold the file's data from a
// previous open and keeps it; otherwise it records nothing and reports
// false.
func (n *node) cacheFlags(flags uint32, ifKept bool) (uint32, bool) {
	o := n.fsys.opts
	if o.DirectIO {
		return fuse.FOPEN_DIRECT_IO | fuse.FOPEN_PARALLEL_DIRECT_WRITES, !ifKept
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	same := n.opened && n.openSize == n.lastSize && n.openTime.Equal(n.lastTime) && !n.racyKeptLocked()
	keep := (o.KernelCache || same) && flags&syscall.O_TRUNC == 0
	if ifKept && !(keep && n.opened) {
		return 0, false
	}
	n.opened, n.openSize, n.openTime, n.openAt = true, n.lastSize, n.lastTime, time.Now()
	if keep {
		return fuse.FOPEN_KEEP_CACHE, true
	}
	return 0, true
}

// Read waits for the node's writes in flight, so a reader sees them.
func (h *handle) Read(ctx context.Context, dest []byte, off int64) (fuse.ReadResult, syscall.Errno) {
	ctx, req := interrupt.Filter(ctx, h.n.fsys)
	defer req.End()
	if err := h.n.pending.wait(ctx); err != nil {
		return nil, h.n.fsys.toErrno(err)
	}
	h.attachOnce(ctx)
	if e := h.cached(); e != nil {
		if r, ok, errno := h.readCached(ctx, e, dest, off); ok || errno != 0 {
			return r, errno
		}
	}
	f, err := h.file(ctx)
	if err != nil {
		return nil, h.n.fsys.toErrno(err)
	}
	if br, ok := f.(remote.BufferReader); ok {
		return h.readLent(ctx, br, f, dest, off)
	}
	return h.readInto(ctx, f, dest, 0, off)
}

// readLent answers with the buffer the remote read into, without a copy;
// a short read that is not the end of the file is completed into dest.
func (h *handle) readLent(ctx context.Context, br remote.BufferReader, f remote.File, dest []byte, off int64) (fuse.ReadResult, syscall.Errno) {
	data, release, err := br.ReadAtBuf(ctx, len(dest), off)
	switch {
	case errors.Is(err, io.EOF) || (err == nil && len(data) == len(dest)):
		return &lentResult{data: data, release: release}, 0
	case err != nil:
		return nil, h.n.fsys.toErrno(err)
	}
	got := copy(dest, data)
	release()
	return h.readInto(ctx, f, dest, got, off)
}

// readInto fills dest from its byte got on, until the end of the file.
func (h *handle) readInto(ctx context.Context, f remote.File, dest []byte, got int, off int64) (fuse.ReadResult, syscall.Errno) {
	for got < len(dest) {
		k, err := f.ReadAt(ctx, dest[got:], off+int64(got))
		got += k
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, h.n.fsys.toErrno(err)
		}
		if k == 0 {
			break
		}
	}
	return fuse.ReadResultData(dest[:got]), 0
}

// lentResult is read data in a buffer lent by the remote, handed back once
// the reply has been written to the kernel.
type lentResult struct {
	data    []byte
	release func()
	once    sync.Once
	vec     [1][]byte
}

func (r *lentResult) Bytes([]byte) ([]byte, fuse.Status) { return r.data, fuse.OK }
func (r *lentResult) Size() int                          { return len(r.data) }
func (r *lentResult) Done()                              { r.once.Do(r.release) }

// Slices makes the reply a vectored write of the lent buffer itself; the
// other paths copy the data out first or release it before the write.
func (r *lentResult) Slices() ([][]byte, fuse.Status) {
	r.vec[0] = r.data
	return r.vec[:], fuse.OK
}

func (h *handle) Write(ctx context.Context, data []byte, off int64) (uint32, syscall.Errno) {
	ctx, req := interrupt.Filter(ctx, h.n.fsys)
	defer req.End()
	if h.w == nil {
		return 0, syscall.EBADF
	}
	if err := h.w.write(ctx, data, off); err != nil {
		return 0, h.n.fsys.toErrno(err)
	}
	h.n.wrote(h, uint64(off)+uint64(len(data)))
	return uint32(len(data)), 0
}

// Flush runs at every close(2) of a descriptor: it reports the first
// write error.
//
// Flush and Fsync wait for writes already sent whatever signal the caller
// gets (within the remote's timeout): answering EINTR would tell the
// application that its data may be lost when it is on its way, and runtimes
// such as Go's signal their threads all the time.
func (h *handle) Flush(ctx context.Context) syscall.Errno {
	ctx, req := interrupt.Filter(ctx, h.n.fsys)
	defer req.End()
	if h.w == nil {
		return 0
	}
	clean, err := h.w.wait(context.WithoutCancel(ctx))
	h.forgetListing(!clean)
	return h.n.fsys.toErrno(err)
}

// forgetListing marks the file's entry in its parent's cached listing as
// stale after its size or times changed, or records its attributes there
// when the mount knows them (known.go). changed says the handle wrote
// since it was last waited for: the server's report of that is an echo.
func (h *handle) forgetListing(changed bool) {
	p, ok := h.n.path()
	if !ok {
		return
	}
	if changed {
		h.n.fsys.own.changed(p)
	}
	dir, name := split(p)
	if a, ok := h.n.exactAttr(); ok {
		h.n.fsys.dirs.Set(dir, name, a)
		return
	}
	h.n.fsys.dirs.Forget(dir, name)
}

// Fsync syncs the remote file; a lazy handle not opened yet has nothing
// to sync.
func (h *handle) Fsync(ctx context.Context, flags uint32) syscall.Errno {
	ctx, req := interrupt.Filter(ctx, h.n.fsys)
	defer req.End()
	ctx = context.WithoutCancel(ctx)
	if h.w != nil {
		if _, err := h.w.wait(ctx); err != nil {
			return h.n.fsys.toErrno(err)
		}
	}
	f := h.opened()
	if f == nil {
		return 0
	}
	return h.n.fsys.toErrno(f.Sync(ctx))
}

// Release closes the remote handle, if one was opened. When no write
// happened since the last flush, which reported every error, or when the
// writes failed because the remote did not answer, the close runs in the
// background.
func (h *handle) Release(ctx context.Context) syscall.Errno {
	h.mu.Lock()
	h.released = true
	f := h.f
	h.mu.Unlock()
	h.stopReadAhead()
	h.n.dropLazy(h)
	h.dropCache()
	h.n.fsys.pt.release(h)
	if h.w == nil {
		if f != nil {
			go h.n.fsys.closeRemote(f)
		}
		return 0
	}
	clean, err := h.w.wait(context.Background())
	h.forgetListing(!clean)
	h.n.released(h)
	h.n.addWriter(-1)
	if (clean && err == nil) || cache.Unanswered(err) {
		go h.n.fsys.closeRemote(f)
		if err != nil {
			h.n.fsys.log.Warn("write error at release", "err", err)
		}
		return 0
	}
	cerr := f.Close(context.Background())
	if err == nil {
		err = cerr
	}
	if err != nil {
		// The kernel does not pass release errors on; flush and fsync
		// reported the queued ones.
		h.n.fsys.log.Warn("write error at release", "err", err)
	}
	return 0
}

func (f *filesys) closeRemote(rf remote.File) {
	if err := rf.Close(context.Background()); err != nil {
		f.log.Warn("close", "err", err)
	}
}

// truncate changes the size through the handle after its queued writes.
func (h *handle) truncate(ctx context.Context, size uint64) error {
	if err := h.n.pending.wait(ctx); err != nil {
		return err
	}
	if h.w != nil {
		if _, err := h.w.wait(ctx); err != nil {
			return err
		}
	}
	f, err := h.file(ctx)
	if err != nil {
		return err
	}
	return f.Truncate(ctx, int64(size))
}

// Allocate supports growing a file (mode 0) and FALLOC_FL_KEEP_SIZE. SFTP
// cannot reserve space: the file grows sparse.
func (h *handle) Allocate(ctx context.Context, off, size uint64, mode uint32) syscall.Errno {
	ctx, req := h.n.changing(ctx) // a stat, then a truncate: one timeout
	defer req.End()
	const keepSize = 1
	switch {
	case h.w == nil:
		return syscall.EBADF
	case mode == keepSize:
		return 0
	case mode != 0:
		return syscall.EOPNOTSUPP
	}
	// The size compared with is the one after the writes already queued:
	// a size read before them would let the growing truncate below cut
	// what they wrote (fallocate never shrinks a file).
	if err := h.n.pending.wait(ctx); err != nil {
		return h.n.fsys.toErrno(err)
	}
	if _, err := h.w.wait(ctx); err != nil {
		return h.n.fsys.toErrno(err)
	}
	a, err := h.opened().Stat(ctx)
	if err != nil {
		return h.n.fsys.toErrno(err)
	}
	if end := off + size; end > a.Size && end > h.n.pending.end() {
		_ = h.n.inexact(ctx) // queued changes are h's to report
		if err := h.truncate(ctx, end); err != nil {
			return h.n.fsys.toErrno(err)
		}
	}
	return 0
}
