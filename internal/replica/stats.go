package replica

import (
	"strings"
	"time"
)

// MemberStats describes one member for status displays.
type MemberStats struct {
	Name         string
	Up           bool          // in service
	State        string        // "up" or "down", for display
	Since        time.Time     // last change of Up
	LastError    string        // why it was last taken out
	InFlight     int           // calls under way
	Handles      int           // open files served by it
	Requests     uint64        // calls sent through the set
	Errors       uint64        // calls that failed at connection level
	BytesRead    uint64        // file data read through it
	BytesWritten uint64        // file data acknowledged by it
	Failovers    uint64        // times it was taken out
	Rejoins      uint64        // times it came back
	Latency      time.Duration // moving average of small calls
}

// Stats returns a snapshot per member, in the set's order.
func (s *Set) Stats() []MemberStats {
	out := make([]MemberStats, 0, len(s.members))
	for _, m := range s.members {
		m.mu.Lock()
		since, lastErr := m.since, m.lastErr
		m.mu.Unlock()
		up := m.usable()
		state := "up"
		if !up {
			state = "down"
		}
		out = append(out, MemberStats{
			Name: m.name, Up: up, State: state, Since: since, LastError: lastErr,
			InFlight: int(m.inflight.Load()), Handles: int(m.handles.Load()),
			Requests: m.requests.Load(), Errors: m.errors.Load(),
			BytesRead: m.bytesRead.Load(), BytesWritten: m.bytesWritten.Load(),
			Failovers: m.failovers.Load(), Rejoins: m.rejoins.Load(),
			Latency: time.Duration(m.ewma.Load()),
		})
	}
	return out
}

// HostName names the set by its members, in order, comma-separated.
func (s *Set) HostName() string {
	names := make([]string, len(s.members))
	for i, m := range s.Stats() {
		names[i] = m.Name
	}
	return strings.Join(names, ",")
}
