package transport

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"syscall"
	"time"

	"github.com/pkg/sftp"

	"sshfsm/internal/remote"
)

// file is an open remote file. It remembers how it was opened so that it
// survives its channel: when the channel of its handle dies, the next call
// re-opens the path on a live channel and continues, under this rule:
//
//   - Read-only files: the size and mtime seen at open must be unchanged
//     after re-opening, else the file fails with EIO for good (its data
//     would mix two versions). If the channel died before they were
//     learned and before any read was answered, the re-opened file's
//     become the reference.
//   - Writable files: the expected size (size at open or after the last
//     truncate, extended by acknowledged writes, of every writable handle
//     of this host on the file: see fileLog) must be found after
//     re-opening; the remote may be larger only up to the end of the
//     furthest write sent (it may have landed unacknowledged). Otherwise
//     the file fails with EIO for good: the next write, fsync or close
//     reports it. Then every change acknowledged since the last
//     successful fsync is made again on the new handle, in order, before
//     any other request uses it, and a write not acknowledged before the
//     drop is sent again (pwrite is idempotent).
type file struct {
	h     *Host
	r     hostRemote // the tree it was opened in
	name  string     // tree path at open, for messages
	abs   string     // current path (Host.logsMu; names.go)
	gone  bool       // unlinked or renamed over here (Host.logsMu)
	flags int        // open flags for re-opening: without O_CREATE, O_EXCL, O_TRUNC
	write bool

	// created: the attributes once this open created the file (createdOK),
	// set before Open returns and never changed (CreatedAttr).
	created   remote.Attr
	createdOK bool

	sem chan struct{} // capacity 1: serialises re-opens; taken before mu

	// mu guards the fields below; lock order: sem, then mu, then Host.mu.
	mu      sync.Mutex
	primary *channel // channel of the handle that serves writes and small reads
	handles map[*channel]*sftp.File
	raws    map[*channel]string // the handles' strings, for reads sent past pkg/sftp
	known   remote.Attr         // attributes seen at open
	knownOK bool                // known was learned
	learned chan struct{}       // closed once known is settled
	broken  error               // permanent failure
	closed  bool
	noSplit bool // extra channels refused (changed attributes)

	readAny bool   // a read was answered (or sent, where that cannot be told)
	epoch   uint64 // bumped when a re-open adopts the remote's attributes

	// log is shared by this host's writable handles of the file: the
	// size they expect and the changes to replay (nil when read-only).
	log *fileLog
	// order tracks the writes in flight (ordered.go).
	order writeOrder
}

var _ remote.File = (*file)(nil)

// errChanged marks a file found changed underneath after a re-open.
var errChanged = fmt.Errorf("file changed on the remote while reopening: %w", syscall.EIO)

// lostForGood reports whether a re-open failed for good: the file changed
// underneath or lost its name (errGone).
func lostForGood(err error) bool {
	return errors.Is(err, errChanged) || errors.Is(err, errGone)
}

const reopenMask = os.O_CREATE | os.O_EXCL | os.O_TRUNC

