package fusefs

import (
	"context"
	"sync"

	"sshfsm/internal/contentcache"
)

// A handle reading a file in order through the disk cache has the blocks
// ahead of it fetched in the background, as the kernel's readahead does
// for its page cache. Without it a reader waits for each block (1 MiB)
// in turn: its reads queued in one block all wait for that block's
// fetch, and the next block is asked for only when they are answered, so
// one fetch at a time runs however deep the reader's queue.
//
// A read is in order when it starts within a block of where the handle's
// furthest read ended (reads queued together arrive in any order); once
// readAheadAfter bytes were read so, the readAheadBlocks blocks after the
// one the read ends in are fetched, each by a goroutine of its own that
// stores it and registers in fills, so that a read of it waits for that
// fetch instead of starting another. A reader of a file's first bytes
// (file(1), head) fetches nothing ahead. The mount runs at most
// readAheadMax such fetches; past that, readers fetch for themselves.

const (
	readAheadBlocks = 4
	readAheadAfter  = 512 << 10
	readAheadMax    = 16
)

// readAhead is a handle's order tracking and background fetches.
type readAhead struct {
	mu      sync.Mutex
	next    int64 // where the furthest read ended
	inOrder int64 // bytes read in order up to next
	ahead   int64 // the last block fetched ahead or found present
	ctx     context.Context
	cancel  context.CancelFunc // nil until the first fetch ahead
	stopped bool
}

// readAheadSlots bounds the mount's fetches ahead.
type readAheadSlots chan struct{}

func (s readAheadSlots) take() bool {
	select {
	case s <- struct{}{}:
		return true
	default:
		return false
	}
}

func (s readAheadSlots) give() { <-s }

// readAhead notes a read of n bytes at off and, when the handle reads in
// order, starts fetching the missing blocks ahead of it.
func (h *handle) readAhead(e *contentcache.Entry, off, n int64) {
	if n <= 0 {
		return
	}
	bs := h.n.fsys.opts.Content.BlockSize()
	end := off + n
	ra := &h.ra
	ra.mu.Lock()
	defer ra.mu.Unlock()
	if off < ra.next-bs || off > ra.next+bs {
		ra.inOrder, ra.ahead = 0, 0
	}
	ra.inOrder += n
	ra.next = max(ra.next, end)
	if ra.stopped || ra.inOrder < readAheadAfter {
		return
	}
	if ra.cancel == nil {
		ra.ctx, ra.cancel = context.WithCancel(context.Background())
	}
	first := (end-1)/bs + 1
	for i := max(first, ra.ahead+1); i < first+readAheadBlocks && i*bs < h.ck.size; i++ {
		if !h.fetchAhead(ra.ctx, e, i*bs) {
			return
		}
		ra.ahead = i
	}
}

// fetchAhead fetches the block at off in the background unless it is
// present or being fetched already. It reports false when the mount runs
// readAheadMax fetches ahead.
func (h *handle) fetchAhead(ctx context.Context, e *contentcache.Entry, off int64) bool {
	missing := e.Missing(off, 1)
	if len(missing) == 0 {
		return true
	}
	r := missing[0]
	slots := h.n.fsys.aheadSlots
	if !slots.take() {
		return false
	}
	k := h.fillKey(r)
	fl, first := h.n.fsys.fills.start(k)
	if !first {
		slots.give()
		return true
	}
	e = e.Another()
	go func() {
		defer slots.give()
		defer e.Release()
		if _, release, err := h.fetchAs(ctx, e, r, k, fl, false); err == nil {
			release()
		}
	}()
	return true
}

// stopReadAhead cancels the handle's fetches ahead (at release).
func (h *handle) stopReadAhead() {
	ra := &h.ra
	ra.mu.Lock()
	ra.stopped = true
	cancel := ra.cancel
	ra.mu.Unlock()
	if cancel != nil {
		cancel()
	}
}
