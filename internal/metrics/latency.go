package metrics

import (
	"sync/atomic"
	"time"
)

// latencyBounds are the upper bounds of the buckets of every Latency: from
// a loopback round trip to the longest timeout a user would set.
var latencyBounds = [...]time.Duration{
	500 * time.Microsecond, time.Millisecond, 2500 * time.Microsecond, 5 * time.Millisecond,
	10 * time.Millisecond, 25 * time.Millisecond, 50 * time.Millisecond, 100 * time.Millisecond,
	250 * time.Millisecond, 500 * time.Millisecond, time.Second, 2500 * time.Millisecond,
	5 * time.Second, 10 * time.Second, 30 * time.Second, time.Minute,
}

// Latency is a histogram of durations, for the hot path of every request:
// Observe costs a short scan and two atomic adds, no lock, no allocation.
// The zero Latency is ready to use.
type Latency struct {
	// counts[i] counts the durations in bucket i alone (not cumulative);
	// the last one those above every bound.
	counts [len(latencyBounds) + 1]atomic.Uint64
	sum    atomic.Int64 // nanoseconds
}

// Observe records one duration.
func (l *Latency) Observe(d time.Duration) {
	i := 0
	for i < len(latencyBounds) && d > latencyBounds[i] {
		i++
	}
	l.counts[i].Add(1)
	l.sum.Add(int64(d))
}

// Buckets is a histogram read at one moment, as the format writes it.
type Buckets struct {
	Bounds     []float64 // upper bounds in seconds, increasing
	Cumulative []uint64  // observations at most Bounds[i]
	Count      uint64    // every observation: the +Inf bucket
	Sum        float64   // seconds
}

// Snapshot reads l. The count is the sum of the buckets, so that the +Inf
// bucket always equals it, even while requests are observed meanwhile.
func (l *Latency) Snapshot() Buckets {
	var b Buckets
	b.Add(l)
	return b
}

// Add adds the observations of l to b (b may be the zero Buckets): the
// channels of a host sum into the host's histogram.
func (b *Buckets) Add(l *Latency) {
	if b.Bounds == nil {
		b.Bounds = make([]float64, len(latencyBounds))
		for i, d := range latencyBounds {
			b.Bounds[i] = d.Seconds()
		}
		b.Cumulative = make([]uint64, len(latencyBounds))
	}
	var run uint64
	for i := range l.counts {
		run += l.counts[i].Load()
		if i < len(b.Cumulative) {
			b.Cumulative[i] += run
		}
	}
	b.Count += run
	b.Sum += time.Duration(l.sum.Load()).Seconds()
}