// Open opens (and creates) a regular file. With O_CREATE but not O_EXCL the
// file is first created exclusively so that perm is applied only to a file
// this call created.
func (r hostRemote) Open(ctx context.Context, p string, flags int, perm uint32) (remote.File, error) {
	f := &file{h: r.h, r: r, name: p, abs: r.abs(p), flags: flags &^ reopenMask,
		write: flags&(os.O_WRONLY|os.O_RDWR) != 0, sem: make(chan struct{}, 1),
		handles: map[*channel]*sftp.File{}, raws: map[*channel]string{}, learned: make(chan struct{})}
	dctx, cancel := r.h.withDeadline(ctx)
	defer cancel()
	k := idempotent
	if flags&reopenMask != 0 {
		k = mutation
	}
	var lg *fileLog // a writable file's, taken before the open (see openEmptied)
	if f.write {
		lg = r.h.logOf(f.abs)
	}
	for {
		c, err := r.h.pick(dctx)
		if err != nil {
			r.h.releaseLogIf(f.abs, lg)
			return nil, r.fail("open", p, err)
		}
		var sf *sftp.File
		var fresh bool
		var created remote.Attr
		lg.holdGate()
		err = r.h.run(dctx, c, k, func() (err error) {
			sf, fresh, created, err = openOn(c, f.abs, flags, perm)
			if err == nil && (fresh || flags&os.O_TRUNC != 0) {
				lg.truncated() // in order with the other changes
			}
			return err
		}, func(abandoned bool) {
			lg.releaseGate()
			if abandoned && sf != nil {
				r.h.bg(c, sf.Close)
			}
		})
		if err == nil {
			f.created, f.createdOK = created, fresh
			f.log = lg
			f.start(c, sf, fresh || flags&os.O_TRUNC != 0)
			r.h.register(f)
			return f, nil
		}
		if isAnswer(err) || gaveUp(err) || k == mutation && !resendable(flags) {
			r.h.releaseLogIf(f.abs, lg)
			return nil, r.openFailure(ctx, p, flags, c, err)
		}
		c.kill(err)
	}
}

// resendable reports whether an open with flags may be sent again after
// its channel died with it unanswered: one that creates the file without
// O_EXCL or O_TRUNC ends with the file existing and opened whether or not
// the lost one was made (told.go). If the lost open created the file, the
// file keeps the permissions the server gave it rather than perm.
func resendable(flags int) bool {
	return flags&(os.O_EXCL|os.O_TRUNC) == 0
}

// openFailure explains a failed open; after a creating one it probes
// ignoring cancellation (see settle).
func (r hostRemote) openFailure(ctx context.Context, p string, flags int, c *channel, err error) error {
	probe := r.probe
	if flags&reopenMask != 0 {
		probe = r.settle
	}
	switch {
	case isFailure(err) && flags&os.O_EXCL != 0:
		err = probe(ctx, p, err, probeExists, probeFS)
	case isFailure(err):
		err = probe(ctx, p, err, probeIsDir, probeFS)
	case !isAnswer(err) && !gaveUp(err):
		c.kill(err)
		err = transportErr(err)
	}
	return r.fail("open", p, err)
}

// openOn opens abs on channel c; fresh reports that this call created it,
// and then created holds its attributes with perm set (createopen.go).
func openOn(c *channel, abs string, flags int, perm uint32) (sf *sftp.File, fresh bool, created remote.Attr, err error) {
	cl := c.client
	if flags&os.O_CREATE == 0 {
		sf, err = cl.OpenFile(abs, flags)
		return sf, false, created, err
	}
	sf, made, created, err := createOn(c, abs, flags|os.O_EXCL, perm)
	if !made && isFailure(err) && flags&os.O_EXCL == 0 {
		sf, err2 := cl.OpenFile(abs, flags&^os.O_CREATE)
		if err2 == nil || !isAnswer(err2) {
			return sf, false, created, err2
		}
		return nil, false, created, err
	}
	if err != nil {
		return nil, false, created, err
	}
	return sf, true, created, nil
}

// chmodStat sets the permissions of a file just created and returns its
// attributes, in one round trip: the FSTAT travels with the FSETSTAT, and
// the server may answer it before or after the change, so the
// permissions reported are the ones set.
func chmodStat(sf *sftp.File, perm uint32) (remote.Attr, error) {
	var fi os.FileInfo
	var serr error
	done := make(chan struct{})
	go func() {
		defer close(done)
		fi, serr = sf.Stat()
	}()
	err := sf.Chmod(os.FileMode(perm))
	<-done
	if err != nil {
		return remote.Attr{}, err
	}
	if serr != nil {
		return remote.Attr{}, serr
	}
	a := attrOf(fi)
	a.Mode = a.Mode&^07777 | perm
	return a, nil
}

