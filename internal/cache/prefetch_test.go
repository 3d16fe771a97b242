package cache

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"sshfsm/internal/remote"
)

func TestPrefetch(t *testing.T) {
	d := New(time.Minute, nil)
	var calls atomic.Int32
	release := make(chan struct{})
	fetch := func(ctx context.Context, dir string) ([]remote.DirEntry, error) {
		calls.Add(1)
		<-release
		return []remote.DirEntry{{Name: "x"}}, nil
	}
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
