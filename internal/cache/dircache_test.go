package cache

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"sshfsm/internal/remote"
)

type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

func names(list ...string) Fetcher {
	return func(ctx context.Context, dir string) ([]remote.DirEntry, error) {
		var out []remote.DirEntry
		for i, n := range list {
			out = append(out, remote.DirEntry{Name: n, Attr: remote.Attr{Size: uint64(i + 1)}})
		}
		return out, nil
	}
}

func TestLookupStates(t *testing.T) {
	c := &clock{t: time.Unix(1000, 0)}
	d := New(time.Minute, c.now)
	ctx := context.Background()
	cases := []struct {
		name string
		want State
		size uint64
	}{
		{"a", Hit, 1}, {"b", Hit, 2}, {"zz", Absent, 0},
	}
	for _, tc := range cases {
		a, st, err := d.Lookup(ctx, "dir", tc.name, names("a", "b"))
		if err != nil || st != tc.want || a.Size != tc.size {
			t.Errorf("%s: %v %d, want %v %d", tc.name, st, a.Size, tc.want, tc.size)
		}
	}
	d.Set("dir", "new", remote.Attr{Size: 9})
	d.Remove("dir", "a")
	d.Forget("dir", "b")
	for name, want := range map[string]State{"new": Hit, "a": Absent, "b": Unknown} {
		if _, st := d.Peek("dir", name); st != want {
			t.Errorf("after mutation %s: %v, want %v", name, st, want)
		}
	}
	c.add(2 * time.Minute)
	if _, st := d.Peek("dir", "new"); st != Unknown {
		t.Errorf("expired listing answered %v", st)
	}
}

// heldFetch returns a fetcher of the listing {x} that counts its calls
// and answers once release is closed.
func heldFetch() (calls *atomic.Int32, release chan struct{}, fetch Fetcher) {
	calls, release = new(atomic.Int32), make(chan struct{})
	fetch = func(ctx context.Context, dir string) ([]remote.DirEntry, error) {
		calls.Add(1)
		<-release
		return []remote.DirEntry{{Name: "x"}}, nil
	}
	return calls, release, fetch
}

func TestSingleFlight(t *testing.T) {
	d := New(time.Minute, nil)
	calls, release, fetch := heldFetch()
	var wg sync.WaitGroup
	results := make([]State, 20)
	for i := range results {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			name := "x"
			if i%2 == 1 {
				name = "y"
			}
			_, results[i], _ = d.Lookup(context.Background(), "dir", name, fetch)
		}(i)
	}
	time.Sleep(50 * time.Millisecond)
	close(release)
	wg.Wait()
	if calls.Load() != 1 {
		t.Errorf("%d fetches, want 1", calls.Load())
	}
	for i, st := range results {
		want := Hit
		if i%2 == 1 {
			want = Absent
		}
		if st != want {
			t.Errorf("lookup %d: %v, want %v", i, st, want)
		}
	}
}

// A mutation while a listing is in flight must not be undone by it.
func TestRacedFetchNotStored(t *testing.T) {
	d := New(time.Minute, nil)
	started := make(chan struct{})
	release := make(chan struct{})
	fetch := func(ctx context.Context, dir string) ([]remote.DirEntry, error) {
		close(started)
		<-release
		return nil, nil // listed before "new" was created
	}
	done := make(chan State)
	go func() {
		_, st, _ := d.Lookup(context.Background(), "dir", "new", fetch)
		done <- st
	}()
	<-started
	d.Set("dir", "new", remote.Attr{})
	close(release)
	if st := <-done; st != Unknown {
		t.Errorf("raced lookup answered %v, want Unknown", st)
	}
	if _, st := d.Peek("dir", "new"); st != Unknown {
		t.Errorf("raced listing was stored: %v", st)
	}
}