// CreatedAttr implements remote.CreatedFile.
func (f *file) CreatedAttr() (remote.Attr, bool) { return f.created, f.createdOK }

var _ remote.OpenedFile = (*file)(nil)

// OpenedAttr implements remote.OpenedFile: the attributes of the FSTAT
// sent in the background at open (none when this open created or
// truncated the file).
func (f *file) OpenedAttr(ctx context.Context) (remote.Attr, bool) {
	select {
	case <-f.learned:
	case <-ctx.Done():
		return remote.Attr{}, false
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.known, f.knownOK && f.known.Mode != 0
}

// start installs the first handle and learns the attributes to check
// re-opens against: an empty file when this open created or truncated it,
// else from an FSTAT sent in the background (no round trip added to Open).
func (f *file) start(c *channel, sf *sftp.File, empty bool) {
	f.primary = c
	f.setHandle(c, sf)
	if empty {
		f.knownOK = true // the log recorded it (Open)
		close(f.learned)
		return
	}
	f.h.bg(c, func() error {
		fi, err := sf.Stat()
		f.mu.Lock()
		defer f.mu.Unlock()
		if err == nil {
			f.known, f.knownOK = attrOf(fi), true
			if f.log != nil {
				f.log.learnSize(int64(f.known.Size))
			}
		}
		close(f.learned)
		return err
	})
}

// current returns the primary handle if its channel is alive, with one
// request counted on it.
func (f *file) current() (*channel, *sftp.File, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	switch {
	case f.closed:
		return nil, nil, os.ErrClosed
	case f.broken != nil:
		return nil, nil, f.broken
	case f.primary != nil && !f.primary.isDead():
		f.primary.begin()
		return f.primary, f.handles[f.primary], nil
	}
	return nil, nil, nil
}

// acquire returns a usable handle, re-opening the file if its channel died.
// It fails with ctx.Err() once ctx is done, so a cancelled request is never
// sent.
func (f *file) acquire(ctx context.Context) (*channel, *sftp.File, error) {
	if err := ctx.Err(); err != nil {
		return nil, nil, err
	}
	if c, sf, err := f.current(); c != nil || err != nil {
		return c, sf, err
	}
	select {
	case f.sem <- struct{}{}:
	case <-ctx.Done():
		return nil, nil, ctx.Err()
	}
	defer func() { <-f.sem }()
	if c, sf, err := f.current(); c != nil || err != nil {
		return c, sf, err
	}
	select {
	case <-f.learned:
	case <-ctx.Done():
		return nil, nil, ctx.Err()
	}
	return f.reopen(ctx)
}

// reopen opens the file on a live channel and checks it against the rule.
func (f *file) reopen(ctx context.Context) (*channel, *sftp.File, error) {
	for {
		c, err := f.h.pick(ctx)
		if err != nil {
			return nil, nil, err
		}
		sf, err := f.openChecked(ctx, c, true)
		switch {
		case err == nil:
			f.mu.Lock()
			f.primary = c
			f.setHandle(c, sf)
			c.begin()
			f.mu.Unlock()
			return c, sf, nil
		case lostForGood(err):
			f.mu.Lock()
			f.broken = err
			f.mu.Unlock()
			return nil, nil, err
		case isAnswer(err) || gaveUp(err):
			return nil, nil, err
		}
		c.kill(err)
	}
}

// openChecked opens the file on c (counted) and verifies its attributes;
// with replay, a writable file's logged changes are made again on the new
// handle, with no other change to the file in flight meanwhile.
func (f *file) openChecked(ctx context.Context, c *channel, replay bool) (*sftp.File, error) {
	var sf *sftp.File
	err := f.h.run(ctx, c, idempotent, func() error {
		abs, gone := f.where()
		if gone {
			return errGone
		}
		var err error
		if sf, err = c.client.OpenFile(abs, f.flags); err != nil {
			return err
		}
		if replay && f.log != nil {
			f.log.gate.Lock()
			defer f.log.gate.Unlock()
		}
		fi, err := sf.Stat()
		if err == nil {
			err = f.verify(attrOf(fi))
		}
		if err == nil && replay && f.log != nil {
			var n int
			n, err = f.log.replay(sf)
			f.h.log.Info("replayed acknowledged changes", "host", f.h.o.Host, "path", f.name, "changes", n, "err", err)
		}
		if err != nil {
			sf.Close()
			sf = nil
		}
		return err
	}, func(abandoned bool) {
		if abandoned && sf != nil {
			f.h.bg(c, sf.Close)
		}
	})
	if err != nil {
		return nil, err // sf may still be written by the abandoned request
	}
	return sf, nil
}

// verify applies the re-open rule (see file).
func (f *file) verify(a remote.Attr) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	size := int64(a.Size)
	if f.log != nil {
		exp, sentEnd, ok := f.log.expected()
		if size < exp || (ok && size > max(exp, sentEnd)) {
			f.h.log.Warn("file changed on the server while its handle reconnected", "host", f.h.o.Host,
				"path", f.name, "size", size, "expected", exp, "furthest_write", sentEnd)
			return errChanged
		}
		return nil
	}
	if !f.knownOK && !f.readAny {
		// The channel died before the attributes at open were learned and
		// before any read was answered: nothing read can mix with what
		// the file holds now, which becomes the reference. A read
		// answered meanwhile on the old handle is discarded (markRead).
		f.known, f.knownOK = a, true
		f.epoch++
		return nil
	}
	if !f.knownOK || size != int64(f.known.Size) || !a.Mtime.Equal(f.known.Mtime) {
		return errChanged
	}
	return nil
}

