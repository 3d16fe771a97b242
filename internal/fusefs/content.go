package fusefs

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/hanwen/go-fuse/v2/fuse"

	"sshfsm/internal/cache"
	"sshfsm/internal/contentcache"
	"sshfsm/internal/namespace"
	"sshfsm/internal/remote"
	"sshfsm/internal/transport"
)

// File contents on local disk (Options.Content, package contentcache).
// A read-only open of a regular file picks the cached version of the file
// named by its path, size and mtime, and reads it from local disk; the
// blocks it lacks are fetched from the server once, stored, and served
// from there on, by this and later mounts. The version is settled at open
// as the coherence mode says (contentVersion): size and mtime unchanged
// means content unchanged, as for NFS's close-to-open consistency and the
// kernel's page cache kept across opens.
//
// What a version can miss: SFTP reports mtimes in whole seconds, so a
// file rewritten within the second it was last written, keeping its size,
// would keep its version. Files modified less than racyWindow ago are
// therefore neither read from nor stored in the disk cache ("racy", as
// git calls its index entries of the same second). A file replaced on the
// server by another of the same size and mtime (a rename over it, a copy
// keeping times) is not noticed, as by the kernel's own cache. What the
// mount itself changes drops the path's cached versions (forgetContent).

// racyWindow: files whose mtime is this recent are not cached. It covers
// the second of SFTP's mtimes plus a second of clock difference between
// the server and this machine.
const racyWindow = 2 * time.Second

// contentVersion returns the attributes a read-only open of the node at
// p is served with from the disk cache: in immutable mode any known ones,
// in auto mode fresh ones (within AttrTimeout, or fetched now), in strict
// mode always fetched now. ok is false when the file is not cacheable.
func (n *node) contentVersion(ctx context.Context, p string) (a remote.Attr, ok bool, errno syscall.Errno) {
	f := n.fsys
	// direct_io promises that every read goes to the server.
	if f.opts.Content == nil || f.opts.DirectIO || n.writing() {
		return a, false, 0
	}
	switch f.opts.Mode {
	case cache.Immutable:
		n.mu.Lock()
		a, ok = n.last, !n.lastAt.IsZero()
		n.mu.Unlock()
	case cache.Auto:
		a, ok = n.freshAttr(p)
	}
	if !ok {
		var err error
		if a, err = f.ns.Lstat(ctx, p); err != nil {
			return a, false, f.toErrno(err)
		}
		n.remember(a)
	}
	// A size the disk cache cannot hold (a hostile or broken server's)
	// is read uncached.
	if fileType(a) != syscall.S_IFREG || time.Since(a.Mtime) < racyWindow || a.Size > contentcache.MaxFileSize {
		return a, false, 0
	}
	return a, true, 0
}

// versionKey identifies one version of one file among the fetches in
// progress and in the disk cache.
type versionKey struct {
	size   int64
	mtime  int64  // unix nanoseconds
	branch string // namespace.Origin: which branch served it
}

func contentKey(a remote.Attr, branch string) versionKey {
	return versionKey{int64(a.Size), a.Mtime.UnixNano(), branch}
}

// version returns the version a of p as the branch serving p now has it:
// a file of another branch of the same size and mtime is another file.
func (f *filesys) version(ctx context.Context, p string, a remote.Attr) (versionKey, error) {
	b, err := namespace.Origin(ctx, f.ns, p)
	return contentKey(a, b), err
}

// cacheKey names version v of p in the disk cache.
func (f *filesys) cacheKey(p string, v versionKey) contentcache.Key {
	return contentcache.Key{Host: f.opts.ContentID, Branch: v.branch, Path: p, Size: v.size, Mtime: time.Unix(0, v.mtime)}
}

// contentEntry returns the disk cache's entry of the version v of p.
func (f *filesys) contentEntry(p string, v versionKey) *contentcache.Entry {
	e, err := f.opts.Content.Entry(f.cacheKey(p, v))
	if errors.Is(err, contentcache.ErrTooLarge) {
		f.log.Debug("disk cache: file read uncached", "path", p, "err", err)
		return nil
	}
	if err != nil {
		f.log.Warn("disk cache", "path", p, "err", err)
		return nil
	}
	return e
}

// forgetContent drops the cached versions of p after the mount changed it.
func (f *filesys) forgetContent(p string) {
	if f.opts.Content != nil {
		f.opts.Content.Forget(f.opts.ContentID, p)
	}
}

