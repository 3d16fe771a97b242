// Package redial stands in for a host that is not connected: one that
// could not be reached when the mount started, or one whose connection
// waits for the first access (delay_connect). It dials in the background
// with backoff, or at the first call, and serves through the host once it
// answers. Unions and replica sets skip it while it is down, so one
// unreachable host never blocks the others, and its files appear when it
// comes back, with no remount.
package redial

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strings"
	"sync"
	"syscall"
	"time"

	"sshfsm/internal/remote"
	"sshfsm/internal/transport"
)

// Backoff bounds between dial attempts, and how long a failed dial
// answers the calls that come after it (OnFirstUse) before one dials
// again: a process retrying in a loop must not start an ssh each time
// (variables for tests).
var (
	minBackoff = time.Second
	maxBackoff = 30 * time.Second
	retryAfter = time.Second
)

// Dial connects the host; it is called until it succeeds or the Remote is
// closed.
type Dial func(ctx context.Context) (*transport.Host, error)

// Remote is a host that connects in the background or at first use.
type Remote struct {
	name string
	dial Dial
	log  *slog.Logger
	ctx  context.Context
	stop context.CancelFunc
	wg   sync.WaitGroup // the dials and the retry loop
	// onUse (OnFirstUse): calls dial and wait for the host, up to wait.
	onUse bool
	wait  time.Duration

	// mu guards the fields below.
	mu      sync.Mutex
	host    *transport.Host // nil until connected
	lastErr error
	failed  bool          // a dial has failed (onUse: until then the host counts as up)
	lastAt  time.Time     // when the last dial failed
	cur     *attempt      // the dial in progress, nil if none
	looping bool          // the retry loop runs
	closed  bool          // Close was called: no dial starts any more
	changed chan struct{} // closed when Up changes while host is nil
}

// attempt is one dial, which any number of callers may wait for.
type attempt struct {
	done chan struct{} // closed when err is set
	err  error
}

var (
	_ remote.Remote = (*Remote)(nil)
	_ remote.Health = (*Remote)(nil)
)

// New starts dialling name with dial in the background; first is the error
// of the attempt that already failed. Until connected, its calls fail at
// once with ENOTCONN.
func New(name string, dial Dial, first error, log *slog.Logger) *Remote {
	r := newRemote(name, dial, log)
	r.lastErr, r.failed = first, true
	r.mu.Lock()
	r.startLoop()
	r.mu.Unlock()
	return r
}

// OnFirstUse dials name at the first call (delay_connect). Every call
// while the host is not connected joins the dial in progress, or starts
// one, and waits for it up to wait; it then fails with an errno that says
// why (see dialErrno). Until a dial fails the host counts as up, so that
// unions and replica sets send it their calls; after a failure it is down
// and dialled again in the background, as New's is.
func OnFirstUse(name string, dial Dial, wait time.Duration, log *slog.Logger) *Remote {
	r := newRemote(name, dial, log)
	r.onUse, r.wait = true, wait
	return r
}

func newRemote(name string, dial Dial, log *slog.Logger) *Remote {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	r := &Remote{name: name, dial: dial, log: log, changed: make(chan struct{})}
	r.ctx, r.stop = context.WithCancel(context.Background())
	return r
}

// startLoop starts the retry loop unless it runs; r.mu is held.
func (r *Remote) startLoop() {
	if r.looping || r.closed {
		return
	}
	r.looping = true
	r.wg.Add(1)
	go r.loop()
}

