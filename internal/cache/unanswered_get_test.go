package cache

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"sshfsm/internal/remote"
	"sshfsm/internal/testenv"
)

// spyContext reports when something first waits on its Done.
type spyContext struct {
	context.Context
	once    sync.Once
	waiting chan struct{}
}

func (c *spyContext) Done() <-chan struct{} {
	c.once.Do(func() { close(c.waiting) })
	return c.Context.Done()
}

// A Get that waited for another caller's listing which the remote did not
// answer returns that error instead of listing again: the remote would
// keep it waiting as long again, past the timeout of the request it
// serves.
func TestGetJoinedUnansweredFetch(t *testing.T) {
	d := New(time.Minute, nil)
	var calls atomic.Int32
	release := make(chan struct{})
	unanswered := fmt.Errorf("readdir h:d: %w", context.DeadlineExceeded)
	fetch := func(ctx context.Context, dir string) ([]remote.DirEntry, error) {
		if calls.Add(1) == 1 {
			<-release
			return nil, unanswered
		}
		return []remote.DirEntry{{Name: "x"}}, nil
	}
	first := make(chan error, 1)
	go func() {
		_, _, err := d.Get(context.Background(), "d", fetch)
		first <- err
	}()
	testenv.Eventually(t, "the first listing under way", func() bool { return calls.Load() == 1 })
	spy := &spyContext{Context: context.Background(), waiting: make(chan struct{})}
	second := make(chan error, 1)
	go func() {
		_, _, err := d.Get(spy, "d", fetch)
		second <- err
	}()
	<-spy.waiting // the second Get waits for the first listing
	close(release)
	if err := <-first; !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("the listing's own Get: %v, want its error", err)
	}
	if err := <-second; !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("a Get that waited for it: %v, want its error", err)
	}
	if n := calls.Load(); n != 1 {
		t.Errorf("%d listings, want 1", n)
	}
}
