package cache

import (
	"context"
	"testing"
	"time"

	"sshfsm/internal/remote"
)

func TestPrefetch(t *testing.T) {
	d := New(time.Minute, nil)
	calls, release, fetch := heldFetch()
	done := make(chan struct{})
	d.Prefetch(context.Background(), "p", fetch, func() { close(done) })
	// A second prefetch of a listing on its way starts nothing.
	again := make(chan struct{})
	d.Prefetch(context.Background(), "p", fetch, func() { close(again) })
	<-again
	// A lookup in p waits for the prefetch instead of fetching.
	got := make(chan State)
	go func() {
		_, st, _ := d.Lookup(context.Background(), "p", "x", fetch)
		got <- st
	}()
	time.Sleep(20 * time.Millisecond)
	close(release)
	<-done
	if st := <-got; st != Hit {
		t.Errorf("lookup during prefetch: %v, want Hit", st)
	}
	if n := calls.Load(); n != 1 {
		t.Errorf("%d fetches, want 1", n)
	}
	if !d.TakePrefetched("p") {
		t.Error("listing stored by Prefetch not reported as prefetched")
	}
	if d.TakePrefetched("p") {
		t.Error("prefetched listing reported twice")
	}
	// A fresh listing is not fetched again.
	d.Prefetch(context.Background(), "p", fetch, nil)
	if n := calls.Load(); n != 1 {
		t.Errorf("%d fetches after prefetching a fresh listing, want 1", n)
	}
	if d.TakePrefetched("q") {
		t.Error("unknown directory reported as prefetched")
	}
}

// Get answers from a fresh listing, from a fetch under way, or by
// fetching once itself.
func TestGet(t *testing.T) {
	d := New(time.Minute, nil)
	calls, release, fetch := heldFetch()
	done := make(chan struct{})
	d.Prefetch(context.Background(), "p", fetch, func() { close(done) })
	type result struct {
		ents   []remote.DirEntry
		cached bool
		err    error
	}
	got := make(chan result)
	go func() {
		ents, cached, err := d.Get(context.Background(), "p", fetch)
		got <- result{ents, cached, err}
	}()
	time.Sleep(20 * time.Millisecond)
	close(release)
	<-done
	if r := <-got; r.err != nil || !r.cached || len(r.ents) != 1 || r.ents[0].Name != "x" {
		t.Errorf("Get during a prefetch: %+v, want the prefetched listing", r)
	}
	if _, cached, err := d.Get(context.Background(), "p", fetch); err != nil || !cached {
		t.Errorf("Get of a fresh listing: cached %v, %v", cached, err)
	}
	if _, cached, err := d.Get(context.Background(), "q", fetch); err != nil || cached {
		t.Errorf("Get of an unknown directory: cached %v, %v", cached, err)
	}
	if n := calls.Load(); n != 2 {
		t.Errorf("%d fetches, want 2 (p once, q once)", n)
	}
}
