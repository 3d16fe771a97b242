// Package interrupt decides which FUSE interrupts a request gives in to.
//
// The kernel sends FUSE_INTERRUPT for any signal delivered to the thread
// waiting on a request, and go-fuse then cancels the request's context.
// Most signals are ones a program expects its system calls to survive,
// as they survive them on a local disk: SIGURG (the Go runtime's
// preemption, many times a second), SIGCHLD, SIGALRM and other timers
// (git's progress display), SIGWINCH, job control (Ctrl-Z, then fg),
// SIGUSR1 (dd's progress report). Answering those with EINTR breaks
// programs that call stat or read with SA_RESTART handlers and never
// expect EINTR from a file. A signal that ends the program (SIGKILL, or
// one it neither catches nor ignores whose default action ends it) or
// that asks it to end (SIGINT, SIGTERM, SIGHUP, SIGQUIT, caught or not)
// must still end a call blocked on a dead link at once.
//
// Filter narrows a request's cancellation to the latter. The kernel sends
// one interrupt per request, so after ignoring one the request keeps
// looking at the caller's pending signals until it ends: a Ctrl-C that
// follows a preemption signal still ends the call. go-fuse also cancels
// every request in flight when the connection ends (aborted through
// /sys/fs/fuse/connections, or unmounted): then the kernel has answered
// every caller, and the request is cancelled too, so that the daemon can
// exit.
package interrupt

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/hanwen/go-fuse/v2/fuse"
)

// pollInterval is how often a request whose interrupt was ignored looks
// at its caller's pending signals again.
const pollInterval = 100 * time.Millisecond

// stopping are the signals that cancel a request: SIGKILL, which the
// kernel also queues for any fatal signal, and those that ask a program
// to end.
var stopping = sigmask(syscall.SIGKILL, syscall.SIGINT, syscall.SIGTERM,
	syscall.SIGHUP, syscall.SIGQUIT)

func sigmask(sigs ...syscall.Signal) uint64 {
	var m uint64
	for _, s := range sigs {
		m |= 1 << (uint(s) - 1)
	}
	return m
}

// Conn is the FUSE connection requests come on.
type Conn interface {
	// Gone reports that the kernel has ended the connection: nobody
	// waits for an answer any more.
	Gone() bool
}

// Filter returns a context whose cancellation follows ctx's only when the
// caller means to stop or conn is gone (see the package comment), and the
// request whose End must be called when the request ends. A context
// without a FUSE caller, or one already filtered, is returned as it is,
// with a nil request.
func Filter(ctx context.Context, conn Conn) (context.Context, *Request) {
	if _, ok := ctx.(*Request); ok {
		return ctx, nil
	}
	caller, ok := fuse.FromContext(ctx)
	if !ok || caller.Pid == 0 {
		return ctx, nil
	}
	r := &Request{Context: ctx, tid: caller.Pid, conn: conn}
	// A deadline of ctx is kept as the request's own: its passing is
	// not an interrupt to filter out (a request made in the time left
	// to another, which afterwards ignores cancellation but not time).
	if d, ok := ctx.Deadline(); ok {
		r.deadline = d
	}
	return r, r
}

// FilterWithin is Filter for a request that must be answered within
// limit of its start, however many server requests it takes one after
// another (a lookup that waits for a listing, then stats): past it the
// context is done and its Err is context.DeadlineExceeded. limit <= 0
// sets no bound.
func FilterWithin(ctx context.Context, conn Conn, limit time.Duration) (context.Context, *Request) {
	fctx, r := Filter(ctx, conn)
	if r != nil && limit > 0 {
		if d := time.Now().Add(limit); r.deadline.IsZero() || d.Before(r.deadline) {
			r.deadline = d
		}
	}
	return fctx, r
}

// Request is a filtered request's context. It starts watching its parent
// only when something waits on Done, so that requests answered from the
// caches cost no goroutine, and it is the one allocation Filter makes.
type Request struct {
	context.Context // the request's: deadline and values
	tid             uint32
	conn            Conn
	deadline        time.Time // FilterWithin's bound; zero: none

	mu    sync.Mutex
	done  chan struct{} // closed when the caller means to stop
	stop  chan struct{} // closed when the request ends
	ended bool
}

// Deadline is the earlier of the parent's deadline and FilterWithin's.
func (c *Request) Deadline() (time.Time, bool) {
	d, ok := c.Context.Deadline()
	if !c.deadline.IsZero() && (!ok || c.deadline.Before(d)) {
		return c.deadline, true
	}
	return d, ok
}

// expired reports whether FilterWithin's bound has passed.
func (c *Request) expired() bool {
	return !c.deadline.IsZero() && !time.Now().Before(c.deadline)
}

