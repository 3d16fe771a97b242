package replica

import (
	"context"
	"errors"
	"time"
)

// errHealthDown takes out a member whose Health reports it down.
var errHealthDown = errors.New("connections down")

// watch follows one member's Health until the set is closed: a member
// reported down is taken out at once; a member out of service that is
// reported up is probed at once.
func (s *Set) watch(m *member) {
	defer s.wg.Done()
	for {
		changed := m.health.Changed() // before Up, so no change is missed
		switch {
		case !m.health.Up():
			s.takeOut(m, errHealthDown)
		case !m.up.Load():
			select {
			case m.kick <- struct{}{}:
			default:
			}
		}
		select {
		case <-changed:
		case <-s.ctx.Done():
			return
		}
	}
}

// probeLoop probes m every ProbeInterval, and when kicked, until the set is
// closed: a member out of service rejoins after a probe succeeds; a member
// in service gives a latency sample, or is taken out when the probe fails
// to connect. It runs apart from watch so that a hanging probe does not
// delay a health report.
func (s *Set) probeLoop(m *member) {
	defer s.wg.Done()
	tick := time.NewTicker(s.o.ProbeInterval)
	defer tick.Stop()
	for {
		periodic := false
		select {
		case <-tick.C:
			periodic = true
		case <-m.kick:
		case <-s.ctx.Done():
			return
		}
		s.probe(m, periodic)
	}
}

// probe sends an Lstat of the root to m, bounded by ProbeTimeout, when its
// Health (if any) says up. Success lets a member out of service rejoin and,
// for a periodic probe, is a latency sample (probes kicked by health
// reports come in bursts while connections start, when timings are
// noise); a connection-level failure takes it out.
func (s *Set) probe(m *member, periodic bool) {
	if m.health != nil && !m.health.Up() {
		return
	}
	ctx, cancel := context.WithTimeout(s.ctx, s.o.ProbeTimeout)
	defer cancel()
	failovers := m.failovers.Load()
	start := time.Now()
	_, err := m.r.Lstat(ctx, "")
	switch {
	case s.ctx.Err() != nil:
	case err == nil:
		if periodic {
			m.sample(time.Since(start))
		}
		s.rejoin(m, failovers)
	case errors.Is(err, context.DeadlineExceeded) || connLevel(s.ctx, err):
		s.takeOut(m, err)
	default:
		s.log.Debug("replica probe failed", "member", m.name, "err", err)
	}
}
