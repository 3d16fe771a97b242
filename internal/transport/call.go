package transport

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"syscall"
	"time"
)

// Cancellation. The FUSE layer cancels a call's ctx on FUSE_INTERRUPT when
// the signal behind it is fatal or asks the caller to end (SIGINT, SIGTERM,
// SIGHUP, SIGQUIT); see package interrupt. What a call does with it depends on where the request is:
//
//   - Not yet sent (waiting for a live channel or for a handle's re-open,
//     or ctx already done when it was about to go): the call fails at once
//     with an error wrapping ctx.Err(). Nothing happened on the server, so
//     EINTR is the truth.
//   - A mutation already sent (create/open with O_CREATE, O_TRUNC or
//     O_EXCL, mkdir, remove, rmdir, rename, symlink, link, setattr,
//     truncate, file Close, Sync) ignores cancellation from then on and
//     waits for its answer, and for the probes that explain a failure,
//     until the call deadline: the caller gets the real result, not EINTR
//     for something the server did (which os would retry into ENOENT or
//     EEXIST). A fatal signal during such a call is therefore delivered
//     only when the answer comes, at most Options.Timeout later.
//   - Read-only requests and WriteAt (pwrite is idempotent; the caller
//     re-sends it) are abandoned as soon as ctx is done.
//
// The call deadline is the earlier of ctx's deadline and Options.Timeout
// after the call began; a request that reaches it fails with
// context.DeadlineExceeded and its channel is recycled if the request is
// still unanswered Options.Timeout after it was sent.

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

// run sends fn (one request on c, already counted by begin) and waits for
// it or for ctx; a mutation waits until ctx's deadline regardless of its
// cancellation. If the caller gives up, fn keeps running; after(true) then
// runs in its goroutine, and the channel is killed if fn is still
// unanswered Options.Timeout after it started. after(false) runs when the
// caller got the result. fn must not touch the caller's memory unless its
// result was delivered.
func (h *Host) run(ctx context.Context, c *channel, k reqKind, fn func() error, after func(abandoned bool)) error {
	if k == mutation {
		var cancel context.CancelFunc
		ctx, cancel = detach(ctx)
		defer cancel()
	}
	cl := &call{result: make(chan error, 1)}
	start := time.Now()
	age := h.ages.Begin(uint64(start.UnixNano()), 0)
	sharedWorkers().do(func() {
		err := fn()
		h.ages.End(age)
		c.end(start, err)
		cl.finished.Store(true)
		delivered := cl.state.CompareAndSwap(callRunning, callDone)
		if after != nil {
			after(!delivered)
		}
		if delivered {
			cl.result <- err
		}
	})
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

// deadline is the call deadline of a call beginning now: the earlier of
// ctx's and Options.Timeout from now.
func (h *Host) deadline(ctx context.Context) time.Time {
	d := time.Now().Add(h.o.Timeout)
	if cd, ok := ctx.Deadline(); ok && cd.Before(d) {
		return cd
	}
	return d
}

// withDeadline bounds ctx by Options.Timeout.
func (h *Host) withDeadline(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, h.o.Timeout)
}

// detach returns ctx without its cancellation but with its deadline: the
// wait of a mutation that was sent.
func detach(ctx context.Context) (context.Context, context.CancelFunc) {
	d := context.WithoutCancel(ctx)
	if dl, ok := ctx.Deadline(); ok {
		return context.WithDeadline(d, dl)
	}
	return context.WithCancel(d)
}

// gaveUp reports whether err is the end of a call's wait (cancelled or
// past its deadline) rather than an answer or a transport failure.
func gaveUp(err error) bool {
	return errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)
}

// reqKind says how a request meets cancellation and transport failures.
type reqKind int

const (
	// idempotent requests (read-only ones, WriteAt) are abandoned on
	// cancellation and may be sent again after a transport failure.
	idempotent reqKind = iota
	// mutation requests are waited for once sent; Host.do never sends
	// one again.
	mutation
)

// do runs fn on the least busy live channel within the call deadline. A
// transport failure (not a server answer) kills the channel; an idempotent
// fn is then run again on another live channel while time remains, a
// mutation fails with ENOTCONN (it may or may not have taken effect).
func (h *Host) do(ctx context.Context, k reqKind, fn func(c *channel) error) error {
	dctx, cancel := h.withDeadline(ctx)
	defer cancel()
	for {
		c, err := h.pick(dctx)
		if err != nil {
			return err
		}
		err = h.run(dctx, c, k, func() error { return fn(c) }, nil)
		if err == nil || isAnswer(err) || gaveUp(err) {
			return err
		}
		c.kill(err)
		if k == mutation {
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
		h.run(ctx, c, idempotent, fn, nil)
	}()
}