// openCached opens a handle served from the disk cache, or returns nil.
// When the cache holds the whole file, or a fetch under way will store it
// whole (fillsWhole), the remote file is opened only if a read needs it
// (a block bad, that fetch failed). Otherwise it is opened now, as lazy.go
// explains for first opens: a caught SIGINT or SIGTERM interrupts a
// blocked open(2), while the kernel's readahead READs wait for fatal
// signals only. It is opened now too when the remote user might not read
// the file, so that open(2) fails as it should.
func (n *node) openCached(ctx context.Context, p string, flags uint32) (*handle, uint32, syscall.Errno) {
	a, ok, errno := n.contentVersion(ctx, p)
	if errno != 0 || !ok {
		return nil, 0, errno
	}
	v, err := n.fsys.version(ctx, p, a)
	if err != nil {
		return nil, 0, 0 // the open, made uncached, meets the same error
	}
	e := n.fsys.contentEntry(p, v)
	if e == nil {
		return nil, 0, 0
	}
	return n.openEntry(ctx, p, flags, a, v, e, nil, "")
}

// openEntry opens a handle served from e, the disk cache's entry of
// version v (attributes a) of p, as openCached says. f, if not nil, is the
// remote file opened already, from the branch named from: the handle takes
// it.
func (n *node) openEntry(ctx context.Context, p string, flags uint32, a remote.Attr, v versionKey, e *contentcache.Entry, f remote.File, from string) (*handle, uint32, syscall.Errno) {
	if n.fsys.worthFinding(e, n.fsys.cacheKey(p, v)) {
		n.findStored(ctx, p, v)
	}
	h := &handle{n: n, ce: e, ck: v}
	if f == nil && (!e.Complete() && !n.fsys.fillsWhole(p, h.ck) || !n.fsys.mayRead(a)) {
		var err error
		if f, from, err = namespace.OpenFrom(ctx, n.fsys.ns, p, remoteFlags(flags), 0); err != nil {
			e.Release()
			return nil, 0, n.fsys.toErrno(err)
		}
	}
	if f != nil {
		h.f, h.from = f, from
		if from != v.branch {
			// Another branch serves the file since its version was
			// learnt: the handle reads that branch's file, uncached.
			h.ce = nil
			e.Release()
		}
	} else {
		n.addLazy(h)
	}
	return h, n.openFlags(flags), 0
}

// findStoredMax bounds the files an open asks a digest of: the server
// reads the whole file for it while the open waits (256 MiB: well under a
// second at sha256sum's speed).
const findStoredMax = 256 << 20

// worthFinding reports whether an open of the version of key k, whose
// entry is e, should ask the server for the file's digest (findStored):
// the file is not too large, the cache stores content of exactly its size
// from the same host and branch, e lacks
// content and none was asked for it yet. The checks that need no entry
// lock come first: they fail for nearly every open (files of a block or
// less never pass MayHold).
func (f *filesys) worthFinding(e *contentcache.Entry, k contentcache.Key) bool {
	if k.Size > findStoredMax || !f.opts.Content.MayHold(k) || e.Complete() {
		return false
	}
	_, known := e.Digest()
	return !known
}

// findStored asks the server for the digest of version v of p, a file
// the disk cache lacks although it stores content of that exact size: a
// copy of a file it holds from the same host and branch (another revision
// directory) is then served from the stored content, which learnDigest gives
// to the version's entry, instead of being fetched. The file's bytes
// never cross the link (sha256sum runs on the server). Hosts without
// commands, and failures, leave the entry as it was.
func (n *node) findStored(ctx context.Context, p string, v versionKey) {
	sum, err := n.serverDigest(ctx, p)
	if err != nil {
		if !errors.Is(err, errNoDigester) && !errors.Is(err, transport.ErrNoExec) {
			n.fsys.log.Debug("digest on the server failed", "path", p, "err", err)
		}
		return
	}
	n.fsys.learnDigest(ctx, p, v, sum)
}

