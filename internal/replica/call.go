package replica

import (
	"context"
	"fmt"
	"syscall"
	"time"
)

// latencyTolerance: a member counts as slower than the fastest one only
// when its smoothed latency is more than this many times the fastest's.
// Below it (loopback, one LAN, scheduling noise on a busy client) the work
// in flight alone decides; above it (a distant gateway) the slower member
// gets proportionally less.
const latencyTolerance = 2

// latencyFloor: nor when it is slower by less than this. Sub-millisecond
// latencies (loopback, one LAN) double with scheduling noise on a busy
// machine, and weighing them sent nearly every file to one member. A
// variable so that tests of the spread between equal members can rule out
// the latencies a loaded test machine makes unequal.
var latencyFloor = 2 * time.Millisecond

// minSamples is how many probes a member's latency needs before it counts:
// the first few, taken while a mount starts and everything competes for
// the CPU, are noise.
const minSamples = 4

// load is m's work: calls in flight and open files.
func (m *member) load() float64 { return float64(m.inflight.Load() + m.handles.Load() + 1) }

// pickRead returns the usable member with the lowest expected cost, skipping
// those in tried; nil if none. The cost is the member's load times its
// latency relative to the fastest member's (see latencyTolerance). The
// latency comes from the periodic probes only, which every member answers
// under the same conditions; the durations of ordinary calls would mostly
// measure what was asked and go stale on an idle member.
// The pick is counted as the member's work at once (the caller runs it
// with call), so that concurrent picks see each other.
func (s *Set) pickRead(tried uint64) *member {
	s.pickMu.Lock()
	defer s.pickMu.Unlock()
	var fastest int64
	for _, m := range s.members {
		if l := m.latency(); tried&(1<<m.idx) == 0 && l > 0 && (fastest == 0 || l < fastest) {
			fastest = l
		}
	}
	var best *member
	var bestScore float64
	for _, m := range s.members {
		if tried&(1<<m.idx) != 0 || !m.usable() {
			continue
		}
		sc := m.load()
		if l := m.latency(); fastest > 0 && l > latencyTolerance*fastest && time.Duration(l-fastest) > latencyFloor {
			sc *= float64(l) / float64(fastest)
		}
		if best == nil || sc < bestScore {
			best, bestScore = m, sc
		}
	}
	if best != nil {
		best.inflight.Add(1)
	}
	return best
}

// pickPrimary returns the first usable member in the given order, skipping
// those in tried, counted as pickRead's; nil if none.
func (s *Set) pickPrimary(tried uint64) *member {
	for _, m := range s.members {
		if tried&(1<<m.idx) == 0 && m.usable() {
			m.inflight.Add(1)
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

// do runs fn against m, counting it as m's work.
func (s *Set) do(ctx context.Context, m *member, k callKind, fn func(context.Context) error) error {
	m.inflight.Add(1)
	return s.call(ctx, m, k, fn)
}

// call runs fn against m, whose inflight count includes it already.
func (s *Set) call(ctx context.Context, m *member, k callKind, fn func(context.Context) error) error {
	defer m.inflight.Add(-1)
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
	err := fn(cctx)
	m.requests.Add(1)
	if connLevel(ctx, err) {
		m.errors.Add(1)
	}
	return err
}

// latency is m's smoothed probe latency, 0 until it has minSamples.
func (m *member) latency() int64 {
	if m.samples.Load() < minSamples {
		return 0
	}
	return m.ewma.Load()
}

// sample folds one probe's latency into m's moving average (weight 1/4).
func (m *member) sample(d time.Duration) {
	m.samples.Add(1)
	old := m.ewma.Load()
	if old == 0 {
		m.ewma.Store(int64(d))
		return
	}
	m.ewma.Store(old + (int64(d)-old)/4)
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
		err := s.call(ctx, m, idempotent, func(ctx context.Context) error { return fn(ctx, m) })
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
		err := s.call(ctx, m, mutation, func(ctx context.Context) error { return fn(ctx, m, again) })
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