// markRead records an answered read sent at epoch ep (f.epoch when it was
// sent); false if a re-open
// changed the reference since, when the answer must not be used.
func (f *file) markRead(ep uint64) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.epoch != ep {
		return false
	}
	f.readAny = true
	return true
}

// markSent records a read whose answer cannot be told apart (sent through
// pkg/sftp), as if it had been answered.
func (f *file) markSent() {
	f.mu.Lock()
	f.readAny = true
	f.mu.Unlock()
}

// setHandle records sf, just opened on c; f.mu is held (or f is new).
func (f *file) setHandle(c *channel, sf *sftp.File) {
	f.handles[c] = sf
	if raw, ok := handleOf(sf); ok {
		f.raws[c] = raw
	}
}

// drop forgets the handle on a dead channel.
func (f *file) drop(c *channel) {
	f.mu.Lock()
	delete(f.handles, c)
	delete(f.raws, c)
	if f.primary == c {
		f.primary = nil
	}
	f.mu.Unlock()
}

// do runs fn on the file's handle within the call deadline, re-opening and
// running fn again after a transport failure (every file request is
// idempotent in that sense; k says how it meets cancellation). l, if set,
// is held by each attempt for as long as it runs.
func (f *file) do(ctx context.Context, k reqKind, l *lease, fn func(c *channel, sf *sftp.File) error) error {
	return f.doGated(ctx, k, l, false, fn)
}

// change is do for a request that changes the file: each attempt holds
// the log's gate shared until fn ends, so that no replay runs meanwhile;
// fn records the change in the log once it is acknowledged.
func (f *file) change(ctx context.Context, k reqKind, l *lease, fn func(c *channel, sf *sftp.File) error) error {
	return f.doGated(ctx, k, l, f.log != nil, fn)
}

func (f *file) doGated(ctx context.Context, k reqKind, l *lease, gated bool, fn func(c *channel, sf *sftp.File) error) error {
	dctx, cancel := f.h.withDeadline(ctx)
	defer cancel()
	for {
		c, sf, err := f.acquire(dctx)
		if err != nil {
			return err
		}
		l.hold()
		if gated {
			f.log.gate.RLock()
		}
		err = f.h.run(dctx, c, k, func() error { return fn(c, sf) }, func(bool) {
			if gated {
				f.log.gate.RUnlock()
			}
			l.release()
		})
		if final(err) {
			return err
		}
		c.kill(err)
		f.drop(c)
	}
}