// timer returns a channel that fires at FilterWithin's bound (nil
// without one) and the function that stops it.
func (c *Request) timer() (<-chan time.Time, func() bool) {
	if c.deadline.IsZero() {
		return nil, func() bool { return false }
	}
	t := time.NewTimer(time.Until(c.deadline))
	return t.C, t.Stop
}

func (c *Request) Done() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.done == nil {
		c.done = make(chan struct{})
		if !c.ended {
			c.stop = make(chan struct{})
			go c.watch(c.done, c.stop)
		}
	}
	return c.done
}

// Await waits until ch is closed (nil) or the caller means to stop
// (context.Canceled). It is Done without its cost: it watches the request
// with a goroutine of its own only once the kernel has interrupted it, not
// for every request that waits on the server.
func (c *Request) Await(ch <-chan struct{}) error {
	expiry, stop := c.timer()
	defer stop()
	select {
	case <-ch:
		return nil
	case <-expiry:
		return context.DeadlineExceeded
	case <-c.Context.Done():
	}
	select {
	case <-ch:
		return nil
	case <-c.Done():
		if c.expired() {
			return context.DeadlineExceeded
		}
		return context.Canceled
	}
}

func (c *Request) Err() error {
	if c.expired() {
		return context.DeadlineExceeded
	}
	if c.Context.Err() == nil {
		return nil // not interrupted: no need to start watching
	}
	select {
	case <-c.Done():
		return context.Canceled
	default:
		return nil
	}
}

// End stops watching the request, which has been answered. It does
// nothing on a nil Request.
func (c *Request) End() {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.ended = true
	if c.stop != nil {
		close(c.stop)
		c.stop = nil
	}
}

func (c *Request) watch(done, stop chan struct{}) {
	expiry, stopExpiry := c.timer()
	defer stopExpiry()
	select {
	case <-c.Context.Done():
	case <-expiry:
		close(done)
		return
	case <-stop:
		return
	}
	t := time.NewTicker(pollInterval)
	defer t.Stop()
	for !meant(c.tid) && !c.conn.Gone() {
		select {
		case <-t.C:
		case <-expiry:
			close(done)
			return
		case <-stop:
			return
		}
	}
	close(done)
}

// meant reports whether thread tid has a pending signal, not blocked,
// that should end its file system call: one of stopping, or one whose
// default action ends the process and that the process neither catches
// nor ignores (the kernel does not always queue SIGKILL for those: not
// for a signal that dumps core, nor for a traced process). A thread whose
// state cannot be read (gone, or outside this PID namespace) is taken to
// mean it.
func meant(tid uint32) bool {
	status, err := os.ReadFile("/proc/" + strconv.FormatUint(uint64(tid), 10) + "/status")
	if err != nil {
		return true
	}
	s, err := parseStatus(status)
	if err != nil {
		return true
	}
	pending := (s.sigPnd | s.shdPnd) &^ s.sigBlk
	return pending&(stopping|fatalByDefault&^(s.sigCgt|s.sigIgn)) != 0
}

// fatalByDefault are the signals whose default action terminates the
// process, with or without a core dump: all but those ignored by default
// and job control.
var fatalByDefault = ^sigmask(syscall.SIGCHLD, syscall.SIGCONT, syscall.SIGURG,
	syscall.SIGWINCH, syscall.SIGSTOP, syscall.SIGTSTP, syscall.SIGTTIN, syscall.SIGTTOU)

// signalState is a thread's signal masks from /proc/TID/status: pending
// for the thread and for its process, blocked, ignored and caught.
type signalState struct {
	sigPnd, shdPnd, sigBlk, sigIgn, sigCgt uint64
}

func parseStatus(status []byte) (signalState, error) {
	var s signalState
	fields := map[string]*uint64{"SigPnd": &s.sigPnd, "ShdPnd": &s.shdPnd,
		"SigBlk": &s.sigBlk, "SigIgn": &s.sigIgn, "SigCgt": &s.sigCgt}
	found := 0
	sc := bufio.NewScanner(bytes.NewReader(status))
	for sc.Scan() {
		name, value, ok := bytes.Cut(sc.Bytes(), []byte(":"))
		if !ok {
			continue
		}
		if dst := fields[string(name)]; dst != nil {
			v, err := strconv.ParseUint(string(bytes.TrimSpace(value)), 16, 64)
			if err != nil {
				return signalState{}, fmt.Errorf("%s: %w", name, err)
			}
			*dst = v
			found++
		}
	}
	if found != len(fields) {
		return signalState{}, fmt.Errorf("status has %d of the %d signal masks", found, len(fields))
	}
	return s, nil
}