func TestFailedFetchAndDisabled(t *testing.T) {
	d := New(time.Minute, nil)
	fail := func(ctx context.Context, dir string) ([]remote.DirEntry, error) {
		return nil, errors.New("no")
	}
	if _, st, err := d.Lookup(context.Background(), "dir", "x", fail); st != Unknown || err != nil {
		t.Errorf("failed fetch answered %v %v", st, err)
	}
	off := New(0, nil)
	if _, st, err := off.Lookup(context.Background(), "dir", "x", names("x")); st != Unknown || err != nil {
		t.Errorf("disabled cache answered %v %v", st, err)
	}
	d.Put("a", nil)
	d.Put("a/b", nil)
	d.Put("ab", nil)
	d.DropTree("a")
	for dir, want := range map[string]State{"a": Unknown, "a/b": Unknown, "ab": Absent} {
		if _, st := d.Peek(dir, "x"); st != want {
			t.Errorf("after DropTree, %s: %v, want %v", dir, st, want)
		}
	}
}

// A listing the remote did not answer is returned, to the fetching
// lookup and to those waiting for it; a refused one is not.
func TestUnansweredFetch(t *testing.T) {
	cases := []struct {
		err      error
		returned bool
	}{
		{fmt.Errorf("readdir h:d: %w", context.DeadlineExceeded), true},
		{fmt.Errorf("readdir h:d: %w", syscall.ETIMEDOUT), true},
		{fmt.Errorf("readdir h:d: %w", syscall.ENOTCONN), true},
		{context.Canceled, true},
		{fmt.Errorf("readdir h:d: %w", fs.ErrPermission), false},
		{syscall.EACCES, false},
		{syscall.EIO, false},
	}
	for _, c := range cases {
		d := New(time.Minute, nil)
		var calls atomic.Int32
		release := make(chan struct{})
		fetch := func(ctx context.Context, dir string) ([]remote.DirEntry, error) {
			calls.Add(1)
			<-release
			return nil, c.err
		}
		var wg sync.WaitGroup
		errs := make([]error, 5)
		for i := range errs {
			wg.Add(1)
			go func(i int) {
				defer wg.Done()
				var st State
				_, st, errs[i] = d.Lookup(context.Background(), "dir", "x", fetch)
				if st != Unknown {
					t.Errorf("%v: lookup answered %v", c.err, st)
				}
			}(i)
		}
		time.Sleep(20 * time.Millisecond)
		close(release)
		wg.Wait()
		if n := calls.Load(); n != 1 {
			t.Errorf("%v: %d fetches, want 1", c.err, n)
		}
		for i, err := range errs {
			if got := err != nil; got != c.returned || (got && !errors.Is(err, c.err)) {
				t.Errorf("%v: lookup %d returned %v, want returned=%v", c.err, i, err, c.returned)
			}
		}
	}
}

// A fetch ended by its caller's interrupt is retried by the lookups that
// waited for it, not reported to them.
func TestAbandonedFetchRetried(t *testing.T) {
	d := New(time.Minute, nil)
	started := make(chan struct{})
	var calls atomic.Int32
	fetch := func(ctx context.Context, dir string) ([]remote.DirEntry, error) {
		if calls.Add(1) == 1 {
			close(started)
			<-ctx.Done()
			return nil, ctx.Err()
		}
		return []remote.DirEntry{{Name: "x"}}, nil
	}
	ctx, cancel := context.WithCancel(context.Background())
	first := make(chan error, 1)
	go func() {
		_, _, err := d.Lookup(ctx, "dir", "x", fetch)
		first <- err
	}()
	<-started
	second := make(chan State, 1)
	go func() {
		_, st, err := d.Lookup(context.Background(), "dir", "x", fetch)
		if err != nil {
			t.Errorf("waiting lookup: %v", err)
		}
		second <- st
	}()
	time.Sleep(20 * time.Millisecond)
	cancel()
	if err := <-first; !errors.Is(err, context.Canceled) {
		t.Errorf("interrupted lookup: %v, want context.Canceled", err)
	}
	if st := <-second; st != Hit {
		t.Errorf("waiting lookup answered %v, want Hit", st)
	}
	if n := calls.Load(); n != 2 {
		t.Errorf("%d fetches, want 2", n)
	}
}
