// Package replica serves one logical tree through several remotes that
// reach the same storage (gateways to one shared filesystem): reads spread
// over the healthy members, writes go through one, and a member that stops
// answering is taken out without the application seeing an error.
//
// What is guaranteed, and what is not, is spelled out in doc.go.
package replica

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"sshfsm/internal/remote"
)

// Member is one way to reach the tree. Remote usually also implements
// remote.Health; one that does not is judged by its answers and probes only.
type Member struct {
	Name   string
	Remote remote.Remote
}

// Options configure a Set. Zero fields take the defaults below.
type Options struct {
	Logger *slog.Logger
	// ProbeInterval is how often a member taken out is probed (Lstat of
	// the root) to let it rejoin.
	ProbeInterval time.Duration
	// ProbeTimeout bounds one probe.
	ProbeTimeout time.Duration
	// Timeout, when set, bounds each attempt on one member; an attempt that
	// reaches it takes the member out. 0 leaves the bound to the member
	// (transport's own Timeout).
	Timeout time.Duration
	// ReplayLimit is how many bytes a writable handle keeps of the writes
	// acknowledged since its last successful Sync, to replay them on
	// another member; past it the handle syncs itself to release them.
	ReplayLimit int64
}

// Defaults for zero Options fields.
const (
	DefaultProbeInterval = time.Second
	DefaultProbeTimeout  = 5 * time.Second
	DefaultReplayLimit   = 64 << 20
)

// maxMembers bounds a set (members tried are kept in a bit mask).
const maxMembers = 64

// ErrNoMember is wrapped (with ENOTCONN) by the error of a call that found
// no healthy member to send it to.
var ErrNoMember = errors.New("no healthy replica")

// Set is a replica set. It implements remote.Remote and remote.Health.
type Set struct {
	o       Options
	log     *slog.Logger
	members []*member

	ctx    context.Context // ends at Close
	cancel context.CancelFunc
	wg     sync.WaitGroup // health watchers

	pickMu sync.Mutex // makes a read pick and its count one step; a leaf lock

	// mu guards changed; a leaf lock.
	mu      sync.Mutex
	changed chan struct{} // closed and replaced at every member state change
}

var (
	_ remote.Remote = (*Set)(nil)
	_ remote.Health = (*Set)(nil)
)

// New builds a set over members (in primary order: writes go to the first
// healthy one) and starts watching their health.
func New(members []Member, o Options) (*Set, error) {
	if len(members) == 0 || len(members) > maxMembers {
		return nil, fmt.Errorf("replica set of %d members: want 1 to %d", len(members), maxMembers)
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.ProbeInterval <= 0 {
		o.ProbeInterval = DefaultProbeInterval
	}
	if o.ProbeTimeout <= 0 {
		o.ProbeTimeout = DefaultProbeTimeout
	}
	if o.ReplayLimit <= 0 {
		o.ReplayLimit = DefaultReplayLimit
	}
	s := &Set{o: o, log: o.Logger, changed: make(chan struct{})}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	for i, mb := range members {
		if mb.Remote == nil {
			return nil, fmt.Errorf("replica member %d (%s) has no remote", i, mb.Name)
		}
		m := &member{idx: i, name: mb.Name, r: mb.Remote, since: time.Now(), kick: make(chan struct{}, 1)}
		m.health, _ = mb.Remote.(remote.Health)
		m.epoch, m.endEpoch = context.WithCancel(s.ctx)
		m.up.Store(m.health == nil || m.health.Up())
		if !m.up.Load() {
			m.endEpoch()
		}
		s.members = append(s.members, m)
	}
	for _, m := range s.members {
		s.wg.Add(1)
		go s.probeLoop(m)
		if m.health != nil {
			s.wg.Add(1)
			go s.watch(m)
		}
	}
	return s, nil
}

// member is one replica and what the set knows of it.
type member struct {
	idx    int
	name   string
	r      remote.Remote
	health remote.Health // nil when r does not report it
	kick   chan struct{} // capacity 1: asks probeLoop for a probe now

	up       atomic.Bool  // in service: not taken out
	inflight atomic.Int64 // calls under way
	handles  atomic.Int64 // open files served by this member
	ewma     atomic.Int64 // smoothed probe latency, ns
	samples  atomic.Int64 // probes folded into ewma

	requests, errors, failovers, rejoins atomic.Uint64
	bytesRead, bytesWritten              atomic.Uint64

	// mu guards the fields below; a leaf lock.
	mu       sync.Mutex
	epoch    context.Context // ends when the member is taken out
	endEpoch context.CancelFunc
	since    time.Time // last state change
	lastErr  string
}

// usable reports whether calls may be sent to m now.
func (m *member) usable() bool {
	return m.up.Load() && (m.health == nil || m.health.Up())
}

// epochCtx returns the context that ends when m is next taken out.
func (m *member) epochCtx() context.Context {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.epoch
}

// takeOut removes m from service after err; its reads under way are
// cancelled so that they move to another member at once.
func (s *Set) takeOut(m *member, err error) {
	m.mu.Lock()
	if !m.up.Load() {
		m.mu.Unlock()
		return
	}
	m.up.Store(false)
	m.endEpoch()
	m.since, m.lastErr = time.Now(), err.Error()
	m.failovers.Add(1) // under mu: rejoin compares it
	m.mu.Unlock()
	s.log.Warn("replica taken out", "member", m.name, "err", err)
	s.broadcast()
}

// rejoin returns m to service after a probe that began when m had been
// taken out failovers times. A probe that began before a later take-out
// proves nothing about the fault that took it out.
func (s *Set) rejoin(m *member, failovers uint64) {
	m.mu.Lock()
	if m.up.Load() || m.failovers.Load() != failovers || s.ctx.Err() != nil {
		m.mu.Unlock()
		return
	}
	m.epoch, m.endEpoch = context.WithCancel(s.ctx)
	m.since = time.Now()
	m.up.Store(true)
	m.mu.Unlock()
	m.rejoins.Add(1)
	s.log.Info("replica rejoined", "member", m.name)
	s.broadcast()
}

func (s *Set) broadcast() {
	s.mu.Lock()
	close(s.changed)
	s.changed = make(chan struct{})
	s.mu.Unlock()
}

// Up reports whether at least one member is in service.
func (s *Set) Up() bool {
	for _, m := range s.members {
		if m.usable() {
			return true
		}
	}
	return false
}

// Changed returns a channel closed at the next change of a member's state.
func (s *Set) Changed() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.changed
}

// Close stops the health watchers and closes every member.
func (s *Set) Close() error {
	s.cancel()
	s.wg.Wait()
	var first error
	for _, m := range s.members {
		if err := m.r.Close(); err != nil && first == nil {
			first = err
		}
	}
	return first
}
