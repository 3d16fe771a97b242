package fusefs

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"
)

// TestListingTimeout checks that a lookup whose directory listing the
// remote did not answer fails with that error after one remote attempt,
// instead of spending a second timeout on a single stat; and that a
// listing the server refused still falls back to one.
func TestListingTimeout(t *testing.T) {
	cases := []struct {
		name   string
		err    error
		want   syscall.Errno
		lstats int64
	}{
		{"deadline", context.DeadlineExceeded, syscall.ETIMEDOUT, 0},
		{"connection lost", syscall.ENOTCONN, syscall.ENOTCONN, 0},
		{"refused", syscall.EACCES, syscall.ENOENT, 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			hook := &hookRemote{}
			hook.fail = func(op, p string) error {
				if op == "readdir" && p == "d" {
					time.Sleep(100 * time.Millisecond)
					return fmt.Errorf("readdir inprocess:%s: %w", p, c.err)
				}
				return nil
			}
			tm := mountWith(t, defaultOpts(), hook.wrap)
			if err := os.Mkdir(filepath.Join(tm.dir, "d"), 0o755); err != nil {
				t.Fatal(err)
			}
			if _, err := os.Stat(tm.path("d")); err != nil {
				t.Fatal(err)
			}
			dirs0, lstats0, stats0 := hook.readDirs.Load(), hook.lstats.Load(), hook.stats.Load()
			var st syscall.Stat_t
			if err := syscall.Lstat(tm.path("d/never-seen"), &st); err != c.want {
				t.Errorf("lstat: %v, want %v", err, c.want)
			}
			if got := hook.readDirs.Load() - dirs0; got != 1 {
				t.Errorf("%d listings, want 1", got)
			}
			if got := hook.lstats.Load() - lstats0 + hook.stats.Load() - stats0; got != c.lstats {
				t.Errorf("%d single stats after the listing, want %d", got, c.lstats)
			}
		})
	}
}

// TestListingTimeoutShared checks that lookups waiting for the same
// listing all get its timeout, with no request of their own.
func TestListingTimeoutShared(t *testing.T) {
	hook := &hookRemote{}
	hook.fail = func(op, p string) error {
		if op == "readdir" && p == "d" {
			time.Sleep(300 * time.Millisecond)
			return context.DeadlineExceeded
		}
		return nil
	}
	tm := mountWith(t, defaultOpts(), hook.wrap)
	if err := os.Mkdir(filepath.Join(tm.dir, "d"), 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(tm.path("d")); err != nil {
		t.Fatal(err)
	}
	dirs0, lstats0 := hook.readDirs.Load(), hook.lstats.Load()
	const n = 8
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			var st syscall.Stat_t
			if err := syscall.Lstat(tm.path(fmt.Sprintf("d/x%d", i)), &st); err != syscall.ETIMEDOUT {
				t.Errorf("lstat x%d: %v, want ETIMEDOUT", i, err)
			}
		}(i)
	}
	wg.Wait()
	if got := hook.readDirs.Load() - dirs0; got != 1 {
		t.Errorf("%d listings for %d concurrent lookups, want 1", got, n)
	}
	if got := hook.lstats.Load() - lstats0; got != 0 {
		t.Errorf("%d single stats, want 0", got)
	}
}