// loop dials with backoff until the host connects or r is closed.
func (r *Remote) loop() {
	defer r.wg.Done()
	backoff := minBackoff
	for {
		t := time.NewTimer(backoff)
		select {
		case <-r.ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		a := r.attempt(false)
		<-a.done
		if a.err == nil || r.ctx.Err() != nil {
			return
		}
		backoff = min(2*backoff, maxBackoff)
	}
}

// attempt returns the dial in progress, starting one if there is none.
// Once connected or closed, it returns a finished attempt; so it does for
// a call within retryAfter of a failed dial, with that dial's error.
func (r *Remote) attempt(call bool) *attempt {
	r.mu.Lock()
	defer r.mu.Unlock()
	switch {
	case r.host != nil:
		return finished(nil)
	case r.closed:
		return finished(fmt.Errorf("%s: %w", r.name, net.ErrClosed))
	case r.cur == nil && call && r.failed && time.Since(r.lastAt) < retryAfter:
		return finished(r.lastErr)
	case r.cur == nil:
		r.cur = &attempt{done: make(chan struct{})}
		r.wg.Add(1)
		go r.run(r.cur)
	}
	return r.cur
}

func finished(err error) *attempt {
	a := &attempt{done: make(chan struct{}), err: err}
	close(a.done)
	return a
}

// run dials once and publishes the outcome.
func (r *Remote) run(a *attempt) {
	defer r.wg.Done()
	h, err := r.dial(r.ctx)
	r.mu.Lock()
	r.cur = nil
	var extra *transport.Host // connected after Close: to close
	switch {
	case err == nil && r.closed:
		extra, err = h, fmt.Errorf("%s: %w", r.name, net.ErrClosed)
	case err == nil:
		r.host = h
		close(r.changed)
	default:
		if r.onUse && !r.failed {
			// Up turns false: unions stop waiting for this host.
			close(r.changed)
			r.changed = make(chan struct{})
		}
		again := r.failed && r.lastErr != nil && r.lastErr.Error() == err.Error()
		r.lastErr, r.failed, r.lastAt = err, true, time.Now()
		if again {
			r.log.Debug("host still unreachable", "host", r.name, "err", err)
		} else {
			r.log.Warn("cannot connect; retrying in the background", "host", r.name, "err", err)
		}
		r.startLoop()
	}
	a.err = err
	close(a.done)
	r.mu.Unlock()
	if extra != nil {
		extra.Close()
	}
	if err == nil {
		r.log.Info("host connected", "host", r.name)
	}
}

// Host returns the connected host, nil while it is unreachable.
func (r *Remote) Host() *transport.Host {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.host
}

// LastError is why the host is unreachable (nil once connected, and
// before the first dial of OnFirstUse).
func (r *Remote) LastError() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.host != nil {
		return nil
	}
	return r.lastErr
}

// Up reports whether the host is connected and has a live channel, or
// waits for its first dial (OnFirstUse).
func (r *Remote) Up() bool {
	r.mu.Lock()
	h, untried := r.host, r.onUse && !r.failed
	r.mu.Unlock()
	if h == nil {
		return untried
	}
	return h.Up()
}

// Changed fires when the host connects (or, under OnFirstUse, when its
// first dial fails), then at each change of its channels.
func (r *Remote) Changed() <-chan struct{} {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.host != nil {
		return r.host.Changed()
	}
	return r.changed
}

// remote returns the connected host's tree. Under OnFirstUse it dials
// (or joins the dial in progress) and waits; otherwise it fails at once
// with ENOTCONN.
func (r *Remote) remote(ctx context.Context) (remote.Remote, error) {
	if h := r.Host(); h != nil {
		return h.Remote(), nil
	}
	if !r.onUse {
		return r.connected()
	}
	a := r.attempt(true)
	var expire <-chan time.Time
	if r.wait > 0 {
		t := time.NewTimer(r.wait)
		defer t.Stop()
		expire = t.C
	}
	select {
	case <-a.done:
		if a.err != nil {
			return nil, fmt.Errorf("connecting to %s: %v: %w", r.name, a.err, dialErrno(a.err))
		}
		return r.connected()
	case <-ctx.Done():
		return nil, fmt.Errorf("connecting to %s: %w", r.name, ctx.Err())
	case <-expire:
		return nil, fmt.Errorf("%s did not connect within %v: %w", r.name, r.wait, syscall.ETIMEDOUT)
	}
}

// connected returns the connected host's tree, or ENOTCONN.
func (r *Remote) connected() (remote.Remote, error) {
	if h := r.Host(); h != nil {
		return h.Remote(), nil
	}
	return nil, fmt.Errorf("%s is unreachable: %w", r.name, syscall.ENOTCONN)
}

// dialErrno is what a call that waited for a failed dial answers: the
// errno of the kind of failure, EIO for those no errno describes
// (authentication, ssh itself: the log has ssh's words).
func dialErrno(err error) syscall.Errno {
	var de *transport.DialError
	timedOut := errors.As(err, &de) && (strings.Contains(strings.ToLower(de.Detail), "timed out") ||
		strings.Contains(de.Detail, context.DeadlineExceeded.Error()))
	switch {
	case timedOut, errors.Is(err, context.DeadlineExceeded):
		return syscall.ETIMEDOUT
	case errors.Is(err, transport.ErrUnreachable):
		return syscall.EHOSTUNREACH
	case errors.Is(err, transport.ErrNoDir):
		return syscall.ENOENT
	case errors.Is(err, transport.ErrNotDir):
		return syscall.ENOTDIR
	}
	return syscall.EIO
}

