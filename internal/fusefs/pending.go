package fusefs

import (
	"context"
	"sync"
)

// pending counts a node's writes in flight, so that reads wait for them
// and reported sizes include them.
type pending struct {
	mu    sync.Mutex    // guards the fields below
	n     int           // writes in flight
	max   uint64        // highest end offset among them
	drain chan struct{} // closed when n drops to zero; nil while n == 0
}

func (p *pending) add(end uint64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.n == 0 {
		p.drain = make(chan struct{})
	}
	p.n++
	if end > p.max {
		p.max = end
	}
}

// extend raises the highest end offset to end.
func (p *pending) extend(end uint64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if end > p.max {
		p.max = end
	}
}

func (p *pending) done() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.n--
	if p.n == 0 {
		p.max = 0
		close(p.drain)
		p.drain = nil
	}
}

// end is the highest end offset of the writes in flight, 0 if none.
func (p *pending) end() uint64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.max
}

// wait returns when no write is in flight, or with ctx's error.
func (p *pending) wait(ctx context.Context) error {
	p.mu.Lock()
	ch := p.drain
	p.mu.Unlock()
	if ch == nil {
		return nil
	}
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
