package transport

import (
	"context"
	"fmt"
	"sync/atomic"
	"syscall"
	"time"
)

// call is one request running in its own goroutine, so that its caller can
// return on cancellation while pkg/sftp (which takes no context) waits on.
type call struct {
	state    atomic.Int32 // callRunning, then callDone or callAbandoned
	finished atomic.Bool  // fn has returned
	result   chan error
}

const (
	callRunning = iota
	callDone
	callAbandoned
)

// run executes fn (one request on c, already counted by begin) and waits
// for it or for ctx. If the caller gives up, fn keeps running; after(true)
// then runs in its goroutine, and the channel is killed if fn is still
// unanswered Options.Timeout after it started. after(false) runs when the
// caller got the result. fn must not touch the caller's memory unless its
// result was delivered.
func (h *Host) run(ctx context.Context, c *channel, fn func() error, after func(abandoned bool)) error {
	cl := &call{result: make(chan error, 1)}
	start := time.Now()
	go func() {
		err := fn()
		c.end(start, err)
		cl.finished.Store(true)
		delivered := cl.state.CompareAndSwap(callRunning, callDone)
		if after != nil {
			after(!delivered)
		}
		if delivered {
			cl.result <- err
		}
	}()
	select {
	case err := <-cl.result:
		return err
	case <-ctx.Done():
	}
	if !cl.state.CompareAndSwap(callRunning, callAbandoned) {
		return <-cl.result
	}
	h.watchdog(c, cl, start)
	return ctx.Err()
}

// watchdog kills c if the abandoned call is still unanswered once it has
// been outstanding for Options.Timeout: the link is presumed dead.
func (h *Host) watchdog(c *channel, cl *call, start time.Time) {
	expire := func() {
		if !cl.finished.Load() {
			h.log.Warn("sftp request timed out; recycling channel", "host", h.o.Host, "slot", c.slot)
			c.kill(context.DeadlineExceeded)
		}
	}
	if rem := h.o.Timeout - time.Since(start); rem > time.Millisecond {
		time.AfterFunc(rem, expire)
	} else {
		expire()
	}
}

// withDeadline bounds ctx by Options.Timeout.
func (h *Host) withDeadline(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, h.o.Timeout)
}

// do runs fn on the least busy live channel within the call deadline. A
// transport failure (not a server answer) kills the channel; if retry is set
// fn is then run again on another live channel while time remains, else the
// call fails with ENOTCONN.
func (h *Host) do(ctx context.Context, retry bool, fn func(c *channel) error) error {
	dctx, cancel := h.withDeadline(ctx)
	defer cancel()
	for {
		c, err := h.pick(dctx)
		if err != nil {
			return err
		}
		err = h.run(dctx, c, func() error { return fn(c) }, nil)
		if err == nil || isAnswer(err) || dctx.Err() != nil {
			return err
		}
		c.kill(err)
		if !retry {
			return transportErr(err)
		}
	}
}

// transportErr is the error for a request lost with its channel.
func transportErr(err error) error {
	return fmt.Errorf("%v: %w", err, syscall.ENOTCONN)
}

// bg runs fn on c with no waiter but with the watchdog, for cleanup
// requests (closing handles) whose outcome nobody waits for.
func (h *Host) bg(c *channel, fn func() error) {
	c.begin()
	go func() {
		ctx, cancel := h.withDeadline(context.Background())
		defer cancel()
		h.run(ctx, c, fn, nil)
	}()
}
