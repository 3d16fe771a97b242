package fusefs

import (
	"context"
	"errors"
	"io/fs"
	"syscall"
	"time"

	"sshfsm/internal/cache"
	"sshfsm/internal/contentcache"
	"sshfsm/internal/namespace"
	"sshfsm/internal/remote"
)

// Close-to-open consistency (cache=auto and strict), as NFS gives it:
// every read-only open(2) asks the server for the file's attributes, one
// round trip (the LSTAT travels beside the OPEN when the open needs the
// remote file anyway), whatever the caches hold. When size or mtime
// differ from what the kernel was told or caches data of, then before
// open returns: the node and the parent's cached listing take the new
// attributes, the disk cache drops its versions of the path, and the
// kernel drops its attributes and cached data of the file
// (NotifyContent). The open then picks its version (kept pages, the disk
// cache's entry) by the attributes just fetched. A read never combines
// one version's size with another version's bytes: the kernel asks for
// the size again before it reads past the one it holds, and the data it
// holds of the old version is gone.
//
// Lazy opens (lazy.go) and opens served from the disk cache keep sending
// no OPEN; only the LSTAT is new for them. cache=immutable asks nothing
// (its documented promise: the tree never changes).
//
// The limit: SFTP gives mtimes in whole seconds, so a rewrite that keeps
// the size within the second of the version read before has the same
// attributes. Data cached while its mtime was that recent (racyWindow,
// by the local clock) is therefore neither kept by the kernel across
// opens (racyKeptLocked) nor stored in the disk cache; a file rewritten
// later, keeping both its size and an mtime set back to the old second
// (touch -r, a copy keeping times), is not noticed by an open. A new
// mount catches even that (the server's ctime, persist.go).

// checksOpens reports whether read-only opens ask the server.
func (f *filesys) checksOpens() bool {
	return f.opts.Mode != cache.Immutable
}

// openChecked opens the regular file at p read-only after checking its
// version with the server.
func (n *node) openChecked(ctx context.Context, p string, flags uint32) (*handle, uint32, syscall.Errno) {
	// The entry of the version known: if the kernel keeps no data and
	// the disk cache lacks it, the open needs the remote file, and the
	// OPEN is sent beside the LSTAT.
	last, known := n.knownAttr()
	kept := n.keptData()
	var e *contentcache.Entry
	var lastV versionKey
	if known && !kept && n.cacheable(last) {
		if v, err := n.fsys.version(ctx, p, last); err == nil {
			lastV, e = v, n.fsys.contentEntry(p, v)
		}
	}
	needFile := !kept && (e == nil || !e.Complete() && !n.fsys.fillsWhole(p, lastV))
	a, f, from, errno := n.statForOpen(ctx, p, flags, needFile)
	if errno != 0 {
		if e != nil {
			e.Release()
		}
		return nil, 0, errno
	}
	n.checkVersion(p, a)
	v, verr := n.fsys.version(ctx, p, a)
	if e != nil && (verr != nil || v != lastV) {
		e.Release()
		e = nil
	}
	if e == nil && n.cacheable(a) {
		if n.attachesLate() {
			if h, fl, ok := n.openKeptAt(a, flags, true); ok {
				return h.take(f, from), fl, 0
			}
		}
		if verr == nil {
			e = n.fsys.contentEntry(p, v)
		}
	}
	if e != nil {
		return n.openEntry(ctx, p, flags, a, v, e, f, from)
	}
	if h, fl, ok := n.openKeptAt(a, flags, false); ok {
		return h.take(f, from), fl, 0
	}
	if f == nil {
		var err error
		if f, err = n.fsys.ns.Open(ctx, p, remoteFlags(flags), 0); err != nil {
			return nil, 0, n.fsys.toErrno(err)
		}
	}
	return n.newHandle(f, flags), n.openFlags(flags), 0
}