// fail wraps a file error for the FUSE layer.
func (f *file) fail(op string, err error) error {
	if errors.Is(err, os.ErrClosed) {
		err = syscall.EBADF
	}
	return f.r.fail(op, f.name, err)
}

func (f *file) ReadAt(ctx context.Context, p []byte, off int64) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	l := getLease(len(p))
	defer l.release()
	n, err := f.read(ctx, l, len(p), off)
	return copy(p, l.b[:n]), err
}

var _ remote.BufferReader = (*file)(nil)

// ReadAtBuf reads into a private buffer and lends it to the caller.
func (f *file) ReadAtBuf(ctx context.Context, size int, off int64) ([]byte, func(), error) {
	l := getLease(size)
	n, err := f.read(ctx, l, size, off)
	if err != nil && err != io.EOF {
		l.release()
		return nil, nil, err
	}
	return l.b[:n], l.release, err
}

// read reads up to size bytes at off into l, a private buffer, so that no
// memory of the caller is ever written after it returned; io.EOF at the
// end of the file.
func (f *file) read(ctx context.Context, l *lease, size int, off int64) (int, error) {
	var n int
	var err error
	if f.splittable(size) {
		n, err = f.readSplit(ctx, l, size, off)
	} else {
		n, err = f.readOne(ctx, l, size, off)
	}
	if err != nil && err != io.EOF {
		return 0, f.fail("read", err)
	}
	return n, err
}

// readOne reads size bytes into l (less only at the end of the file) with
// requests on the file's handle, sent past pkg/sftp when the handle's
// string is known.
func (f *file) readOne(ctx context.Context, l *lease, size int, off int64) (int, error) {
	deadline := f.h.deadline(ctx)
	got := 0
	for got < size {
		n, short, err := f.readRaw(ctx, deadline, l, l.b[got:size], off+int64(got))
		if errors.Is(err, errNoRaw) {
			n, err = f.readOneSFTP(ctx, l, got, size, off)
			return got + n, err
		}
		got += n
		if err == nil && n == 0 {
			err = io.EOF // an empty answer: nothing more to read
		}
		if err != nil {
			return got, err
		}
		if short && f.pastKnownEnd(ctx, off+int64(got)) {
			return got, io.EOF
		}
	}
	return got, nil
}