// Close stops dialling and closes the host if it connected.
func (r *Remote) Close() error {
	r.mu.Lock()
	r.closed = true
	r.mu.Unlock()
	r.stop()
	r.wg.Wait()
	if h := r.Host(); h != nil {
		return h.Close()
	}
	return nil
}

func (r *Remote) Lstat(ctx context.Context, p string) (remote.Attr, error) {
	t, err := r.remote(ctx)
	if err != nil {
		return remote.Attr{}, err
	}
	return t.Lstat(ctx, p)
}

func (r *Remote) Stat(ctx context.Context, p string) (remote.Attr, error) {
	t, err := r.remote(ctx)
	if err != nil {
		return remote.Attr{}, err
	}
	return t.Stat(ctx, p)
}

func (r *Remote) ReadDir(ctx context.Context, p string) ([]remote.DirEntry, error) {
	t, err := r.remote(ctx)
	if err != nil {
		return nil, err
	}
	return t.ReadDir(ctx, p)
}

func (r *Remote) Readlink(ctx context.Context, p string) (string, error) {
	t, err := r.remote(ctx)
	if err != nil {
		return "", err
	}
	return t.Readlink(ctx, p)
}

func (r *Remote) Open(ctx context.Context, p string, flags int, perm uint32) (remote.File, error) {
	t, err := r.remote(ctx)
	if err != nil {
		return nil, err
	}
	return t.Open(ctx, p, flags, perm)
}

func (r *Remote) Mkdir(ctx context.Context, p string, perm uint32) error {
	t, err := r.remote(ctx)
	if err != nil {
		return err
	}
	return t.Mkdir(ctx, p, perm)
}

func (r *Remote) Remove(ctx context.Context, p string) error {
	t, err := r.remote(ctx)
	if err != nil {
		return err
	}
	return t.Remove(ctx, p)
}

func (r *Remote) Rmdir(ctx context.Context, p string) error {
	t, err := r.remote(ctx)
	if err != nil {
		return err
	}
	return t.Rmdir(ctx, p)
}

func (r *Remote) Rename(ctx context.Context, oldp, newp string, noReplace bool) error {
	t, err := r.remote(ctx)
	if err != nil {
		return err
	}
	return t.Rename(ctx, oldp, newp, noReplace)
}

func (r *Remote) Symlink(ctx context.Context, target, linkp string) error {
	t, err := r.remote(ctx)
	if err != nil {
		return err
	}
	return t.Symlink(ctx, target, linkp)
}

func (r *Remote) Link(ctx context.Context, oldp, newp string) error {
	t, err := r.remote(ctx)
	if err != nil {
		return err
	}
	return t.Link(ctx, oldp, newp)
}

func (r *Remote) SetAttr(ctx context.Context, p string, a remote.SetAttr) error {
	t, err := r.remote(ctx)
	if err != nil {
		return err
	}
	return t.SetAttr(ctx, p, a)
}

func (r *Remote) StatFS(ctx context.Context, p string) (remote.StatFS, error) {
	t, err := r.remote(ctx)
	if err != nil {
		return remote.StatFS{}, err
	}
	return t.StatFS(ctx, p)
}

var _ remote.TreeLister = (*Remote)(nil)

// ListTree lists through the connected host; while it is not connected
// the call fails (ENOTCONN), which is not a lasting refusal. It never
// dials: tree listings are work ahead of need (prefetch, the check of
// kept listings at mount), which must not connect a delay_connect host.
func (r *Remote) ListTree(ctx context.Context, dir string, depth int, fn func(string, []remote.DirEntry)) error {
	t, err := r.connected()
	if err != nil {
		return err
	}
	tl, ok := t.(remote.TreeLister)
	if !ok {
		return remote.ErrTreeUnsupported
	}
	return tl.ListTree(ctx, dir, depth, fn)
}

var _ remote.ChangeLister = (*Remote)(nil)

// ListChanged lists through the connected host, as ListTree.
func (r *Remote) ListChanged(ctx context.Context, dir string, within time.Duration, fn func(string, time.Duration)) error {
	t, err := r.connected()
	if err != nil {
		return err
	}
	cl, ok := t.(remote.ChangeLister)
	if !ok {
		return remote.ErrTreeUnsupported
	}
	return cl.ListChanged(ctx, dir, within, fn)
}
