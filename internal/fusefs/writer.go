package fusefs

import (
	"context"
	"fmt"
	"io"
	"math/bits"
	"sync"
	"syscall"

	"sshfsm/internal/remote"
)

// writer sends one handle's writes in the background. WRITE returns once
// its data is copied; at most window bytes are queued or in flight, beyond
// that WRITE waits. The first error is kept and returned by every later
// write, flush, fsync and release; what was not sent by then (gathered,
// or waiting behind an overlapping request) is dropped, so that none of
// them waits for more requests on a link that just failed to answer.
//
// Contiguous writes are gathered into requests of up to chunk bytes (a
// whole SFTP packet, ending on a page boundary), so a stream of 128 KiB
// or 4 KiB writes costs the server, ssh and this daemon one request per
// ~252 KiB. Gathered data is sent when its request is full, when a write
// elsewhere in the file comes, when nothing else is in flight (so nothing
// waits for more writes that may never come), when the last request in
// flight is answered, and before flush, fsync, release and truncate.
//
// Requests are sent concurrently, so two of them may reach the server in
// either order. A request overlapping one in flight therefore waits until
// that one is answered (and every request queued after a waiting one waits
// behind it): a rewritten range ends with the data written last.
type writer struct {
	f      remote.File
	async  remote.AsyncWriter // f, if it sends without a goroutine waiting
	node   *node
	window int64
	chunk  int // bytes per request; 0: one request per write

	wmu sync.Mutex // taken by write: one at a time gathers

	// mu guards the fields below.
	mu        sync.Mutex
	inflight  int64           // buffer bytes gathering or in flight
	sending   int             // requests in flight
	wake      chan struct{}   // closed and replaced whenever inflight drops
	err       error           // first failure, sticky
	dirty     bool            // writes happened since the last wait
	stage     *[]byte         // gathered data not yet sent; nil if none
	stageOff  int64           // file offset of the gathered data
	stageN    int             // bytes gathered
	stageCap  int             // bytes the current request may hold
	lastEnd   int64           // end of the last request sent
	flying    []span          // ranges of the requests in flight
	blocked   []request       // requests waiting, in order, for an overlap to land
	ready     []request       // started, to send once mu is released (unlock)
	attrs     *remote.SetAttr // attribute changes queued behind the writes (setattr.go)
	attrsOut  bool            // an attribute change is in flight
	attrsSent remote.SetAttr  // the one in flight
	// behind is an attribute change to send behind the writes in flight
	// once mu is released (unlock), ordered (f, if the file can) says
	// how, and noBehind that it refused once: changes wait for the
	// writes' answers from then on.
	behind   *remote.SetAttr
	ordered  remote.OrderedAttrSetter
	noBehind bool
	// handing counts the batches of started requests being handed to f
	// with mu released: an attribute change sent meanwhile could go
	// out before them.
	handing int
}

type span struct{ off, end int64 }

// request is gathered data ready to be sent.
type request struct {
	buf *[]byte
	off int64
	n   int
}

// pageSize aligns gathered requests, so that the server's page cache gets
// whole pages.
const pageSize = 4096

func newWriter(f remote.File, n *node, window int64) *writer {
	w := &writer{f: f, node: n, window: window, wake: make(chan struct{}), lastEnd: -1}
	w.async, _ = f.(remote.AsyncWriter)
	if w.async != nil {
		// Writes are handed over in order by unlock, not by goroutines.
		w.ordered, _ = f.(remote.OrderedAttrSetter)
	}
	if bw, ok := f.(remote.BufferWriter); ok {
		if c := bw.WriteSize() / pageSize * pageSize; c >= 2*pageSize {
			w.chunk = c
		}
	}
	return w
}

// write queues data for offset off. Writes of one handle take turns.
func (w *writer) write(ctx context.Context, data []byte, off int64) error {
	w.wmu.Lock()
	defer w.wmu.Unlock()
	w.mu.Lock()
	defer w.unlock()
	// A write after a queued attribute change lands after it, as it
	// would have: it may move the mtime that change sets.
	if err := w.waitAttrs(ctx); err != nil {
		return err
	}
	for len(data) > 0 {
		if w.err != nil {
			return w.err
		}
		if w.stage != nil && off != w.stageOff+int64(w.stageN) {
			w.sendStage()
		}
		if w.stage == nil {
			if err := w.openStage(ctx, off, len(data)); err != nil {
				return err
			}
			continue // the wait for room may have let the window change
		}
		k := copy((*w.stage)[w.stageN:w.stageCap], data)
		w.stageN += k
		w.node.pending.extend(uint64(w.stageOff) + uint64(w.stageN))
		data, off = data[k:], off+int64(k)
		if w.stageN == w.stageCap {
			w.sendStage()
		}
	}
	w.dirty = true
	if w.stage != nil && w.sending == 0 {
		w.sendStage()
	}
	return nil
}

