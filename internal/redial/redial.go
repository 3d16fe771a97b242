// Package redial stands in for a host that could not be reached when the
// mount started: it reports itself down, dials again in the background with
// backoff, and serves through the host once it answers. Unions and replica
// sets skip it while it is down, so one unreachable host never blocks the
// others, and its files appear when it comes back, with no remount.
package redial

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"syscall"
	"time"

	"sshfsm/internal/remote"
	"sshfsm/internal/transport"
)

// Backoff bounds between dial attempts (variables for tests).
var (
	minBackoff = time.Second
	maxBackoff = 30 * time.Second
)

// Dial connects the host; it is called until it succeeds or the Remote is
// closed.
type Dial func(ctx context.Context) (*transport.Host, error)

// Remote is a host that connects in the background.
type Remote struct {
	name string
	dial Dial
	log  *slog.Logger
	ctx  context.Context
	stop context.CancelFunc
	done chan struct{} // closed when the dial loop has ended

	// mu guards the fields below.
	mu      sync.Mutex
	host    *transport.Host // nil until connected
	lastErr error
	changed chan struct{} // closed when host is set
}

var (
	_ remote.Remote = (*Remote)(nil)
	_ remote.Health = (*Remote)(nil)
)

// New starts dialling name with dial in the background; first is the error
// of the attempt that already failed.
func New(name string, dial Dial, first error, log *slog.Logger) *Remote {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	r := &Remote{name: name, dial: dial, log: log, lastErr: first,
		changed: make(chan struct{}), done: make(chan struct{})}
	r.ctx, r.stop = context.WithCancel(context.Background())
	go r.loop()
	return r
}

func (r *Remote) loop() {
	defer close(r.done)
	backoff := minBackoff
	for {
		t := time.NewTimer(backoff)
		select {
		case <-r.ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		h, err := r.dial(r.ctx)
		if err == nil {
			r.mu.Lock()
			if r.ctx.Err() != nil {
				r.mu.Unlock()
				h.Close()
				return
			}
			r.host = h
			close(r.changed)
			r.mu.Unlock()
			r.log.Info("host reachable again", "host", r.name)
			return
		}
		r.mu.Lock()
		r.lastErr = err
		r.mu.Unlock()
		r.log.Debug("host still unreachable", "host", r.name, "err", err)
		backoff = min(2*backoff, maxBackoff)
	}
}

// Host returns the connected host, nil while it is unreachable.
func (r *Remote) Host() *transport.Host {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.host
}

// LastError is why the host is unreachable (nil once connected).
func (r *Remote) LastError() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.host != nil {
		return nil
	}
	return r.lastErr
}

// Up reports whether the host is connected and has a live channel.
func (r *Remote) Up() bool {
	h := r.Host()
	return h != nil && h.Up()
}

// Changed fires when the host connects, then at each change of its
// channels.
func (r *Remote) Changed() <-chan struct{} {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.host != nil {
		return r.host.Changed()
	}
	return r.changed
}

// remote returns the connected host's tree, or ENOTCONN.
func (r *Remote) remote() (remote.Remote, error) {
	if h := r.Host(); h != nil {
		return h.Remote(), nil
	}
	return nil, fmt.Errorf("%s is unreachable: %w", r.name, syscall.ENOTCONN)
}

// Close stops dialling and closes the host if it connected.
func (r *Remote) Close() error {
	r.stop()
	<-r.done
	if h := r.Host(); h != nil {
		return h.Close()
	}
	return nil
}

func (r *Remote) Lstat(ctx context.Context, p string) (remote.Attr, error) {
	t, err := r.remote()
	if err != nil {
		return remote.Attr{}, err
	}
	return t.Lstat(ctx, p)
}

func (r *Remote) Stat(ctx context.Context, p string) (remote.Attr, error) {
	t, err := r.remote()
	if err != nil {
		return remote.Attr{}, err
	}
	return t.Stat(ctx, p)
}

func (r *Remote) ReadDir(ctx context.Context, p string) ([]remote.DirEntry, error) {
	t, err := r.remote()
	if err != nil {
		return nil, err
	}
	return t.ReadDir(ctx, p)
}

func (r *Remote) Readlink(ctx context.Context, p string) (string, error) {
	t, err := r.remote()
	if err != nil {
		return "", err
	}
	return t.Readlink(ctx, p)
}

func (r *Remote) Open(ctx context.Context, p string, flags int, perm uint32) (remote.File, error) {
	t, err := r.remote()
	if err != nil {
		return nil, err
	}
	return t.Open(ctx, p, flags, perm)
}

func (r *Remote) Mkdir(ctx context.Context, p string, perm uint32) error {
	t, err := r.remote()
	if err != nil {
		return err
	}
	return t.Mkdir(ctx, p, perm)
}

func (r *Remote) Remove(ctx context.Context, p string) error {
	t, err := r.remote()
	if err != nil {
		return err
	}
	return t.Remove(ctx, p)
}

func (r *Remote) Rmdir(ctx context.Context, p string) error {
	t, err := r.remote()
	if err != nil {
		return err
	}
	return t.Rmdir(ctx, p)
}

func (r *Remote) Rename(ctx context.Context, oldp, newp string, noReplace bool) error {
	t, err := r.remote()
	if err != nil {
		return err
	}
	return t.Rename(ctx, oldp, newp, noReplace)
}

func (r *Remote) Symlink(ctx context.Context, target, linkp string) error {
	t, err := r.remote()
	if err != nil {
		return err
	}
	return t.Symlink(ctx, target, linkp)
}

func (r *Remote) Link(ctx context.Context, oldp, newp string) error {
	t, err := r.remote()
	if err != nil {
		return err
	}
	return t.Link(ctx, oldp, newp)
}

func (r *Remote) SetAttr(ctx context.Context, p string, a remote.SetAttr) error {
	t, err := r.remote()
	if err != nil {
		return err
	}
	return t.SetAttr(ctx, p, a)
}

func (r *Remote) StatFS(ctx context.Context, p string) (remote.StatFS, error) {
	t, err := r.remote()
	if err != nil {
		return remote.StatFS{}, err
	}
	return t.StatFS(ctx, p)
}

var _ remote.TreeLister = (*Remote)(nil)

// ListTree lists through the connected host; while it is unreachable the
// call fails (ENOTCONN), which is not a lasting refusal.
func (r *Remote) ListTree(ctx context.Context, dir string, depth int, fn func(string, []remote.DirEntry)) error {
	t, err := r.remote()
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
	t, err := r.remote()
	if err != nil {
		return err
	}
	cl, ok := t.(remote.ChangeLister)
	if !ok {
		return remote.ErrTreeUnsupported
	}
	return cl.ListChanged(ctx, dir, within, fn)
}
