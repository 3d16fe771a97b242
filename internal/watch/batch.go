package watch

import (
	"context"
	"sort"
	"strings"
	"sync"
	"time"

	"sshfsm/internal/namespace"
)

// maxPending bounds the distinct paths gathered for one batch; past it the
// tree they belong to is passed on as changed as a whole.
const maxPending = 50_000

// coalescer gathers changes for a window after the first one and passes
// them on as one batch, a path once. Adding never blocks: while a batch
// waits to be taken, the next one gathers.
type coalescer struct {
	window time.Duration
	out    chan []namespace.Change
	wake   chan struct{} // one token: something was added
	closed sync.Once

	// mu guards pending.
	mu      sync.Mutex
	pending map[string]namespace.Change
}

func newCoalescer(window time.Duration) *coalescer {
	return &coalescer{window: window, out: make(chan []namespace.Change),
		wake: make(chan struct{}, 1), pending: map[string]namespace.Change{}}
}

// add gathers c, a change below the tree at prefix.
func (b *coalescer) add(c namespace.Change, prefix string) {
	b.mu.Lock()
	switch {
	case b.coveredLocked(c.Path):
	case len(b.pending) >= maxPending:
		b.collapseLocked(prefix)
	case c.Kind == namespace.ChangeTree:
		b.collapseLocked(c.Path)
	default:
		if old, ok := b.pending[c.Path]; ok {
			c = old.Then(c)
		}
		b.pending[c.Path] = c
	}
	b.mu.Unlock()
	select {
	case b.wake <- struct{}{}:
	default:
	}
}

// coveredLocked reports whether p or a directory above it is pending as
// a changed tree, which covers p.
func (b *coalescer) coveredLocked(p string) bool {
	for {
		if c, ok := b.pending[p]; ok && c.Kind == namespace.ChangeTree {
			return true
		}
		if p == "" {
			return false
		}
		i := strings.LastIndexByte(p, '/')
		if i < 0 {
			p = ""
		} else {
			p = p[:i]
		}
	}
}

// collapseLocked replaces what is pending at and below p by one change
// of the tree at p.
func (b *coalescer) collapseLocked(p string) {
	for k := range b.pending {
		if p == "" || k == p || strings.HasPrefix(k, p+"/") {
			delete(b.pending, k)
		}
	}
	b.pending[p] = namespace.Change{Path: p, Kind: namespace.ChangeTree, Dir: true}
}

// take returns what is pending, sorted by path (a directory before what
// is in it), and starts a new batch.
func (b *coalescer) take() []namespace.Change {
	b.mu.Lock()
	defer b.mu.Unlock()
	batch := make([]namespace.Change, 0, len(b.pending))
	for _, c := range b.pending {
		batch = append(batch, c)
	}
	clear(b.pending)
	sort.Slice(batch, func(i, j int) bool { return batch[i].Path < batch[j].Path })
	return batch
}

// run passes batches on until ctx ends.
func (b *coalescer) run(ctx context.Context) {
	t := time.NewTimer(0)
	<-t.C
	for {
		select {
		case <-b.wake:
		case <-ctx.Done():
			return
		}
		t.Reset(b.window)
		select {
		case <-t.C:
		case <-ctx.Done():
			return
		}
		batch := b.take()
		if len(batch) == 0 {
			continue
		}
		select {
		case b.out <- batch:
		case <-ctx.Done():
			return
		}
	}
}

// close closes the channel of batches once run has returned.
func (b *coalescer) close() { b.closed.Do(func() { close(b.out) }) }