// readCached answers a read from the disk cache entry e, fetching the
// blocks it lacks first. ok is false when the cache cannot answer: the
// file is not the version the handle was opened with any more (the handle
// then stops using the cache), or blocks failed their checks or could not
// be stored; the caller reads from the server.
func (h *handle) readCached(ctx context.Context, e *contentcache.Entry, dest []byte, off int64) (fuse.ReadResult, bool, syscall.Errno) {
	h.readAhead(e, off, int64(len(dest)))
	if n, ok, err := e.ReadAt(dest, off); ok {
		return cachedResult(dest, n, err)
	}
	// A range another fetch had under way may end in a block it did not
	// cover (a read across the end of a block read ahead): the second
	// round fetches what is still missing.
	for range 2 {
		missing := e.Missing(off, int64(len(dest)))
		for _, r := range missing {
			// The read is all missing (the usual first read): it is
			// answered from what is fetched, which is stored after.
			answers := len(missing) == 1 && r.Off <= off && r.Off+r.Len >= min(off+int64(len(dest)), h.ck.size)
			data, release, err := h.fetch(ctx, e, r, answers)
			if err != nil {
				if errors.Is(err, errChanged) {
					h.n.fsys.log.Info("file changed on the server while open; reading it uncached", "err", err)
					h.dropCache()
					return nil, false, 0
				}
				return nil, false, h.n.fsys.toErrno(err)
			}
			if answers && data != nil {
				if r.Off == 0 && h.ck.size <= siblingMax {
					h.readSmall()
				}
				n := copy(dest, data[min(off-r.Off, int64(len(data))):])
				release()
				return fuse.ReadResultData(dest[:n]), true, 0
			}
			release()
		}
		if n, ok, err := e.ReadAt(dest, off); ok {
			return cachedResult(dest, n, err)
		}
	}
	return nil, false, 0
}

func cachedResult(dest []byte, n int, err error) (fuse.ReadResult, bool, syscall.Errno) {
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, false, 0
	}
	return fuse.ReadResultData(dest[:n]), true, 0
}

// errChanged: the server's file is not the version being cached.
var errChanged = errors.New("file size changed")

// fetch reads the byte range r of the file from the server and stores
// it in e, returning the bytes, to be released once used. Reads of the
// same range of the same version wait for one fetch and its store (and get
// no bytes: they read the entry); if it fails for a reason of its own (its
// reader was interrupted, say), they fetch themselves. later: the caller
// answers its read from the bytes returned, so they may be stored after
// fetch returns (a file created on the local disk can take a millisecond).
func (h *handle) fetch(ctx context.Context, e *contentcache.Entry, r contentcache.Range, later bool) ([]byte, func(), error) {
	k := h.fillKey(r)
	for range 2 {
		fl, first := h.n.fsys.fills.start(k)
		if first {
			return h.fetchAs(ctx, e, r, k, fl, later)
		}
		select {
		case <-fl.done:
		case <-ctx.Done():
			return nil, nil, ctx.Err()
		}
		if fl.err == nil || errors.Is(fl.err, errChanged) {
			return nil, func() {}, fl.err
		}
	}
	data, release, err := h.readRange(ctx, r)
	if err == nil {
		h.store(e, data, r.Off)
	}
	return data, release, err
}

// fetchAs fetches r as the fill fl registered under k, stores it in e, and
// ends fl once stored: in the background when later and the disk cache
// takes it (the bytes are released when both the caller and the store are
// done with them).
func (h *handle) fetchAs(ctx context.Context, e *contentcache.Entry, r contentcache.Range, k fillKey, fl *fill, later bool) ([]byte, func(), error) {
	data, release, err := h.readRange(ctx, r)
	if err != nil {
		h.n.fsys.fills.end(k, fl, err)
		return nil, nil, err
	}
	if later {
		var uses atomic.Int32
		uses.Store(2)
		done := func() {
			if uses.Add(-1) == 0 {
				release()
			}
		}
		if e.FillAsync(data, r.Off, func(err error) {
			h.n.fsys.logFill(err)
			h.n.fsys.fills.end(k, fl, nil)
			done()
		}) {
			return data, done, nil
		}
	}
	h.store(e, data, r.Off)
	h.n.fsys.fills.end(k, fl, nil)
	return data, release, nil
}

// store puts data, the bytes at off, in e.
func (h *handle) store(e *contentcache.Entry, data []byte, off int64) {
	h.n.fsys.logFill(e.Fill(data, off))
}

// logFill notes a failed store. The disk cache is best effort: the bytes
// fetched answer the read, or the server does.
func (f *filesys) logFill(err error) {
	if err != nil {
		f.log.Warn("disk cache fill", "err", err)
	}
}

func (h *handle) fillKey(r contentcache.Range) fillKey {
	p, _ := h.n.path()
	return fillKey{p, h.ck, r.Off}
}

