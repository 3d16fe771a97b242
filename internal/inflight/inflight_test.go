package inflight

import (
	"sync"
	"testing"
	"time"
)

// fakeClock is a clock the test moves by hand.
type fakeClock struct {
	mu sync.Mutex
	t  int64
}

func (c *fakeClock) now() int64 { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *fakeClock) add(d time.Duration) {
	c.mu.Lock()
	c.t += int64(d)
	c.mu.Unlock()
}

func TestOldestIsTheEarliestUnended(t *testing.T) {
	clk := &fakeClock{t: 1e18}
	tb := &Table{now: clk.now}
	if s := tb.Oldest(); s.Count != 0 || s.Age != 0 {
		t.Fatalf("empty table: %+v", s)
	}
	a := tb.Begin(7, 1)
	clk.add(time.Second)
	b := tb.Begin(7, 2) // same hint: another slot
	clk.add(2 * time.Second)
	c := tb.Begin(100, 3)
	if a == b {
		t.Fatalf("two requests share slot %d", a)
	}
	if s := tb.Oldest(); s.Count != 3 || s.Age != 3*time.Second || s.Kind != 1 {
		t.Fatalf("three in flight: %+v, want count 3, age 3s, kind 1", s)
	}
	tb.End(a)
	if s := tb.Oldest(); s.Count != 2 || s.Age != 2*time.Second || s.Kind != 2 {
		t.Fatalf("after the oldest ended: %+v, want count 2, age 2s, kind 2", s)
	}
	tb.End(b)
	tb.End(c)
	if s := tb.Oldest(); s.Count != 0 || s.Age != 0 {
		t.Fatalf("all ended: %+v", s)
	}
}

func TestFullTableCountsOverflow(t *testing.T) {
	clk := &fakeClock{t: 1e18}
	tb := &Table{now: clk.now}
	toks := make([]Token, 0, Slots+2)
	for i := range Slots + 2 {
		toks = append(toks, tb.Begin(uint64(i), 5))
	}
	clk.add(time.Minute)
	if s := tb.Oldest(); s.Count != Slots+2 || s.Overflow != 2 || s.Age != time.Minute {
		t.Fatalf("full table: %+v", s)
	}
	for _, tok := range toks {
		tb.End(tok)
	}
	if s := tb.Oldest(); s.Count != 0 || s.Overflow != 0 {
		t.Fatalf("all ended: %+v", s)
	}
}

func TestConcurrentRequests(t *testing.T) {
	var tb Table
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 1000 {
				tok := tb.Begin(uint64(g*1000+i), int32(g))
				tb.Oldest()
				tb.End(tok)
			}
		}()
	}
	wg.Wait()
	if s := tb.Oldest(); s.Count != 0 {
		t.Fatalf("all ended: %+v", s)
	}
}

func BenchmarkBeginEnd(b *testing.B) {
	var tb Table
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		i := uint64(0)
		for pb.Next() {
			i += 2
			tb.End(tb.Begin(i, 1))
		}
	})
}
