package fusefs

import (
	"context"
	"syscall"
	"time"

	"sshfsm/internal/cache"
	"sshfsm/internal/remote"
)

// A file this mount creates has attributes the mount knows exactly for as
// long as it keeps the file open for writing: the create's reply gave
// them, and every change since went through the mount — writes (which
// grow the size and move the mtime to the server's clock), attribute
// changes (known as sent), truncation (which ends the knowledge). Changes
// others make meanwhile need not be seen before the next open
// (close-to-open consistency, closetoopen.go), and the change watcher
// takes the events of a file open for writing for the echo of the
// mount's own changes (watch.go). So, while a writable handle from the
// create is open:
//   - the attributes are reported without asking the server, except the
//     mtime after a write not followed by a set mtime, which is asked;
//   - mode, owner and times set on the file are queued behind the
//     handle's writes and sent, merged into one request, when the handle
//     is flushed (writer.setAttrs) instead of being waited for: their
//     errors are reported by the next write, flush, fsync or close of
//     the handle, the way write errors are.
//
// The knowledge ends when the creating handle is released, when the size
// is changed other than by a write, or when a second writable handle
// opens; the changes still queued are sent first.

// knownAttrs is a node's exact attributes (guarded by node.mu).
type knownAttrs struct {
	exact      bool    // last holds the file's attributes
	mtimeStale bool    // written since: the server's mtime is not known
	writer     *handle // the handle that created the file
}

// created starts the knowledge of a file h just created, with a.
func (n *node) created(h *handle) {
	n.mu.Lock()
	n.known = knownAttrs{exact: true, writer: h}
	n.mu.Unlock()
}

// inexact ends the knowledge, after sending the attribute changes queued
// on its handle: a change made otherwise comes after them, as it would
// have. It returns their error (the handle keeps it too).
func (n *node) inexact(ctx context.Context) error {
	n.mu.Lock()
	w := n.known.writer
	n.known = knownAttrs{}
	n.mu.Unlock()
	if w == nil || w.w == nil {
		return nil
	}
	return w.w.flushAttrs(ctx)
}

// released ends the knowledge when its handle goes.
func (n *node) released(h *handle) {
	n.mu.Lock()
	if n.known.writer == h {
		n.known = knownAttrs{}
	}
	n.mu.Unlock()
}

// wrote records a write by h ending at end.
func (n *node) wrote(h *handle, end uint64) {
	n.mu.Lock()
	defer n.mu.Unlock()
	switch {
	case !n.known.exact:
	case n.known.writer != h || n.writers > 1:
		n.known = knownAttrs{}
	default:
		n.last.Size = max(n.last.Size, end)
		n.lastSize = n.last.Size
		n.known.mtimeStale = true
	}
}

// exactAttr returns the node's attributes when the mount knows them all.
func (n *node) exactAttr() (remote.Attr, bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.last, n.known.exact && !n.known.mtimeStale
}

// queueFor returns the writer that attribute changes to the node may be
// queued on, with sa's half-given pairs completed from the known
// attributes; nil when they must go to the server now.
func (n *node) queueFor(sa *remote.SetAttr) *writer {
	n.mu.Lock()
	defer n.mu.Unlock()
	k := n.known
	if !k.exact || k.writer == nil || k.writer.w == nil || n.writers > 1 || sa.Size != nil {
		return nil
	}
	fillHalves(sa, n.last)
	return k.writer.w
}

// applyKnown records changes the server was told (or will be, queued),
// in the known attributes and in the parent's cached listing entry when
// there is one; SFTP carries whole seconds.
func (n *node) applyKnown(dir, name string, sa remote.SetAttr) {
	n.mu.Lock()
	if n.known.exact {
		setAttrOn(&n.last, sa)
		n.lastTime = n.last.Mtime
		if sa.Mtime != nil {
			n.known.mtimeStale = false
		}
	}
	n.mu.Unlock()
	if a, ok := n.fsys.dirs.Peek(dir, name); ok == cache.Hit {
		setAttrOn(&a, sa)
		n.fsys.dirs.Set(dir, name, a)
	}
}

// setAttrOn applies sa's mode, owner and times to a.
func setAttrOn(a *remote.Attr, sa remote.SetAttr) {
	if sa.Mode != nil {
		a.Mode = a.Mode&syscall.S_IFMT | *sa.Mode&07777
	}
	if sa.UID != nil {
		a.UID = *sa.UID
	}
	if sa.GID != nil {
		a.GID = *sa.GID
	}
	if sa.Atime != nil {
		a.Atime = sa.Atime.Truncate(time.Second)
	}
	if sa.Mtime != nil {
		a.Mtime = sa.Mtime.Truncate(time.Second)
	}
	// Any change of attributes is a change of the inode: where the server's
	// change time is shown (remote.Attr.HasIdentity), it moves to now, as
	// the server's does (remote.KeepIdentity, for what SFTP answers later).
	if now := time.Now(); a.HasIdentity() && now.After(a.Ctime) {
		a.Ctime = now
	}
}

// overlayQueued applies the attribute changes queued on the node's writer
// and not yet answered to a, just fetched from the server.
func (n *node) overlayQueued(a *remote.Attr) {
	n.mu.Lock()
	w := n.known.writer
	n.mu.Unlock()
	if w == nil || w.w == nil {
		return
	}
	if sa, ok := w.w.queuedAttrs(); ok {
		setAttrOn(a, sa)
	}
}

// writtenAttr returns the attributes of the node, open for writing at p:
// the known ones, else the server's with the changes queued behind the
// writes applied.
func (n *node) writtenAttr(ctx context.Context, p string) (remote.Attr, error) {
	if a, ok := n.exactAttr(); ok {
		return a, nil
	}
	a, err := n.fsys.ns.Lstat(ctx, p)
	if err == nil {
		n.overlayQueued(&a)
	}
	return a, err
}
