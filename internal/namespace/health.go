package namespace

import (
	"sync"

	"sshfsm/internal/remote"
)

// healthSet follows the Health of a namespace's members (a union's
// branches, a graft's namespaces) and reports changes of the SET of
// members that are up: a transport host's Changed also fires on every
// channel it replaces, which changes nothing above it. A member that is
// itself a union or graft fires only on changes of its own set, and each
// of those is passed on, since its names changed.
type healthSet struct {
	members []remote.Health // nil: the member has no Health and is always up
	relay   []bool
	// onChange runs after the set changed and before Changed fires, with
	// the old and new sets; it drops what was learned under the old set.
	onChange func(old, cur set)

	// mu guards up and changed.
	mu      sync.Mutex
	up      set
	changed chan struct{}

	stop     chan struct{}
	stopOnce sync.Once
	wg       sync.WaitGroup
}

// newHealthSet starts following the members' Health.
func newHealthSet(members []remote.Remote, onChange func(old, cur set)) *healthSet {
	s := &healthSet{
		members:  make([]remote.Health, len(members)),
		relay:    make([]bool, len(members)),
		onChange: onChange,
		changed:  make(chan struct{}),
		stop:     make(chan struct{}),
	}
	for i, m := range members {
		h, ok := m.(remote.Health)
		if !ok {
			s.up = s.up.with(i)
			continue
		}
		s.members[i] = h
		s.relay[i] = isComposite(m)
		if h.Up() {
			s.up = s.up.with(i)
		}
	}
	for i, h := range s.members {
		if h != nil {
			s.wg.Add(1)
			go s.watch(i)
		}
	}
	return s
}

// isComposite reports whether r is a namespace of this package whose
// Changed fires only when its names changed.
func isComposite(r remote.Remote) bool {
	switch r.(type) {
	case *union, *graft:
		return true
	}
	return false
}

func (s *healthSet) watch(i int) {
	defer s.wg.Done()
	h := s.members[i]
	fired := false
	for {
		ch := h.Changed() // taken before Up, so that no change is missed
		s.set(i, h.Up(), fired && s.relay[i])
		select {
		case <-ch:
			fired = true
		case <-s.stop:
			return
		}
	}
}

// set records member i's state; force reports a change even if the set
// stays the same.
func (s *healthSet) set(i int, up, force bool) {
	s.mu.Lock()
	old := s.up
	cur := old.without(i)
	if up {
		cur = cur.with(i)
	}
	if cur == old && !force {
		s.mu.Unlock()
		return
	}
	s.up = cur
	fire := s.changed
	s.changed = make(chan struct{})
	s.mu.Unlock()
	if s.onChange != nil {
		s.onChange(old, cur)
	}
	close(fire)
}

// Up reports whether any member is up.
func (s *healthSet) Up() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.up != 0
}

// Changed returns a channel closed at the next change of the set.
func (s *healthSet) Changed() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.changed
}

// close stops following the members; later calls do nothing.
func (s *healthSet) close() {
	s.stopOnce.Do(func() { close(s.stop) })
	s.wg.Wait()
}
