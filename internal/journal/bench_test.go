package journal

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// BenchmarkAppend measures durable appends per second from 1 and 32
// goroutines, each append a small write (what an untar sends per file),
// and how many share one sync.
func BenchmarkAppend(b *testing.B) {
	for _, g := range []int{1, 32} {
		b.Run(fmt.Sprintf("goroutines=%d", g), func(b *testing.B) {
			var batches atomic.Int64
			j, _, err := Open(Options{Dir: b.TempDir(), onCommit: func(int) { batches.Add(1) }})
			if err != nil {
				b.Fatal(err)
			}
			defer j.Close()
			data := content("bench", 200)
			var next atomic.Int64
			var wg sync.WaitGroup
			b.ResetTimer()
			start := time.Now()
			for i := range g {
				wg.Add(1)
				go func() {
					defer wg.Done()
					c := Change{Op: Write, Host: "u@host:22", Branch: "/srv", Path: fmt.Sprintf("/src/dir%d/file.c", i), Data: data}
					for next.Add(1) <= int64(b.N) {
						if _, err := j.Append(context.Background(), c); err != nil {
							b.Error(err)
							return
						}
					}
				}()
			}
			wg.Wait()
			elapsed := time.Since(start)
			b.StopTimer()
			b.ReportMetric(float64(b.N)/elapsed.Seconds(), "appends/s")
			b.ReportMetric(float64(b.N)/float64(max(batches.Load(), 1)), "appends/sync")
		})
	}
}

// BenchmarkOrderUntar adds and drains what an untar of a tree sends: a
// directory, then a create, a write and a setattr for each of its files.
func BenchmarkOrderUntar(b *testing.B) {
	const files = 2000
	var cs []*Change
	seq := uint64(0)
	add := func(op Op, p string) {
		seq++
		cs = append(cs, &Change{Seq: seq, Op: op, Host: "h", Branch: "b", Path: p})
	}
	for d := range 20 {
		dir := fmt.Sprintf("/src/d%d", d)
		add(Mkdir, dir)
		for f := range files / 20 {
			p := fmt.Sprintf("%s/f%d.c", dir, f)
			add(Create, p)
			add(Write, p)
			add(Setattr, p)
		}
	}
	b.ResetTimer()
	for range b.N {
		o := NewOrder()
		for _, c := range cs {
			o.Add(c)
		}
		for o.Len() > 0 {
			for _, c := range o.Next() {
				o.Done(c.Seq)
			}
		}
	}
}
