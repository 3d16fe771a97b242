package contentcache

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"sync"
	"testing"

	"golang.org/x/sys/unix"
)

// workload is a set of files, some sharing content, and random work on
// them through a Cache that checks every byte it gets back.
type workload struct {
	keys []Key
	srcs [][]byte
}

func newWorkload(n, distinct int) *workload {
	w := &workload{}
	for i := range n {
		seed := i % distinct
		size := int64(seed*3+1)*bs + int64(seed*37)
		if seed%3 == 0 {
			size = 1 + int64(seed)*371 // small: one file (small.go)
		}
		w.keys = append(w.keys, testKey(fmt.Sprint("w", i), size))
		w.srcs = append(w.srcs, source(fmt.Sprint("content", seed), size))
	}
	return w
}

// step does one random operation on one random file and returns an error
// if the cache gave back anything but the file's content.
func (w *workload) step(c *Cache, rng *rand.Rand) error {
	i := rng.IntN(len(w.keys))
	k, src := w.keys[i], w.srcs[i]
	e, err := c.Entry(k)
	if err != nil {
		return err
	}
	defer e.Release()
	off := rng.Int64N(k.Size + 1)
	n := 1 + rng.Int64N(4*bs)
	switch op := rng.IntN(20); {
	case op < 8:
		return readCheck(e, src, off, n)
	case op < 15:
		for _, r := range e.Missing(off, n) {
			if err := e.Fill(src[r.Off:r.Off+r.Len], r.Off); err != nil && !errors.Is(err, unix.ENOSPC) {
				return err
			}
		}
		return readCheck(e, src, off, n)
	case op < 17:
		if err := e.VerifyAll(context.Background()); err != nil {
			return err
		}
		return verifiedCheck(e, src)
	case op < 19:
		j := rng.IntN(len(w.keys))
		if d, ok := c.ByDigest(sha256Sum(src), w.keys[j]); ok {
			defer d.Release()
			if !bytes.Equal(w.srcs[j], src) {
				return fmt.Errorf("ByDigest gave %s content of another", w.keys[j].Path)
			}
			return readCheck(d, src, 0, k.Size)
		}
	default:
		c.Forget(k.Host, k.Path)
	}
	return nil
}

func readCheck(e *Entry, src []byte, off, n int64) error {
	p := make([]byte, n)
	got, ok, err := e.ReadAt(p, off)
	if err != nil && !errors.Is(err, io.EOF) {
		return err
	}
	if ok && !bytes.Equal(p[:got], src[min(off, int64(len(src))):min(off+n, int64(len(src)))]) {
		return fmt.Errorf("%s: wrong data at %d (%d bytes)", e.s.dir, off, got)
	}
	return nil
}

func verifiedCheck(e *Entry, src []byte) error {
	f, ok := e.Verified()
	if !ok {
		return nil
	}
	defer f.Close()
	got, err := io.ReadAll(f)
	if err != nil {
		return err
	}
	if !bytes.Equal(got, src) {
		return fmt.Errorf("%s: Verified file holds other bytes", e.s.dir)
	}
	return nil
}

// checkStore checks every file of w in c: whatever hits is right, a
// Verified file is right, and filling what misses completes it. It returns
// how many blocks of each file hit before that.
func (w *workload) checkStore(t *testing.T, c *Cache) (hits []int) {
	t.Helper()
	for i, k := range w.keys {
		e := entry(t, c, k)
		hits = append(hits, int((k.Size+bs-1)/bs)-len(readAll(t, e, w.srcs[i])))
		if err := verifiedCheck(e, w.srcs[i]); err != nil {
			t.Fatal(err)
		}
		if err := e.VerifyAll(context.Background()); err != nil {
			t.Fatal(err)
		}
		if err := verifiedCheck(e, w.srcs[i]); err != nil {
			t.Fatal(err)
		}
		for _, r := range e.Missing(0, k.Size) {
			if err := e.Fill(w.srcs[i][r.Off:r.Off+r.Len], r.Off); err != nil {
				t.Fatal(err)
			}
		}
		if m := readAll(t, e, w.srcs[i]); len(m) != 0 {
			t.Fatalf("%s: blocks %v missing after filling", k.Path, m)
		}
		e.Release()
	}
	return hits
}

func TestTwoCachesConcurrently(t *testing.T) {
	dir := t.TempDir()
	w := newWorkload(12, 8)
	small := func(o *Options) { o.MaxSize = 200 << 10 }
	caches := []*Cache{openCache(t, dir, small), openCache(t, dir, small)}
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(g), 7))
			for range 400 {
				if err := w.step(caches[g%2], rng); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	for _, c := range caches {
		waitJobs(t, c)
	}
	if caches[0].Stats().Evictions+caches[1].Stats().Evictions == 0 {
		t.Error("the workload never evicted: MaxSize too large for the test")
	}
	w.checkStore(t, openCache(t, dir, nil))
}
