package contentcache

import (
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"
)

const mib = 1 << 20

// benchEntry is a complete 64 MiB entry in 1 MiB blocks, every block
// already checked by this process.
func benchEntry(b *testing.B) (*Entry, []byte) {
	c := openCache(b, b.TempDir(), func(o *Options) { o.BlockSize = mib })
	src := source("bench", 64*mib)
	e := entry(b, c, testKey("bench", int64(len(src))))
	fillAll(b, e, src)
	p := make([]byte, mib)
	for off := int64(0); off < int64(len(src)); off += mib {
		if _, ok, err := e.ReadAt(p, off); !ok || err != nil {
			b.Fatal("miss", err)
		}
	}
	return e, src
}

// BenchmarkReadAtHit reads present, checked blocks; "pread" is the same
// reads straight from the data file, for comparison.
func BenchmarkReadAtHit(b *testing.B) {
	for _, size := range []int{4 << 10, 128 << 10, 1 << 20} {
		b.Run(strconv.Itoa(size>>10)+"KiB", func(b *testing.B) {
			e, src := benchEntry(b)
			blocks := int64(len(src) / size)
			b.SetBytes(int64(size))
			b.RunParallel(func(pb *testing.PB) {
				p := make([]byte, size)
				for i := int64(0); pb.Next(); i++ {
					if _, ok, err := e.ReadAt(p, (i*7919)%blocks*int64(size)); !ok || err != nil {
						b.Error("miss", err)
						return
					}
				}
			})
		})
		b.Run(strconv.Itoa(size>>10)+"KiB-pread", func(b *testing.B) {
			e, src := benchEntry(b)
			f := e.s.files.d
			blocks := int64(len(src) / size)
			b.SetBytes(int64(size))
			b.RunParallel(func(pb *testing.PB) {
				p := make([]byte, size)
				for i := int64(0); pb.Next(); i++ {
					if _, err := f.ReadAt(p, (i*7919)%blocks*int64(size)); err != nil {
						b.Error(err)
						return
					}
				}
			})
		})
	}
}

// BenchmarkReadAtFirst is the first read of each block by a process: the
// whole block is read and checked.
func BenchmarkReadAtFirst(b *testing.B) {
	dir := b.TempDir()
	c := openCache(b, dir, func(o *Options) { o.BlockSize = mib })
	src := source("first", 64*mib)
	k := testKey("first", int64(len(src)))
	fillAll(b, entry(b, c, k), src)
	b.SetBytes(mib)
	p := make([]byte, 128<<10)
	var e *Entry
	b.ResetTimer()
	for i := range b.N {
		if i%64 == 0 {
			b.StopTimer()
			if e != nil {
				e.Release()
			}
			c2 := openCache(b, dir, func(o *Options) { o.BlockSize = mib })
			var err error
			if e, err = c2.Entry(k); err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
		}
		if _, ok, err := e.ReadAt(p, int64(i%64)*mib); !ok || err != nil {
			b.Fatal("miss", err)
		}
	}
	e.Release()
}

func BenchmarkFill(b *testing.B) {
	c := openCache(b, b.TempDir(), func(o *Options) { o.BlockSize = mib })
	data := source("fill", mib)
	const per = 256 // blocks per entry
	var e *Entry
	b.SetBytes(mib)
	b.ResetTimer()
	for i := range b.N {
		if i%per == 0 {
			if e != nil {
				e.Release()
			}
			var err error
			if e, err = c.Entry(testKey(fmt.Sprint("fill", i), per*mib)); err != nil {
				b.Fatal(err)
			}
		}
		if err := e.Fill(data, int64(i%per)*mib); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	e.Release()
}

// BenchmarkOpenScan measures the first scan (which Open starts in the
// background) of a store of $CONTENTCACHE_SCAN_ENTRIES entries (default
// 2000), and opening one entry of it.
func BenchmarkOpenScan(b *testing.B) {
	n := 2000
	if v, err := strconv.Atoi(os.Getenv("CONTENTCACHE_SCAN_ENTRIES")); err == nil {
		n = v
	}
	dir := b.TempDir()
	c := openCache(b, dir, nil)
	start := time.Now()
	for i := range n {
		src := source(fmt.Sprint("s", i), testBS)
		e, err := c.Entry(testKey(fmt.Sprint("s", i), testBS))
		if err != nil {
			b.Fatal(err)
		}
		if err := e.Fill(src, 0); err != nil {
			b.Fatal(err)
		}
		e.Release()
	}
	_ = c.Close()
	b.Logf("made %d entries in %v", n, time.Since(start))
	b.Run("scan", func(b *testing.B) {
		var opening time.Duration
		for b.Loop() {
			t0 := time.Now()
			c := openCache(b, dir, nil)
			opening += time.Since(t0)
			<-c.scanned
			if got := c.Stats().Entries; got != int64(n) {
				b.Fatalf("scan found %d entries, want %d", got, n)
			}
			_ = c.Close()
		}
		b.ReportMetric(float64(opening.Microseconds())/float64(b.N), "µs-in-Open/op")
	})
	b.Run("entry", func(b *testing.B) {
		c := openCache(b, dir, nil)
		for i := 0; b.Loop(); i++ {
			e, err := c.Entry(testKey(fmt.Sprint("s", i%n), testBS))
			if err != nil || !e.Complete() {
				b.Fatal("entry not found", err)
			}
			e.Release()
		}
	})
}