// pastKnownEnd reports whether a short answer that ended at pos reached
// the end of the file, so that no READ need ask what lies beyond: the
// file was a regular file of pos bytes or fewer at open, and this handle's
// writes have not made it longer. A server answers a READ no larger than
// the packet size it declared in full unless the file ends (sftp-server
// reads a regular file with one pread), so the short answer is the end,
// as a local read would find it; readRaw never asks for more. Files whose
// size says nothing of their contents (/proc, size 0) are read on until
// the server answers EOF. Waits for the attributes at open, which were
// asked for before any read was sent.
func (f *file) pastKnownEnd(ctx context.Context, pos int64) bool {
	select {
	case <-f.learned:
	case <-ctx.Done():
		return false
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.knownOK && f.known.Mode&syscall.S_IFMT == syscall.S_IFREG &&
		f.known.Size > 0 && pos >= max(int64(f.known.Size), f.expectedSizeLocked())
}

// expectedSizeLocked is the size this host's writable handles expect,
// 0 for a read-only file.
func (f *file) expectedSizeLocked() int64 {
	if f.log == nil {
		return 0
	}
	size, _, _ := f.log.expected()
	return size
}

// live returns the channel of a usable handle, with one request counted
// on it. Only a re-open, which may wait, gets a context bounded by
// deadline: deriving one per request would cost a goroutine for each (the
// FUSE layer's contexts are not the standard library's).
func (f *file) live(ctx context.Context, deadline time.Time) (*channel, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if c, _, err := f.current(); c != nil || err != nil {
		return c, err
	}
	dctx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	c, _, err := f.acquire(dctx)
	return c, err
}

// final reports whether err ends a request on a handle: success, the
// server's answer, the caller giving up, or the file closed. Anything else
// is the channel's failure: the request is tried again on another one.
func final(err error) bool {
	return err == nil || isAnswer(err) || gaveUp(err) || errors.Is(err, os.ErrClosed)
}

// errNoRaw: the request cannot go past pkg/sftp (handle string unknown,
// or larger than one packet).
var errNoRaw = errors.New("request not sent past pkg/sftp")

// writeRaw sends one WRITE past pkg/sftp, on a live handle, re-opening the
// file after a transport failure.
func (f *file) writeRaw(ctx context.Context, l *lease, data []byte, off int64) error {
	deadline := f.h.deadline(ctx)
	for {
		c, err := f.live(ctx, deadline)
		if err != nil {
			return err
		}
		f.mu.Lock()
		raw, ok := f.raws[c]
		f.mu.Unlock()
		if !ok || len(data) > c.maxPacket {
			c.unbegin()
			return errNoRaw
		}
		f.log.gate.RLock()
		err = f.h.rawWrite(ctx, deadline, c, raw, l, data, off)
		if err == nil {
			f.log.wrote(data, off)
		}
		f.log.gate.RUnlock()
		if final(err) {
			return err
		}
		c.kill(err)
		f.drop(c)
	}
}

// readRaw sends one READ past pkg/sftp, on a live handle, re-opening the
// file after a transport failure. It returns the bytes read and whether
// the answer was short, which is not an error. It asks for at most one
// packet: a server cuts a larger READ to its packet size, an answer that
// would look like the end of the file (pastKnownEnd).
func (f *file) readRaw(ctx context.Context, deadline time.Time, l *lease, dest []byte, off int64) (int, bool, error) {
	for {
		c, err := f.live(ctx, deadline)
		if err != nil {
			return 0, false, err
		}
		f.mu.Lock()
		raw, ok := f.raws[c]
		ep := f.epoch
		f.mu.Unlock()
		if !ok {
			c.unbegin()
			return 0, false, errNoRaw
		}
		ask := dest[:min(len(dest), c.maxPacket)]
		n, err := f.h.rawRead(ctx, deadline, c, raw, l, ask, off)
		switch {
		case (err == nil || isAnswer(err)) && !f.markRead(ep):
			continue // answered from before a re-open that changed the reference
		case final(err):
			return n, n < len(ask), err
		}
		c.kill(err)
		f.drop(c)
	}
}

// readOneSFTP reads bytes from..size of l through pkg/sftp.
func (f *file) readOneSFTP(ctx context.Context, l *lease, from, size int, off int64) (int, error) {
	var n int
	err := f.do(ctx, idempotent, l, func(c *channel, sf *sftp.File) error {
		f.markSent()
		var err error
		n, err = sf.ReadAt(l.b[from:size], off+int64(from))
		c.stats.bytesRead.Add(uint64(n))
		return err
	})
	return n, err
}

// WriteAt sends a private copy of p, so p is free as soon as it returns.
func (f *file) WriteAt(ctx context.Context, p []byte, off int64) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	l := getLease(len(p))
	copy(l.b, p)
	f.order.add(1, nil, 0)
	defer f.order.add(-1, nil, 0)
	return f.writeAt(ctx, l, len(p), off)
}

var _ remote.BufferWriter = (*file)(nil)

// WriteSize is the data one WRITE request of the current channel carries.
func (f *file) WriteSize() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.primary != nil {
		return f.primary.maxPacket
	}
	return defaultMaxPacket
}

// WriteAtOwned sends p itself and calls done when no request uses it.
func (f *file) WriteAtOwned(ctx context.Context, p []byte, off int64, done func()) (int, error) {
	f.order.add(1, nil, 0)
	defer f.order.add(-1, nil, 0)
	return f.writeAt(ctx, ownLease(p, done), len(p), off)
}

