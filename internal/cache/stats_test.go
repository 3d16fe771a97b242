package cache

import (
	"context"
	"sync"
	"testing"
	"time"

	"sshfsm/internal/remote"
)

func TestStatsCountAnswers(t *testing.T) {
	c := &clock{t: time.Unix(1000, 0)}
	d := New(time.Minute, c.now)
	ctx := context.Background()
	fetch := names("a", "b")

	d.Lookup(ctx, "dir", "a", fetch)  // fetches: listing and attribute miss
	d.Lookup(ctx, "dir", "b", fetch)  // kept listing, attribute hit
	d.Lookup(ctx, "dir", "zz", fetch) // kept listing, negative hit
	d.Forget("dir", "a")
	d.Lookup(ctx, "dir", "a", fetch) // kept listing, stale entry: attribute miss
	d.Peek("dir", "b")               // attribute hit
	d.Peek("dir", "zz")              // a stat of a path the listing lacks goes to the remote
	d.Peek("other", "x")             // no listing: attribute miss
	d.List("dir")                    // stale entry: not answered, not counted
	d.Set("dir", "a", remote.Attr{})
	d.List("dir") // listing hit
	d.Fetch(ctx, "other", fetch)

	want := Stats{Enabled: true, ListingHits: 4, ListingMisses: 2, AttrHits: 2, AttrMisses: 4, NegativeHits: 1}
	if got := d.Stats(); got != want {
		t.Errorf("stats\n got %+v\nwant %+v", got, want)
	}
}

// Lookups waiting for one shared fetch each count one miss.
func TestStatsSharedFetch(t *testing.T) {
	d := New(time.Minute, nil)
	release := make(chan struct{})
	started := make(chan struct{})
	fetch := func(ctx context.Context, dir string) ([]remote.DirEntry, error) {
		close(started)
		<-release
		return []remote.DirEntry{{Name: "a"}}, nil
	}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); d.Lookup(context.Background(), "dir", "a", fetch) }()
	<-started
	for range 3 {
		wg.Add(1)
		go func() { defer wg.Done(); d.Lookup(context.Background(), "dir", "a", fetch) }()
	}
	for deadline := time.Now().Add(5 * time.Second); d.Stats().ListingMisses < 4; {
		if time.Now().After(deadline) {
			close(release)
			wg.Wait()
			t.Fatalf("waiting lookups were not counted: %+v", d.Stats())
		}
		time.Sleep(time.Millisecond)
	}
	close(release)
	wg.Wait()
	if got := d.Stats(); got.ListingMisses != 4 || got.AttrMisses != 4 || got.ListingHits != 0 || got.AttrHits != 0 {
		t.Errorf("stats %+v, want 4 listing and attribute misses and nothing else", got)
	}
}

func TestStatsDisabled(t *testing.T) {
	d := New(0, nil)
	d.Lookup(context.Background(), "dir", "a", names("a"))
	d.Peek("dir", "a")
	if got := d.Stats(); got != (Stats{}) {
		t.Errorf("disabled cache counted %+v", got)
	}
	var none *Dirs
	if got := none.Stats(); got != (Stats{}) {
		t.Errorf("nil cache: %+v", got)
	}
}
