package replica

import (
	"testing"
	"time"
)

// Latencies within the tolerance leave the choice to the load; a member
// far slower than the fastest gets proportionally fewer open files, once
// both have been probed minSamples times (earlier probes are noise).
func TestPickWeighsLatency(t *testing.T) {
	cases := []struct {
		name       string
		lat0, lat1 time.Duration
		samples    int64
		want0      int64 // files on member 0 out of 12
	}{
		{"equal", time.Millisecond, time.Millisecond, minSamples, 6},
		{"within tolerance", time.Millisecond, 1900 * time.Microsecond, minSamples, 6},
		{"5x slower", time.Millisecond, 5 * time.Millisecond, minSamples, 10},
		{"3x slower, by less than the floor", 300 * time.Microsecond, 900 * time.Microsecond, minSamples, 6},
		{"5x slower, too few probes", time.Millisecond, 5 * time.Millisecond, minSamples - 1, 6},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s, _, _ := newSet(t, 2, Options{ProbeInterval: time.Hour})
			s.members[0].ewma.Store(int64(c.lat0))
			s.members[1].ewma.Store(int64(c.lat1))
			s.members[0].samples.Store(c.samples)
			s.members[1].samples.Store(c.samples)
			for range 12 {
				m := s.pickRead(0)
				m.inflight.Add(-1)
				m.handles.Add(1)
			}
			if got := s.members[0].handles.Load(); got != c.want0 {
				t.Fatalf("member 0 got %d of 12 files, want %d", got, c.want0)
			}
		})
	}
}
