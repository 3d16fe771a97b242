package fusefs

import (
	"context"
	"sync"
	"sync/atomic"

	"sshfsm/internal/remote"
)

// hookRemote counts calls and lets a test replace some of them.
type hookRemote struct {
	remote.Remote
	readDirs, lstats, stats, opens, reads atomic.Int64
	listed                                sync.Map // path → *atomic.Int64: READDIRs of that path
	opened                                sync.Map // path → *atomic.Int64: OPENs of that path

	readsMu sync.Mutex
	readLog []readCall // every read of a file, in order

	// fail, when set and returning an error, makes the call op ("readdir",
	// "lstat", "stat", "open") of path p fail with it without reaching
	// the remote; context.DeadlineExceeded stands for a remote that did
	// not answer within the timeout.
	fail    func(op, p string) error
	readDir func(ctx context.Context, p string) ([]remote.DirEntry, error)
	lstat   func(ctx context.Context, p string) (remote.Attr, error)
	writeAt func(ctx context.Context, p []byte, off int64) (int, error)
	// beforeRead, when set (at any time), runs before every read of a
	// file, with its path.
	beforeRead atomic.Pointer[func(p string)]
}

func (h *hookRemote) countListing(p string) {
	c, _ := h.listed.LoadOrStore(p, new(atomic.Int64))
	c.(*atomic.Int64).Add(1)
}

// listings returns how many READDIRs of path p were sent.
func (h *hookRemote) listings(p string) int64 {
	if c, ok := h.listed.Load(p); ok {
		return c.(*atomic.Int64).Load()
	}
	return 0
}

// opensOf returns how many OPENs of path p were sent.
func (h *hookRemote) opensOf(p string) int64 {
	if c, ok := h.opened.Load(p); ok {
		return c.(*atomic.Int64).Load()
	}
	return 0
}

// readCall is one read of a file on the remote.
type readCall struct {
	path string
	off  int64
	size int
}

// readsOf returns the reads of path p sent so far.
func (h *hookRemote) readsOf(p string) []readCall {
	h.readsMu.Lock()
	defer h.readsMu.Unlock()
	var out []readCall
	for _, r := range h.readLog {
		if r.path == p {
			out = append(out, r)
		}
	}
	return out
}

func (h *hookRemote) logRead(p string, off int64, size int) {
	h.reads.Add(1)
	h.readsMu.Lock()
	h.readLog = append(h.readLog, readCall{p, off, size})
	h.readsMu.Unlock()
}

func (h *hookRemote) failure(op, p string) error {
	if h.fail == nil {
		return nil
	}
	return h.fail(op, p)
}

// wrap is a mountWith wrapper; hooks must be set before mounting.
func (h *hookRemote) wrap(r remote.Remote) remote.Remote {
	h.Remote = r
	return h
}

func (h *hookRemote) ReadDir(ctx context.Context, p string) ([]remote.DirEntry, error) {
	h.readDirs.Add(1)
	h.countListing(p)
	if err := h.failure("readdir", p); err != nil {
		return nil, err
	}
	if h.readDir != nil {
		return h.readDir(ctx, p)
	}
	return h.Remote.ReadDir(ctx, p)
}

func (h *hookRemote) Lstat(ctx context.Context, p string) (remote.Attr, error) {
	h.lstats.Add(1)
	if err := h.failure("lstat", p); err != nil {
		return remote.Attr{}, err
	}
	if h.lstat != nil {
		return h.lstat(ctx, p)
	}
	return h.Remote.Lstat(ctx, p)
}

func (h *hookRemote) Stat(ctx context.Context, p string) (remote.Attr, error) {
	h.stats.Add(1)
	if err := h.failure("stat", p); err != nil {
		return remote.Attr{}, err
	}
	return h.Remote.Stat(ctx, p)
}

func (h *hookRemote) Open(ctx context.Context, p string, flags int, perm uint32) (remote.File, error) {
	h.opens.Add(1)
	c, _ := h.opened.LoadOrStore(p, new(atomic.Int64))
	c.(*atomic.Int64).Add(1)
	if err := h.failure("open", p); err != nil {
		return nil, err
	}
	f, err := h.Remote.Open(ctx, p, flags, perm)
	if err != nil {
		return nil, err
	}
	return &hookFile{File: f, h: h, path: p}, nil
}

type hookFile struct {
	remote.File
	h    *hookRemote
	path string
}

func (f *hookFile) ReadAt(ctx context.Context, p []byte, off int64) (int, error) {
	f.h.logRead(f.path, off, len(p))
	if hook := f.h.beforeRead.Load(); hook != nil {
		(*hook)(f.path)
	}
	return f.File.ReadAt(ctx, p, off)
}

// ReadAtBuf lends the remote's buffer when the remote can, as the
// transport does, and reads into a new one otherwise.
func (f *hookFile) ReadAtBuf(ctx context.Context, size int, off int64) ([]byte, func(), error) {
	f.h.logRead(f.path, off, size)
	if hook := f.h.beforeRead.Load(); hook != nil {
		(*hook)(f.path)
	}
	if br, ok := f.File.(remote.BufferReader); ok {
		return br.ReadAtBuf(ctx, size, off)
	}
	b := make([]byte, size)
	n, err := f.File.ReadAt(ctx, b, off)
	return b[:n], func() {}, err
}

// OpenedAttr passes on the remote's, when it has them.
func (f *hookFile) OpenedAttr(ctx context.Context) (remote.Attr, bool) {
	if o, ok := f.File.(remote.OpenedFile); ok {
		return o.OpenedAttr(ctx)
	}
	return remote.Attr{}, false
}

func (f *hookFile) WriteAt(ctx context.Context, p []byte, off int64) (int, error) {
	if f.h.writeAt != nil {
		return f.h.writeAt(ctx, p, off)
	}
	return f.File.WriteAt(ctx, p, off)
}