// writeAt sends the first n bytes of l, held once by the caller (released
// here).
func (f *file) writeAt(ctx context.Context, l *lease, n int, off int64) (int, error) {
	defer l.release()
	if n == 0 {
		return 0, nil
	}
	if f.log == nil {
		return 0, f.fail("write", syscall.EBADF) // not opened for writing
	}
	f.log.sending(off + int64(n))
	err := f.writeRaw(ctx, l, l.b[:n], off)
	if errors.Is(err, errNoRaw) {
		err = f.change(ctx, idempotent, l, func(c *channel, sf *sftp.File) error {
			_, err := sf.WriteAt(l.b[:n], off)
			if err == nil {
				c.stats.bytesWrite.Add(uint64(n))
				f.log.wrote(l.b[:n], off)
			}
			return err
		})
	}
	if err != nil {
		return 0, f.writeError(ctx, err)
	}
	if err := f.makeRoom(ctx); err != nil {
		return 0, f.fail("write", err)
	}
	return n, nil
}

// writeError is the error a failed write reports.
func (f *file) writeError(ctx context.Context, err error) error {
	if isFailure(err) {
		err = f.r.probe(ctx, f.name, err, probeSpace)
	}
	return f.fail("write", err)
}

var _ remote.AsyncWriter = (*file)(nil)

// WriteAtAsync sends p, which lies in memory release frees, in one WRITE
// past pkg/sftp when the handle is up and p fits one packet: no goroutine
// waits for the answer, and done runs on the session's reader (see
// rawWriteAsync). Otherwise, and after a failure, WriteAtOwned runs on a
// goroutine of its own, bounded by Options.Timeout from now as it would
// have been, and calls done.
func (f *file) WriteAtAsync(p []byte, off int64, release func(), done func(error)) {
	l := ownLease(p, release)
	n := len(p)
	deadline := time.Now().Add(f.h.o.Timeout)
	bounded := func() (context.Context, context.CancelFunc) {
		return context.WithDeadline(context.Background(), deadline)
	}
	// slow runs on a goroutine of its own: its request may go out
	// after later ones (writeOrder).
	slow := func() {
		defer f.order.add(-1, nil, 0)
		ctx, cancel := bounded()
		defer cancel()
		m, err := f.writeAt(ctx, l, n, off) // releases l
		if err == nil && m < n {
			err = io.ErrShortWrite
		}
		done(err)
	}
	if f.log == nil || f.log.full(f.h.o.ReplayLimit) {
		f.order.add(1, nil, 0)
		go slow() // writeAt reports a read-only file, or makes room
		return
	}
	c, _, err := f.current()
	if c == nil || err != nil || n == 0 {
		f.order.add(1, nil, 0)
		go slow() // writeAt reports a closed or broken file
		return
	}
	f.mu.Lock()
	raw, ok := f.raws[c]
	ok = ok && n <= c.maxPacket
	f.mu.Unlock()
	if !ok {
		c.unbegin()
		f.order.add(1, nil, 0)
		go slow()
		return
	}
	f.log.sending(off + int64(n))
	f.log.gate.RLock()
	f.order.add(0, c, 1)
	f.h.rawWriteAsync(c, raw, l, p, off, func(err error) {
		if err == nil {
			f.log.wrote(p, off)
		}
		f.log.gate.RUnlock()
		if err != nil && !final(err) {
			f.order.add(1, nil, 0) // sent again by slow, below
		}
		f.order.add(0, c, -1)
		switch {
		case err == nil:
			l.release()
			done(nil)
		case final(err):
			go func() {
				ctx, cancel := bounded()
				defer cancel()
				err := f.writeError(ctx, err)
				l.release()
				done(err)
			}()
		default: // the channel failed: again on another, as writeRaw does
			go func() {
				c.kill(err)
				f.drop(c)
				slow()
			}()
		}
	})
}