// knownAttr returns the node's newest attributes, if any.
func (n *node) knownAttr() (remote.Attr, bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.last, n.last.Mode != 0
}

// keptData reports whether the kernel may hold data of the file from a
// previous open.
func (n *node) keptData() bool {
	if n.fsys.opts.DirectIO {
		return false
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.opened
}

// cacheable reports whether version a of the node may be served from the
// disk cache: a regular file not modified within racyWindow, no writer
// open, a disk cache and no direct_io.
func (n *node) cacheable(a remote.Attr) bool {
	o := n.fsys.opts
	return o.Content != nil && !o.DirectIO && fileType(a) == syscall.S_IFREG &&
		time.Since(a.Mtime) >= racyWindow && !n.writing()
}

// racyKeptLocked reports whether the data the kernel keeps was read while
// its version's mtime was within racyWindow of the local time: a rewrite
// of the same size in the same second would not show in the attributes.
// n.mu is held.
func (n *node) racyKeptLocked() bool {
	return n.fsys.checksOpens() && n.openAt.Sub(n.openTime) < racyWindow
}

// statForOpen fetches the attributes of p for an open and, with file,
// opens the remote file at the same time, naming the branch it opened it
// from. The file is opened only when both succeed.
func (n *node) statForOpen(ctx context.Context, p string, flags uint32, file bool) (remote.Attr, remote.File, string, syscall.Errno) {
	stat := n.fsys.ns.Lstat
	if n.fsys.opts.FollowSymlinks {
		stat = n.fsys.ns.Stat
	}
	if !file {
		a, err := stat(ctx, p)
		return a, nil, "", n.openStatErr(p, err)
	}
	type opened struct {
		f    remote.File
		from string
		err  error
	}
	ch := make(chan opened, 1)
	go func() {
		f, from, err := namespace.OpenFrom(ctx, n.fsys.ns, p, remoteFlags(flags), 0)
		ch <- opened{f, from, err}
	}()
	a, err := stat(ctx, p)
	o := <-ch
	if err == nil {
		err = o.err
	}
	if err != nil {
		if o.f != nil {
			go n.fsys.closeRemote(o.f)
		}
		return a, nil, "", n.openStatErr(p, err)
	}
	return a, o.f, o.from, 0
}

// openStatErr translates the error of an open's check; a file gone from
// the server is forgotten by the parent's listing.
func (n *node) openStatErr(p string, err error) syscall.Errno {
	if err == nil {
		return 0
	}
	if errors.Is(err, fs.ErrNotExist) {
		n.fsys.dirs.Forget(split(p))
	}
	return n.fsys.toErrno(err)
}

// checkVersion compares the attributes a just fetched for an open of p
// with those the kernel was told and caches data of, and when size or
// mtime differ drops what the kernel, the disk cache and the listing hold
// of the old version. The node and the listing take a in any case. Data
// the kernel read while its mtime was racy is dropped too: the same
// attributes may stand for other bytes.
func (n *node) checkVersion(p string, a remote.Attr) {
	n.mu.Lock()
	changed := n.lastSize != a.Size || !n.lastTime.Equal(a.Mtime) ||
		n.opened && (n.openSize != a.Size || !n.openTime.Equal(a.Mtime))
	racy := n.opened && n.racyKeptLocked()
	n.mu.Unlock()
	n.remember(a)
	dir, name := split(p)
	n.fsys.dirs.Refresh(dir, name, a)
	if changed {
		n.fsys.forgetContent(p)
	}
	if changed || racy {
		n.NotifyContent(0, 0)
	}
}

// take gives a lazy handle the remote file f an open fetched already (nil:
// none), from the branch named from; the handle reads it instead of
// opening the file at its first read.
func (h *handle) take(f remote.File, from string) *handle {
	if f == nil {
		return h
	}
	h.mu.Lock()
	h.f, h.from = f, from
	h.lateCache.Store(false)
	h.mu.Unlock()
	h.n.dropLazy(h)
	return h
}
