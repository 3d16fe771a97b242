package fusefs

import (
	"context"
	"fmt"
	"io"
	"math/bits"
	"sync"

	"sshfsm/internal/remote"
)

// writer sends one handle's writes in the background. WRITE returns once
// its data is copied; at most window bytes are in flight, beyond that
// WRITE waits. The first error is kept and returned by every later write,
// flush, fsync and release.
type writer struct {
	f      remote.File
	node   *node
	window int64

	// mu guards the fields below.
	mu       sync.Mutex
	inflight int64         // buffer bytes in flight
	wake     chan struct{} // closed and replaced whenever inflight drops
	err      error         // first failure, sticky
	dirty    bool          // writes happened since the last wait
}

func newWriter(f remote.File, n *node, window int64) *writer {
	return &writer{f: f, node: n, window: window, wake: make(chan struct{})}
}

// write queues data for offset off.
func (w *writer) write(ctx context.Context, data []byte, off int64) error {
	buf := getBuf(len(data))
	need := int64(cap(*buf))
	if err := w.reserve(ctx, need); err != nil {
		putBuf(buf)
		return err
	}
	b := (*buf)[:len(data)]
	copy(b, data)
	w.node.pending.add(uint64(off) + uint64(len(data)))
	go w.send(buf, b, off, need)
	return nil
}

// reserve waits until need more bytes fit in the window.
func (w *writer) reserve(ctx context.Context, need int64) error {
	w.mu.Lock()
	for {
		if w.err != nil {
			err := w.err
			w.mu.Unlock()
			return err
		}
		if w.inflight == 0 || w.inflight+need <= w.window {
			break
		}
		ch := w.wake
		w.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
		w.mu.Lock()
	}
	w.inflight += need
	w.dirty = true
	w.mu.Unlock()
	return nil
}

func (w *writer) send(buf *[]byte, b []byte, off, need int64) {
	// The request that queued this write has been answered; the
	// transport's own timeout bounds the call.
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
	w.mu.Lock()
	if err != nil && w.err == nil {
		w.err = fmt.Errorf("write at %d: %w", off, err)
	}
	w.inflight -= need
	close(w.wake)
	w.wake = make(chan struct{})
	w.mu.Unlock()
	w.node.pending.done()
}

// wait returns when every queued write has been answered, with the first
// error of the handle's writes. clean reports that no write was queued
// since the previous wait.
func (w *writer) wait(ctx context.Context) (clean bool, err error) {
	w.mu.Lock()
	for w.inflight > 0 {
		ch := w.wake
		w.mu.Unlock()
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
	w.mu.Unlock()
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
