package fusefs

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"syscall"
	"time"

	"sshfsm/internal/cache"
	"sshfsm/internal/namespace"
	"sshfsm/internal/remote"
)

// Lazy opens. A read-only open(2) of a file whose data the kernel keeps
// from a previous open (FOPEN_KEEP_CACHE: size and mtime unchanged) sends
// no OPEN: the remote file is opened by the first READ the page cache
// cannot serve, usually none. Outside immutable mode the open still asks
// for the file's attributes (closetoopen.go); in immutable mode, with
// attributes known, it contacts the server not at all. Reading a tree
// again then costs one round trip per file at most, where OPEN, FSTAT and
// CLOSE would cost three. A first open, whose data must be read, stays
// eager: the OPEN costs the same round trip there, and a caught SIGINT
// or SIGTERM interrupts a blocked open(2), while the kernel's readahead
// READs wait for fatal signals only.
//
// What changes for the caller:
//   - A file removed on the server after its attributes were fetched
//     opens; data the kernel still holds is served, as any cached data
//     is until the cache timeouts pass, and the first read that reaches
//     the server fails with ESTALE (as on NFS). Its entry in the cached
//     listing is dropped, so the next lookup asks again.
//   - A file whose mode and owner say the remote user might not read it
//     opens eagerly, so that EACCES comes from open(2) as usual. Only
//     permissions the attributes cannot show (ACLs, MAC) fail at the
//     first read instead.
//   - A name unlinked or renamed over through this mount opens its lazy
//     handles first, so they keep reading the old file like eager ones.
// Writable opens are always eager: O_TRUNC, O_CREAT and O_EXCL need the
// server's answer.

// openFlight is one lazy open in progress; the reads that arrive
// meanwhile wait for it instead of opening the file again.
type openFlight struct {
	done chan struct{}
	err  error
	// abandoned: the open failed because its reader was interrupted;
	// the waiting reads open again.
	abandoned bool
}

// lazyAttr returns the attributes a read-only open of the node at p may
// defer the remote open on, as far as they tell (cacheFlags decides the
// rest): they are fresh, it is a regular file the remote user may read,
// and no writable handle is open on it.
func (n *node) lazyAttr(p string) (remote.Attr, bool) {
	if n.writing() {
		return remote.Attr{}, false
	}
	a, ok := n.freshAttr(p)
	return a, ok && fileType(a) == syscall.S_IFREG && n.fsys.mayRead(a)
}

// openKept opens lazily a file whose data the kernel keeps from a
// previous open of the same version (a tree read again: grep, a build):
// the server is not asked at open. With late, the disk cache is not asked
// either: the first READ the page cache cannot serve looks for that
// version there (attachCache). ok is false when the open must be made as
// usual.
func (n *node) openKept(p string, flags uint32, late bool) (*handle, uint32, bool) {
	a, ok := n.lazyAttr(p)
	if !ok {
		return nil, 0, false
	}
	return n.openKeptAt(a, flags, late)
}

// openKeptAt is openKept for a file whose attributes a were just fetched
// or are fresh.
func (n *node) openKeptAt(a remote.Attr, flags uint32, late bool) (*handle, uint32, bool) {
	if n.writing() || fileType(a) != syscall.S_IFREG || !n.fsys.mayRead(a) {
		return nil, 0, false
	}
	fl, ok := n.cacheFlags(flags, true)
	if !ok {
		return nil, 0, false
	}
	h := &handle{n: n, ck: contentKey(a, "")} // its branch is learnt by attachCache
	h.lateCache.Store(late)
	n.addLazy(h)
	return h, fl, true
}

// attachesLate reports whether kept opens leave the disk cache to their
// first read: with a disk cache, but not in strict mode (every open asks
// the server, contentVersion), with direct_io, or with passthrough, which
// needs the entry at open.
func (n *node) attachesLate() bool {
	o := n.fsys.opts
	return o.Content != nil && !o.DirectIO && o.Mode != cache.Strict && !n.fsys.pt.on.Load()
}

