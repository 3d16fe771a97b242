package contentcache

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// clock is a fake time that moves only when told.
type clock struct{ n atomic.Int64 }

func (k *clock) now() time.Time { return time.Unix(1800000000+k.n.Load(), 0) }
func (k *clock) tick()          { k.n.Add(1) }

// du is the space the files under dir use, each inode once.
func du(t testing.TB, dir string) int64 {
	seen := map[uint64]bool{}
	var total int64
	_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		var st unix.Stat_t
		if err != nil || d.IsDir() || unix.Lstat(p, &st) != nil || seen[st.Ino] {
			return nil
		}
		seen[st.Ino] = true
		total += st.Blocks * 512
		return nil
	})
	return total
}

const entryBlocks = 4

func TestEvictMaxSize(t *testing.T) {
	dir := t.TempDir()
	var clk clock
	size := int64(entryBlocks * bs)
	// Measure what one entry costs on disk.
	probe := openCache(t, t.TempDir(), nil)
	fillAll(t, entry(t, probe, testKey("probe", size)), source("probe", size))
	waitJobs(t, probe)
	per := probe.scan().total

	max := 10*per + per/2
	c := openCache(t, dir, func(o *Options) {
		o.MaxSize, o.now, o.touchEvery = max, clk.now, time.Nanosecond
	})
	<-c.scanned
	srcs := map[int]([]byte){}
	fill := func(i int) {
		clk.tick()
		srcs[i] = source(fmt.Sprint(i), size)
		e, err := c.Entry(testKey(fmt.Sprint(i), size))
		if err != nil {
			t.Fatal(err)
		}
		defer e.Release()
		fillAll(t, e, srcs[i])
		waitJobs(t, c)
	}
	for i := range 10 {
		fill(i)
	}
	// Use entry 0 again: it is now the most recent; hold entry 1 open.
	clk.tick()
	e0, err := c.Entry(testKey("0", size))
	if err != nil {
		t.Fatal(err)
	}
	if !checkRead(t, e0, srcs[0], 0, size) {
		t.Fatal("entry 0 missing before eviction")
	}
	e0.Release()
	held := entry(t, c, testKey("1", size))
	fill(10)
	fill(11)

	if got := c.Stats().Evictions; got == 0 {
		t.Fatal("nothing evicted past MaxSize")
	}
	if total := c.scan().total; total > max {
		t.Errorf("%d bytes stored, MaxSize %d", total, max)
	}
	if !held.Complete() || len(readAll(t, held, srcs[1])) != 0 {
		t.Error("an entry in use was evicted")
	}
	present := func(i int) bool {
		e := entry(t, c, testKey(fmt.Sprint(i), size))
		return len(readAll(t, e, srcs[i])) == 0
	}
	if present(2) {
		t.Error("least recently used entry 2 kept")
	}
	for _, i := range []int{0, 9, 10, 11} {
		if !present(i) {
			t.Errorf("recently used entry %d evicted", i)
		}
	}
}

func TestEvictMinFree(t *testing.T) {
	dir := t.TempDir()
	var clk clock
	const capacity = 1 << 20
	const minFree = capacity / 2
	c := openCache(t, dir, func(o *Options) {
		o.MinFree, o.now, o.touchEvery = minFree, clk.now, time.Nanosecond
		o.statfs = func(string) (int64, int64, error) {
			return capacity - du(t, filepath.Join(dir, "content")), capacity, nil
		}
	})
	size := int64(entryBlocks * bs)
	for i := range 60 {
		clk.tick()
		src := source(fmt.Sprint(i), size)
		e := entry(t, c, testKey(fmt.Sprint(i), size))
		fillAll(t, e, src)
		e.Release()
		// A new entry's directory and record are made before the check.
		if free := capacity - du(t, dir); free < minFree-3*4096 {
			t.Fatalf("after entry %d: %d bytes free, MinFree %d", i, free, minFree)
		}
	}
	waitJobs(t, c)
	if c.Stats().Evictions == 0 {
		t.Fatal("nothing evicted to keep MinFree")
	}
	for i := 55; i < 60; i++ {
		e := entry(t, c, testKey(fmt.Sprint(i), size))
		if len(readAll(t, e, source(fmt.Sprint(i), size))) != 0 {
			t.Errorf("recent entry %d evicted", i)
		}
	}
	// Content larger than the room there is, even after evicting all else.
	big := int64(capacity / 2)
	e := entry(t, c, testKey("big", big))
	err := e.Fill(source("big", big), 0)
	if !errors.Is(err, unix.ENOSPC) {
		t.Fatalf("Fill past MinFree: %v, want ENOSPC", err)
	}
	if len(e.Missing(0, big)) != 1 || checkRead(t, e, source("big", big), 0, bs) {
		t.Fatal("a refused Fill stored something")
	}
}