// readRange reads the byte range r from the server into a buffer the
// remote lends when it can (no copy) and returns it with its release.
func (h *handle) readRange(ctx context.Context, r contentcache.Range) ([]byte, func(), error) {
	f, err := h.file(ctx)
	if err != nil {
		return nil, nil, err
	}
	if from := h.openedFrom(); from != h.ck.branch {
		// The file was opened from another branch than the version's (a
		// union failed over or back): its bytes are not that version's.
		return nil, nil, fmt.Errorf("%w: opened from branch %q, not %q", errChanged, from, h.ck.branch)
	}
	var buf []byte
	got := 0
	release := func() {}
	if br, ok := f.(remote.BufferReader); ok {
		data, rel, err := br.ReadAtBuf(ctx, int(r.Len), r.Off)
		if err != nil && !errors.Is(err, io.EOF) {
			return nil, nil, err
		}
		if int64(len(data)) == r.Len {
			buf, got, release = data, len(data), rel
		} else { // short: completed below, or the file shrank
			buf = make([]byte, r.Len)
			got = copy(buf, data)
			rel()
		}
	} else {
		buf = make([]byte, r.Len)
	}
	k, err := readFull(ctx, f, buf[got:], r.Off+int64(got))
	if err != nil {
		return nil, nil, err
	}
	got += k
	// A version's blocks are all there up to its size: a short read
	// means the file shrank.
	if got < len(buf) {
		release()
		return nil, nil, fmt.Errorf("%w: %d bytes at %d, expected %d", errChanged, got, r.Off, r.Len)
	}
	if err := h.checkOpened(ctx, f); err != nil {
		release()
		return nil, nil, err
	}
	return buf, release, nil
}

// checkOpened fails with errChanged when the file f was another version
// than the handle's when opened: its attributes then (fresh ones, when
// the version came from a listing kept a while) say another size or
// mtime, so its bytes are not that version's. The attributes arrive with
// the open, ahead of the read's answer: no round trip is added.
func (h *handle) checkOpened(ctx context.Context, f remote.File) error {
	o, ok := f.(remote.OpenedFile)
	if !ok {
		return nil
	}
	a, ok := o.OpenedAttr(ctx)
	if !ok {
		return nil
	}
	// Listings and stats may differ below the second (SFTP has seconds).
	if int64(a.Size) != h.ck.size || a.Mtime.Unix() != time.Unix(0, h.ck.mtime).Unix() {
		return fmt.Errorf("%w: opened at %d bytes, mtime %v; the version is %d bytes, mtime %v",
			errChanged, a.Size, a.Mtime, h.ck.size, time.Unix(0, h.ck.mtime))
	}
	return nil
}

// readFull reads into b at off until b is full or the file ends, and
// returns how much it read.
func readFull(ctx context.Context, f remote.File, b []byte, off int64) (int, error) {
	got := 0
	for got < len(b) {
		k, err := f.ReadAt(ctx, b[got:], off+int64(got))
		got += k
		if errors.Is(err, io.EOF) || (err == nil && k == 0) {
			break
		}
		if err != nil {
			return got, err
		}
	}
	return got, nil
}

// openedFrom names the branch whose file the handle opened.
func (h *handle) openedFrom() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.from
}

// cached returns the handle's disk cache entry, nil if it has none.
func (h *handle) cached() *contentcache.Entry {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.ce
}

// dropCache stops the handle's use of the disk cache.
func (h *handle) dropCache() {
	h.mu.Lock()
	e := h.ce
	h.ce = nil
	h.mu.Unlock()
	if e != nil {
		e.Release()
	}
}

// fills are the block fetches in progress, mount-wide.
type fills struct {
	mu sync.Mutex // guards m
	m  map[fillKey]*fill
}

type fillKey struct {
	path    string
	version versionKey
	off     int64
}

type fill struct {
	done chan struct{}
	err  error
}

// fillsWhole reports whether a fetch under way stores version v of p
// whole: a file of at most one block, being fetched.
func (f *filesys) fillsWhole(p string, v versionKey) bool {
	if v.size > f.opts.Content.BlockSize() {
		return false
	}
	f.fills.mu.Lock()
	defer f.fills.mu.Unlock()
	return f.fills.m[fillKey{p, v, 0}] != nil
}

func (fs *fills) start(k fillKey) (*fill, bool) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	if fl := fs.m[k]; fl != nil {
		return fl, false
	}
	if fs.m == nil {
		fs.m = map[fillKey]*fill{}
	}
	fl := &fill{done: make(chan struct{})}
	fs.m[k] = fl
	return fl, true
}

// settle waits until no fetch of version v of p is under way: until
// what its readers were answered is stored too, or ctx ends.
func (fs *fills) settle(ctx context.Context, p string, v versionKey) {
	for {
		var fl *fill
		fs.mu.Lock()
		for k, f := range fs.m {
			if k.path == p && k.version == v {
				fl = f
				break
			}
		}
		fs.mu.Unlock()
		if fl == nil {
			return
		}
		select {
		case <-fl.done:
		case <-ctx.Done():
			return
		}
	}
}

func (fs *fills) end(k fillKey, fl *fill, err error) {
	fs.mu.Lock()
	delete(fs.m, k)
	fs.mu.Unlock()
	fl.err = err
	close(fl.done)
}