// openStage starts gathering at off for a write of n bytes. Its buffer
// holds a whole request when off continues the previous one (a stream);
// otherwise just n's size class, so that scattered small writes do not
// pin whole packets. It waits, with mu released, until the buffer fits in
// the window.
func (w *writer) openStage(ctx context.Context, off int64, n int) error {
	limit := n // one request per write
	if w.chunk > 0 {
		limit = w.chunk - int(off%pageSize)
		if off != w.lastEnd {
			n = min(n, limit)
		} else {
			n = limit
		}
	}
	buf := getBuf(n)
	need := int64(cap(*buf))
	for w.inflight > 0 && w.inflight+need > w.window {
		if w.err != nil {
			putBuf(buf)
			return w.err
		}
		ch := w.wake
		w.unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			w.mu.Lock()
			putBuf(buf)
			return ctx.Err()
		}
		w.mu.Lock()
	}
	w.inflight += need
	w.stage, w.stageOff, w.stageN = buf, off, 0
	w.stageCap = min(cap(*buf), limit)
	w.node.pending.add(uint64(off))
	return nil
}

// sendStage sends the gathered request, if any, in the background, or
// queues it behind a request in flight that it overlaps.
func (w *writer) sendStage() {
	if w.stage == nil {
		return
	}
	r := request{w.stage, w.stageOff, w.stageN}
	w.stage = nil
	w.lastEnd = r.off + int64(r.n)
	if w.err != nil {
		w.drop(r)
		return
	}
	if len(w.blocked) > 0 || w.overlaps(r) {
		w.blocked = append(w.blocked, r)
		return
	}
	w.start(r)
}

func (w *writer) overlaps(r request) bool {
	for _, f := range w.flying {
		if r.off < f.end && f.off < r.off+int64(r.n) {
			return true
		}
	}
	return false
}

// start puts r in flight. A file that sends without waiting gets it once
// mu is released: its sending may wait for room on the link, while the
// answers that make room need mu.
func (w *writer) start(r request) {
	w.sending++
	w.flying = append(w.flying, span{r.off, r.off + int64(r.n)})
	if w.async != nil {
		w.ready = append(w.ready, r)
		return
	}
	go w.send(r.buf, (*r.buf)[:r.n], r.off)
}

// unlock releases mu and sends the requests started meanwhile, then the
// attribute change to send behind them.
func (w *writer) unlock() {
	ready, behind := w.ready, w.behind
	w.ready, w.behind = nil, nil
	if len(ready) > 0 {
		w.handing++
	}
	w.mu.Unlock()
	w.sendAll(ready)
	if len(ready) > 0 {
		w.mu.Lock()
		w.handing--
		w.mu.Unlock()
	}
	if behind != nil {
		w.sendBehind(*behind)
	}
}

// handOver sends ready on a goroutine of its own (the caller must not
// send), counted in handing.
func (w *writer) handOver(ready []request) {
	if len(ready) == 0 {
		return
	}
	w.handing++
	go func() {
		w.sendAll(ready)
		w.mu.Lock()
		w.handing--
		w.mu.Unlock()
	}()
}

func (w *writer) sendAll(rs []request) {
	for _, r := range rs {
		held := int64(cap(*r.buf)) // buf may be reused once released
		w.async.WriteAtAsync((*r.buf)[:r.n], r.off, func() { putBuf(r.buf) }, func(err error) {
			w.finished(held, r.off, err)
		})
	}
}

// landed ends the request at off in flight and starts the waiting ones it
// held back.
func (w *writer) landed(off int64) {
	for i, f := range w.flying {
		if f.off == off {
			w.flying = append(w.flying[:i], w.flying[i+1:]...)
			break
		}
	}
	w.sending--
	if w.err != nil {
		for _, r := range w.blocked {
			w.drop(r)
		}
		w.blocked = nil
	}
	for len(w.blocked) > 0 && !w.overlaps(w.blocked[0]) {
		r := w.blocked[0]
		w.blocked = w.blocked[1:]
		w.start(r)
	}
	if w.sending == 0 {
		w.sendStage()
	}
}