// attachCache gives a handle of openKept the disk cache's entry of the
// version it was opened at, the one whose data the kernel keeps: a stored
// copy of that version serves it whole, as it would have served an eager
// open, even if the file changed on the server since. A version not
// (wholly) stored is filled only while it is still the file's current
// one; otherwise the handle reads from the server. Nothing is attached
// once the handle's remote file was opened (openLazies, before its name
// went away: it reads that file) or its name is gone. It reports whether
// the outcome is settled; a failure to learn the current version (an
// interrupted read, a host reconnecting) is not, and the next read tries
// again.
func (h *handle) attachCache(ctx context.Context) bool {
	p, ok := h.n.path()
	if !ok || h.opened() != nil || time.Since(time.Unix(0, h.ck.mtime)) < racyWindow {
		return true
	}
	v, err := h.n.fsys.version(ctx, p, remote.Attr{Size: uint64(h.ck.size), Mtime: time.Unix(0, h.ck.mtime)})
	if err != nil {
		return false
	}
	e := h.n.fsys.contentEntry(p, v)
	if e == nil {
		return true
	}
	if !e.Complete() {
		cur, ok, errno := h.n.contentVersion(ctx, p)
		if errno != 0 {
			e.Release()
			return false
		}
		if !ok || contentKey(cur, v.branch) != v {
			e.Release()
			return true
		}
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.released || h.f != nil {
		e.Release()
		return true
	}
	h.ce, h.ck = e, v
	return true
}

// attachOnce runs attachCache until its outcome is settled; concurrent
// reads wait for the one running it.
func (h *handle) attachOnce(ctx context.Context) {
	if !h.lateCache.Load() {
		return
	}
	h.attachMu.Lock()
	defer h.attachMu.Unlock()
	if h.lateCache.Load() && h.attachCache(ctx) {
		h.lateCache.Store(false)
	}
}

// freshAttr returns the node's attributes from the parent's fresh
// listing, else the ones fetched within AttrTimeout.
func (n *node) freshAttr(p string) (remote.Attr, bool) {
	if a, st := n.fsys.dirs.Peek(split(p)); st == cache.Hit && !isLink(a) {
		n.remember(a)
		return a, true
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.lastAt.IsZero() || time.Since(n.lastAt) >= n.fsys.opts.AttrTimeout {
		return remote.Attr{}, false
	}
	return n.last, true
}

// mayRead reports whether the remote user surely may read a file with
// attributes a, judged by its mode bits and owner.
func (f *filesys) mayRead(a remote.Attr) bool {
	const r = 0o444
	m := a.Mode
	if m&r == r {
		return true
	}
	o := f.opts
	switch {
	case !o.RemoteIDsKnown:
		return false
	case o.RemoteUID == 0:
		return true
	case a.UID == o.RemoteUID:
		return m&0o400 != 0
	case a.GID == o.RemoteGID:
		return m&0o040 != 0
	}
	// The remote user's other groups are unknown: the group bit may be
	// the one that applies.
	return m&0o044 == 0o044
}

// opened returns the remote file, nil if a lazy handle has not opened
// it yet.
func (h *handle) opened() remote.File {
	if h == nil {
		return nil
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.f
}

// file returns the remote file, opening it on a lazy handle's first call.
// Concurrent first calls share one open.
func (h *handle) file(ctx context.Context) (remote.File, error) {
	for {
		h.mu.Lock()
		if h.f != nil {
			f := h.f
			h.mu.Unlock()
			return f, nil
		}
		if h.released {
			h.mu.Unlock()
			return nil, os.ErrClosed
		}
		if fl := h.flight; fl != nil {
			h.mu.Unlock()
			select {
			case <-fl.done:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
			if fl.err != nil && !fl.abandoned {
				return nil, fl.err
			}
			continue
		}
		fl := &openFlight{done: make(chan struct{})}
		h.flight = fl
		h.mu.Unlock()

		f, from, err := h.openRemote(ctx)
		h.mu.Lock()
		h.flight = nil
		fl.err, fl.abandoned = err, err != nil && ctx.Err() != nil
		late := err == nil && h.released
		if err == nil && !late {
			h.f, h.from = f, from
		}
		close(fl.done)
		h.mu.Unlock()
		switch {
		case late:
			go h.n.fsys.closeRemote(f)
			return nil, os.ErrClosed
		case err == nil:
			h.n.dropLazy(h)
		}
		return f, err
	}
}

// openRemote opens the node's file read-only, and names the branch it
// opened it from. A file gone since its attributes were fetched is ESTALE.
func (h *handle) openRemote(ctx context.Context) (remote.File, string, error) {
	p, ok := h.n.path()
	if !ok {
		return nil, "", fmt.Errorf("open of an unlinked file: %w", syscall.ESTALE)
	}
	f, from, err := namespace.OpenFrom(ctx, h.n.fsys.ns, p, os.O_RDONLY, 0)
	if errors.Is(err, fs.ErrNotExist) {
		h.n.fsys.dirs.Forget(split(p))
		return nil, "", fmt.Errorf("%v (removed on the server after the open): %w", err, syscall.ESTALE)
	}
	return f, from, err
}

// addLazy records a lazy handle that has not opened its file yet.
func (n *node) addLazy(h *handle) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.lazies == nil {
		n.lazies = map[*handle]struct{}{}
	}
	n.lazies[h] = struct{}{}
}

func (n *node) dropLazy(h *handle) {
	n.mu.Lock()
	defer n.mu.Unlock()
	delete(n.lazies, h)
}

// openLazies opens the remote files of the node's lazy handles before the
// node's name goes away, so that they read the file as eager handles do.
// Only an error of a remote that did not answer is returned: the removal
// would wait as long. Other failures are left for the reads to report.
func (n *node) openLazies(ctx context.Context) error {
	n.mu.Lock()
	hs := make([]*handle, 0, len(n.lazies))
	for h := range n.lazies {
		hs = append(hs, h)
	}
	n.mu.Unlock()
	for _, h := range hs {
		if _, err := h.file(ctx); err != nil && cache.Unanswered(err) {
			return err
		}
	}
	return nil
}
