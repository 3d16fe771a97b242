package replica

import (
	"context"
	"errors"
	"time"
)

// errHealthDown takes out a member whose Health reports it down.
var errHealthDown = errors.New("connections down")

// watch follows one member's health until the set is closed: a member
// whose Health goes down is taken out at once; a member out of service is
// probed at each change of its Health and every ProbeInterval, and rejoins
// after a probe succeeds.
func (s *Set) watch(m *member) {
	defer s.wg.Done()
	tick := time.NewTicker(s.o.ProbeInterval)
	defer tick.Stop()
	for {
		var changed <-chan struct{}
		if m.health != nil {
			changed = m.health.Changed() // before Up, so no change is missed
			if !m.health.Up() {
				s.takeOut(m, errHealthDown)
			}
		}
		if !m.up.Load() {
			s.probe(m)
		}
		select {
		case <-changed:
		case <-tick.C:
		case <-s.ctx.Done():
			return
		}
	}
}

// probe lets m rejoin when its Health (if any) says up and an Lstat of the
// root answers within ProbeTimeout.
func (s *Set) probe(m *member) {
	if m.health != nil && !m.health.Up() {
		return
	}
	ctx, cancel := context.WithTimeout(s.ctx, s.o.ProbeTimeout)
	defer cancel()
	_, err := m.r.Lstat(ctx, "")
	if err != nil {
		if s.ctx.Err() == nil {
			s.log.Debug("replica probe failed", "member", m.name, "err", err)
		}
		return
	}
	s.rejoin(m)
}
