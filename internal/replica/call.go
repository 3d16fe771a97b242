package replica

import (
	"context"
	"fmt"
	"syscall"
	"time"
)

// latencyBase is added to each member's measured latency when weighing
// load: below it (loopback, one LAN) members count as equally fast and the
// work in flight decides; above it the faster member gets more.
const latencyBase = 500 * time.Microsecond

// smallIO is the largest read or write whose duration feeds the latency
// estimate; bigger ones measure bandwidth, not latency.
const smallIO = 64 << 10

// score is m's expected cost for one more call: work in flight and open
// files, times the smoothed latency.
func (m *member) score() float64 {
	load := m.inflight.Load() + m.handles.Load() + 1
	return float64(load) * float64(time.Duration(m.ewma.Load())+latencyBase)
}

// pickRead returns the usable member with the lowest score, skipping those
// in tried; nil if none.
func (s *Set) pickRead(tried uint64) *member {
	var best *member
	var bestScore float64
	for _, m := range s.members {
		if tried&(1<<m.idx) != 0 || !m.usable() {
			continue
		}
		if sc := m.score(); best == nil || sc < bestScore {
			best, bestScore = m, sc
		}
	}
	return best
}

// pickPrimary returns the first usable member in the given order, skipping
// those in tried; nil if none.
func (s *Set) pickPrimary(tried uint64) *member {
	for _, m := range s.members {
		if tried&(1<<m.idx) == 0 && m.usable() {
			return m
		}
	}
	return nil
}

// callKind says how a call meets a member taken out while it runs.
type callKind int

const (
	// idempotent calls are cancelled when their member is taken out, and
	// sent again elsewhere.
	idempotent callKind = iota
	// mutation calls, once sent, wait for their answer (remote.Remote's
	// contract), so they are never cancelled by the set.
	mutation
)

// do runs fn against m, counting it as m's work and measuring it. small
// says whether its duration is a latency sample.
func (s *Set) do(ctx context.Context, m *member, k callKind, small bool, fn func(context.Context) error) error {
	cctx, cancel := ctx, context.CancelFunc(nil)
	if s.o.Timeout > 0 {
		cctx, cancel = context.WithTimeout(ctx, s.o.Timeout)
	} else if k == idempotent {
		cctx, cancel = context.WithCancel(ctx)
	}
	if cancel != nil {
		defer cancel()
	}
	if k == idempotent {
		defer context.AfterFunc(m.epochCtx(), cancel)()
	}
	m.inflight.Add(1)
	start := time.Now()
	err := fn(cctx)
	m.inflight.Add(-1)
	m.requests.Add(1)
	switch {
	case connLevel(ctx, err):
		m.errors.Add(1)
	case small && ctx.Err() == nil:
		m.sample(time.Since(start))
	}
	return err
}

// sample folds one latency into m's moving average (weight 1/8).
func (m *member) sample(d time.Duration) {
	old := m.ewma.Load()
	if old == 0 {
		m.ewma.Store(int64(d))
		return
	}
	m.ewma.Store(old + (int64(d)-old)/8)
}

// read runs a read-only call on the best healthy member, moving to another
// one after a connection-level failure; each member is tried once.
func (s *Set) read(ctx context.Context, op, p string, fn func(context.Context, *member) error) error {
	var tried uint64
	var last error
	for {
		m := s.pickRead(tried)
		if m == nil {
			return s.noMember(ctx, op, p, last)
		}
		tried |= 1 << m.idx
		err := s.do(ctx, m, idempotent, true, func(ctx context.Context) error { return fn(ctx, m) })
		if !connLevel(ctx, err) {
			return err
		}
		s.takeOut(m, err)
		last = err
	}
}

// write runs a mutation on the primary. After a connection-level failure
// it is sent to the next member; resent tells fn that an earlier attempt
// may have taken effect (see doc.go for how each call reads that).
func (s *Set) write(ctx context.Context, op, p string, fn func(ctx context.Context, m *member, resent bool) error) error {
	var tried uint64
	var last error
	resent := false
	for {
		m := s.pickPrimary(tried)
		if m == nil {
			return s.noMember(ctx, op, p, last)
		}
		tried |= 1 << m.idx
		again := resent
		err := s.do(ctx, m, mutation, true, func(ctx context.Context) error { return fn(ctx, m, again) })
		if !connLevel(ctx, err) {
			return err
		}
		s.takeOut(m, err)
		resent = resent || !notSent(err)
		last = err
	}
}

// noMember is the error of a call no member could serve.
func (s *Set) noMember(ctx context.Context, op, p string, last error) error {
	if last != nil && ctx.Err() != nil {
		return last
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("%s %s: %w", op, p, err)
	}
	if last == nil {
		return fmt.Errorf("%s %s: %w: %w", op, p, ErrNoMember, syscall.ENOTCONN)
	}
	return fmt.Errorf("%s %s: %w (last: %v): %w", op, p, ErrNoMember, last, syscall.ENOTCONN)
}
