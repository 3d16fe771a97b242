package cache

import (
	"context"
	"errors"
	"sshfsm/internal/testenv"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"sshfsm/internal/remote"
)

func ents(list ...string) []remote.DirEntry {
	var out []remote.DirEntry
	for _, n := range list {
		out = append(out, remote.DirEntry{Name: n, Attr: remote.Attr{Mode: syscall.S_IFDIR | 0o755}})
	}
	return out
}

// countingFetch fails the test's expectations if called: it counts calls.
func countingFetch(n *atomic.Int32) Fetcher {
	return func(ctx context.Context, dir string) ([]remote.DirEntry, error) {
		n.Add(1)
		return ents("fetched"), nil
	}
}

// lookupAsync runs a Lookup and returns its result on a channel.
func lookupAsync(ctx context.Context, d *Dirs, dir, name string, fetch Fetcher) chan State {
	out := make(chan State, 1)
	go func() {
		_, st, _ := d.Lookup(ctx, dir, name, fetch)
		out <- st
	}()
	return out
}

func expectBlocked(t *testing.T, ch chan State) {
	t.Helper()
	select {
	case st := <-ch:
		t.Fatalf("returned %v while the bulk may still list the directory", st)
	case <-time.After(50 * time.Millisecond):
	}
}

func expectState(t *testing.T, ch chan State, want State) {
	t.Helper()
	select {
	case st := <-ch:
		if st != want {
			t.Fatalf("state %v, want %v", st, want)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("still waiting")
	}
}

func TestBulkPublishes(t *testing.T) {
	c := &clock{t: time.Unix(1000, 0)}
	d := New(time.Minute, c.now)
	b := d.StartBulk("top", 1)
	b.Publish("top/a", ents("x"))
	b.Publish("top", ents("a", "b"))
	b.Publish("elsewhere", ents("nope"))
	b.End(true)
	var n atomic.Int32
	if _, st, _ := d.Lookup(context.Background(), "top/a", "x", countingFetch(&n)); st != Hit || n.Load() != 0 {
		t.Fatalf("published listing: %v, %d fetches", st, n.Load())
	}
	if !d.TakePrefetched("top/a") || d.TakePrefetched("top/a") {
		t.Error("a published listing is prefetched until used once")
	}
	if _, ok := d.List("elsewhere"); ok {
		t.Error("published a directory outside the bulk's range")
	}
}

func TestBulkLookupWaitsForPublication(t *testing.T) {
	d := New(time.Minute, nil)
	b := d.StartBulk("", 2)
	var n atomic.Int32
	ch := lookupAsync(context.Background(), d, "a/b", "x", countingFetch(&n))
	expectBlocked(t, ch)
	b.Publish("a/b", ents("x"))
	expectState(t, ch, Hit)
	if n.Load() != 0 {
		t.Errorf("%d fetches: listed twice", n.Load())
	}
	// Beyond the bulk's depth nobody waits.
	if _, st, _ := d.Lookup(context.Background(), "a/b/c", "fetched", countingFetch(&n)); st != Hit || n.Load() != 1 {
		t.Errorf("below the range: %v, %d fetches", st, n.Load())
	}
	b.End(true)
}

// A directory the bulk passes without publishing (unreadable) is listed
// by its reader as soon as the bulk has left it.
func TestBulkWaitEndsWhenPassedOver(t *testing.T) {
	d := New(time.Minute, nil)
	b := d.StartBulk("", 3)
	var n atomic.Int32
	ch := lookupAsync(context.Background(), d, "a/denied", "fetched", countingFetch(&n))
	expectBlocked(t, ch)
	b.Publish("a/other", ents())
	expectBlocked(t, ch)
	b.Publish("a", ents("denied", "other"))
	expectState(t, ch, Hit)
	if n.Load() != 1 {
		t.Errorf("%d fetches, want the reader's own", n.Load())
	}
	// Asking later: no wait at all.
	if _, st, _ := d.Lookup(context.Background(), "a/denied/x", "fetched", countingFetch(&n)); st != Hit {
		t.Errorf("below a passed directory: %v", st)
	}
	b.End(true)
}

func TestBulkWaitEndsWithBulk(t *testing.T) {
	d := New(time.Minute, nil)
	b := d.StartBulk("", 3)
	var n atomic.Int32
	ch := lookupAsync(context.Background(), d, "a", "fetched", countingFetch(&n))
	expectBlocked(t, ch)
	b.End(false)
	expectState(t, ch, Hit)
	if d.StartBulk("", 3) == nil {
		t.Error("a failed bulk still counts as covering its range")
	}
}

func TestBulkWaitHonoursContext(t *testing.T) {
	d := New(time.Minute, nil)
	b := d.StartBulk("", 3)
	defer b.End(true)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
	defer cancel()
	var n atomic.Int32
	// The bulk never ends while the lookup waits: only its context can
	// end the wait.
	var err error
	testenv.Returns(t, "a lookup waiting for a bulk past its context", func() {
		_, _, err = d.Lookup(ctx, "a", "x", countingFetch(&n))
	})
	if !errors.Is(err, context.DeadlineExceeded) || n.Load() != 0 {
		t.Fatalf("got %v, %d fetches", err, n.Load())
	}
	wctx, wcancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
	defer wcancel()
	d.Wait(wctx, "a") // returns at the deadline
	if wctx.Err() == nil {
		t.Error("Wait returned before the bulk or the deadline")
	}
}

func TestBulkSkipsChangedDirectories(t *testing.T) {
	d := New(time.Minute, nil)
	b := d.StartBulk("", 3)
	var n atomic.Int32
	ch := lookupAsync(context.Background(), d, "a", "new", countingFetch(&n))
	expectBlocked(t, ch)
	d.Set("a", "new", remote.Attr{Size: 1}) // the mount created a/new
	expectState(t, ch, Absent)              // its own fetch lists "fetched" only
	if n.Load() != 1 {
		t.Errorf("%d fetches after the change, want 1", n.Load())
	}
	b.Publish("a", ents("old"))
	if _, st := d.Peek("a", "old"); st == Hit {
		t.Error("published a listing older than the mount's change")
	}
	d.Put("t/u", nil)
	d.DropTree("t")
	b.Publish("t/u/v", ents("w"))
	b.Publish("t/u", ents("v"))
	if _, ok := d.List("t/u/v"); ok {
		t.Error("published below a dropped tree")
	}
	b.Publish("", ents("a", "t"))
	if _, ok := d.List(""); !ok {
		t.Error("an unchanged directory was not published")
	}
	b.End(true)
}

func TestBulkKeepsListingInUse(t *testing.T) {
	d := New(time.Minute, nil)
	d.Put("a", ents("mine"))
	b := d.StartBulk("", 2)
	b.Publish("a", ents("theirs"))
	b.End(true)
	if _, st := d.Peek("a", "mine"); st != Hit {
		t.Error("a listing in use was replaced")
	}
	if d.TakePrefetched("a") {
		t.Error("a used listing became prefetched again")
	}
}

func TestBulkPrefetchSkipsPending(t *testing.T) {
	d := New(time.Minute, nil)
	b := d.StartBulk("top", 2)
	var n atomic.Int32
	done := make(chan struct{})
	d.Prefetch(context.Background(), "top/a", countingFetch(&n), func() { close(done) })
	<-done
	if n.Load() != 0 {
		t.Error("prefetched a directory the bulk is listing")
	}
	done = make(chan struct{})
	d.Prefetch(context.Background(), "other", countingFetch(&n), func() { close(done) })
	<-done
	if n.Load() != 1 {
		t.Error("a directory outside the bulk was not prefetched")
	}
	b.End(true)
}

func TestStartBulkCoverage(t *testing.T) {
	c := &clock{t: time.Unix(1000, 0)}
	d := New(time.Minute, c.now)
	b := d.StartBulk("r", 2)
	if b == nil || d.StartBulk("r", 2) != nil || d.StartBulk("r/a", 2) != nil {
		t.Fatal("a running bulk does not cover its range")
	}
	if d.StartBulk("r/a/b", 2) == nil {
		t.Error("a directory at the bulk's last level has unlisted subdirectories")
	}
	if d.StartBulk("s", 2) == nil {
		t.Error("a bulk covers a directory outside its range")
	}
	b.Publish("r/a", ents())
	b.End(true) // stopped before r/b and r: at its size limit
	if d.StartBulk("r/a", 1) != nil {
		t.Error("an ended bulk is not remembered for what it listed")
	}
	if d.StartBulk("r/b", 1) == nil {
		t.Error("an ended bulk covers a directory it did not reach")
	}
	c.add(2 * time.Minute)
	if d.StartBulk("r/a", 1) == nil {
		t.Error("a bulk whose listings expired is still remembered")
	}
	if New(0, nil).StartBulk("", 1) != nil {
		t.Error("bulk with the cache disabled")
	}
}