// drop forgets r, a request not sent, once a write of the handle has
// failed: every later write, flush, fsync and release reports that
// failure, and sending r (after the request it overlaps, which failed
// after a timeout) would keep them waiting for a second timeout, or one
// per request queued behind another.
func (w *writer) drop(r request) {
	w.inflight -= int64(cap(*r.buf))
	putBuf(r.buf)
	w.node.pending.done()
	close(w.wake) // a write waiting for room finds the failure
	w.wake = make(chan struct{})
}

func (w *writer) send(buf *[]byte, b []byte, off int64) {
	// The requests that queued this data have been answered; the
	// transport's own timeout bounds the call.
	held := int64(cap(*buf)) // buf may be reused once done
	var n int
	var err error
	if bw, ok := w.f.(remote.BufferWriter); ok {
		n, err = bw.WriteAtOwned(context.Background(), b, off, func() { putBuf(buf) })
	} else {
		n, err = w.f.WriteAt(context.Background(), b, off)
		putBuf(buf)
	}
	if err == nil && n < len(b) {
		err = io.ErrShortWrite
	}
	w.finished(held, off, err)
}

// finished ends the request at off, which held held bytes of the window.
// For a file that sends without waiting, it may run on the transport's
// own goroutine, which must not send: requests it starts are sent from a
// goroutine of their own.
func (w *writer) finished(held, off int64, err error) {
	w.mu.Lock()
	if err != nil && w.err == nil {
		w.err = fmt.Errorf("write at %d: %w", off, err)
	}
	w.inflight -= held
	w.landed(off)
	close(w.wake)
	w.wake = make(chan struct{})
	w.handOver(w.ready)
	w.ready = nil
	w.mu.Unlock()
	w.node.pending.done()
}

// wait sends what was gathered and returns when every queued write has
// been answered, with the first error of the handle's writes. clean
// reports that no write was queued since the previous wait.
func (w *writer) wait(ctx context.Context) (clean bool, err error) {
	w.mu.Lock()
	w.sendStage()
	for w.inflight > 0 || w.attrs != nil || w.attrsOut {
		w.sendAttrs()
		ch := w.wake
		w.unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return false, ctx.Err()
		}
		w.mu.Lock()
	}
	clean = !w.dirty
	w.dirty = false
	err = w.err
	w.unlock()
	return clean, err
}

// Buffers come in power-of-two classes from 64 KiB to MaxWrite, so that a
// write pins (and the window counts) at most twice its size: with one
// class of MaxWrite, 128 KiB writes filled the window eight at a time.
const (
	minBufShift = 16 // 64 KiB
	maxBufShift = 20 // defaultMaxWrite
)

var bufPools [maxBufShift - minBufShift + 1]sync.Pool

func bufClass(n int) int {
	if n <= 1<<minBufShift {
		return 0
	}
	return bits.Len(uint(n-1)) - minBufShift
}

func getBuf(n int) *[]byte {
	cls := bufClass(n)
	if cls >= len(bufPools) {
		b := make([]byte, n)
		return &b
	}
	if v := bufPools[cls].Get(); v != nil {
		return v.(*[]byte)
	}
	b := make([]byte, 1<<(cls+minBufShift))
	return &b
}

func putBuf(b *[]byte) {
	c := cap(*b)
	if cls := bufClass(c); cls < len(bufPools) && c == 1<<(cls+minBufShift) {
		*b = (*b)[:c]
		bufPools[cls].Put(b)
	}
}

// setAttrs queues attribute changes (mode, owner, times; no size) behind
// the handle's writes. They are merged and sent as one request when the
// handle is waited for (flush, fsync, release, a truncate) or written
// again, once every write before them has been answered — or at once,
// behind the writes in flight, where the file promises that the server
// applies them after those (remote.OrderedAttrSetter): either way a set
// mtime lands after the writes that move it, and a chmod after the writes
// that clear setuid.
// The caller does not wait; a failure is kept like a write's and reported
// by the next write, flush, fsync or release.
func (w *writer) setAttrs(a remote.SetAttr) {
	w.mu.Lock()
	defer w.unlock()
	if w.attrs == nil {
		w.attrs = &remote.SetAttr{}
	}
	mergeSetAttr(w.attrs, a)
	w.dirty = true
}