func (f *file) Stat(ctx context.Context) (remote.Attr, error) {
	var a remote.Attr
	err := f.do(ctx, idempotent, nil, func(_ *channel, sf *sftp.File) error {
		fi, err := sf.Stat()
		if err == nil {
			a = attrOf(fi)
		}
		return err
	})
	if err != nil {
		return remote.Attr{}, f.fail("fstat", err)
	}
	return a, nil
}

func (f *file) Truncate(ctx context.Context, size int64) error {
	if f.log == nil {
		return f.fail("truncate", syscall.EBADF) // not opened for writing
	}
	f.log.truncateSent(size)
	err := f.change(ctx, mutation, nil, func(_ *channel, sf *sftp.File) error {
		err := sf.Truncate(size)
		if err == nil {
			f.log.truncateDone(size)
		}
		return err
	})
	if err != nil {
		if isFailure(err) {
			err = f.r.settle(ctx, f.name, err, probeSpace)
		}
		return f.fail("truncate", err)
	}
	return nil
}

// Sync uses fsync@openssh.com when offered; otherwise acknowledged writes
// are as durable as the server makes them. Either way the changes
// acknowledged before it was sent leave the replay log.
func (f *file) Sync(ctx context.Context) error {
	var mark uint64
	if f.log != nil {
		mark = f.log.mark()
	}
	err := f.do(ctx, mutation, nil, func(c *channel, sf *sftp.File) error {
		if !c.ext("fsync@openssh.com") {
			return nil
		}
		return sf.Sync()
	})
	if err == nil && f.log != nil {
		f.log.synced(mark)
	}
	return f.fail("fsync", err)
}

// Close closes every handle: the primary one waited for (its status is the
// result), the others in the background. The file is closed whatever ctx
// says: the CLOSE is sent even if ctx is already cancelled, and waited for
// until the call deadline. A file found changed underneath reports it
// here too. If the session of the primary handle ended with changes not
// known to be synced, the file is re-opened, the changes replayed, and
// closed there.
func (f *file) Close(ctx context.Context) error {
	f.mu.Lock()
	if f.closed {
		f.mu.Unlock()
		return f.fail("close", os.ErrClosed)
	}
	f.closed = true
	primary, handles, broken := f.primary, f.handles, f.broken
	f.handles, f.raws = nil, nil
	f.mu.Unlock()
	f.h.unregister(f)
	if f.log != nil {
		defer func() {
			abs, _ := f.where()
			f.h.releaseLog(abs, f.log)
		}()
	}
	for c, sf := range handles {
		if c != primary && !c.isDead() {
			f.h.bg(c, sf.Close)
		}
	}
	dctx, cancel := f.h.withDeadline(ctx)
	defer cancel()
	var err error
	switch {
	case broken != nil:
		if primary != nil && !primary.isDead() {
			f.h.bg(primary, handles[primary].Close)
		}
		return f.fail("close", broken)
	case primary == nil || primary.isDead():
		err = errSessionEnded
	default:
		primary.begin()
		err = f.h.run(dctx, primary, mutation, handles[primary].Close, nil)
	}
	if err == nil || isAnswer(err) || gaveUp(err) {
		return f.fail("close", err)
	}
	// The session ended: the server closed the handle.
	if f.log == nil || !f.log.pending() {
		return nil
	}
	return f.fail("close", f.closeReplayed(dctx))
}

// errSessionEnded: the channel of the handle is gone.
var errSessionEnded = errors.New("the handle's session ended")

// closeReplayed re-opens the closed file on a live channel, replays its
// log there and closes that handle.
func (f *file) closeReplayed(ctx context.Context) error {
	for {
		c, err := f.h.pick(ctx)
		if err != nil {
			return err
		}
		sf, err := f.openChecked(ctx, c, true)
		if err == nil {
			c.begin()
			err = f.h.run(ctx, c, mutation, sf.Close, nil)
		}
		if final(err) || lostForGood(err) {
			return err
		}
		c.kill(err)
	}
}