// sendAttrs sends the queued attribute changes unless some are in flight
// (they follow once those are answered): once the writes before them are
// answered, or behind them when the file can (unlock sends them). mu is
// held.
func (w *writer) sendAttrs() {
	if w.attrs == nil || w.attrsOut {
		return
	}
	a := *w.attrs
	if w.sending > 0 {
		if w.ordered == nil || w.noBehind || len(w.blocked) > 0 || w.stage != nil || w.handing > 0 {
			return
		}
		w.attrs, w.attrsOut, w.attrsSent = nil, true, a
		w.behind = &a
		return
	}
	w.attrs, w.attrsOut, w.attrsSent = nil, true, a
	go w.sendAttrsNow(a)
}

// sendBehind sends a behind the writes just handed over. If the file
// refuses, or loses the request with its connection, a is queued again,
// under the changes queued since, to go once the writes are answered.
func (w *writer) sendBehind(a remote.SetAttr) {
	if w.ordered.SetAttrsBehind(a, func(err error, retry bool) { w.behindDone(a, err, retry) }) {
		return
	}
	w.mu.Lock()
	w.requeue(a)
	w.unlock()
}

// behindDone records the outcome of a change sent behind the writes; it
// may run on the transport's goroutine, which must not send.
func (w *writer) behindDone(a remote.SetAttr, err error, retry bool) {
	w.mu.Lock()
	switch {
	case retry:
		w.requeue(a)
	default:
		if err != nil && w.err == nil {
			w.err = fmt.Errorf("setattr: %w", err)
		}
		w.attrsOut, w.attrsSent = false, remote.SetAttr{}
		close(w.wake)
		w.wake = make(chan struct{})
	}
	w.handOver(w.ready)
	w.ready = nil
	w.mu.Unlock()
}

// requeue queues a, which was not applied, again under the changes queued
// since, to be sent once the writes are answered. mu is held.
func (w *writer) requeue(a remote.SetAttr) {
	if w.attrs != nil {
		mergeSetAttr(&a, *w.attrs)
	}
	w.attrs, w.attrsOut, w.attrsSent = &a, false, remote.SetAttr{}
	w.noBehind = true
	close(w.wake)
	w.wake = make(chan struct{})
}

func (w *writer) sendAttrsNow(a remote.SetAttr) {
	// As for writes: the transport's own timeout bounds the call.
	ctx := context.Background()
	var err error
	if hs, ok := w.f.(remote.HandleAttrSetter); ok {
		err = hs.SetAttrs(ctx, a)
	} else if p, linked := w.node.path(); linked {
		err = w.node.fsys.ns.SetAttr(ctx, p, a)
	} else {
		err = fmt.Errorf("setattr of an unlinked file: %w", syscall.ENOENT)
	}
	w.mu.Lock()
	if err != nil && w.err == nil {
		w.err = fmt.Errorf("setattr: %w", err)
	}
	w.attrsOut, w.attrsSent = false, remote.SetAttr{}
	close(w.wake)
	w.wake = make(chan struct{})
	w.unlock()
}

// waitAttrs waits, with mu held, until no attribute change is queued or
// in flight.
func (w *writer) waitAttrs(ctx context.Context) error {
	for w.attrs != nil || w.attrsOut {
		w.sendAttrs()
		ch := w.wake
		w.unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			w.mu.Lock()
			return ctx.Err()
		}
		w.mu.Lock()
	}
	return nil
}

// flushAttrs sends the queued attribute changes and waits for them,
// returning the handle's first error.
func (w *writer) flushAttrs(ctx context.Context) error {
	w.mu.Lock()
	defer w.unlock()
	if err := w.waitAttrs(ctx); err != nil {
		return err
	}
	return w.err
}

// queuedAttrs returns the attribute changes not yet known applied.
func (w *writer) queuedAttrs() (remote.SetAttr, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.attrs == nil && !w.attrsOut {
		return remote.SetAttr{}, false
	}
	a := w.attrsSent
	if w.attrs != nil {
		mergeSetAttr(&a, *w.attrs)
	}
	return a, true
}

// mergeSetAttr adds b's changes to a, b's winning.
func mergeSetAttr(a *remote.SetAttr, b remote.SetAttr) {
	if b.Mode != nil {
		a.Mode = b.Mode
	}
	if b.UID != nil {
		a.UID = b.UID
	}
	if b.GID != nil {
		a.GID = b.GID
	}
	if b.Atime != nil {
		a.Atime = b.Atime
	}
	if b.Mtime != nil {
		a.Mtime = b.Mtime
	}
}
