package replica

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"sshfsm/internal/remote"
	"sshfsm/internal/testenv"
	"sshfsm/internal/transport"
)

func TestMain(m *testing.M) { testenv.Main(m) }

var bg = context.Background()

// mode is how a faulty member behaves.
type mode int32

const (
	healthy    mode = iota
	broken          // every call fails before reaching the server (transport.ErrNoChannel)
	hanging         // every call blocks until its ctx ends
	lossy           // writes are acknowledged but never reach the server (a dying cache)
	answerLost      // calls reach the server, then fail with ENOTCONN (the answer is lost)
)

// faulty wraps a real remote with injectable faults and its own Health.
type faulty struct {
	remote.Remote
	mode    atomic.Int32
	syncs   atomic.Int64
	opens   atomic.Int64
	mu      sync.Mutex // guards down, changed
	down    bool
	changed chan struct{}
	// statGate, when set before the set is used, holds every Stat of an
	// open file until it is closed or the call's ctx ends.
	statGate chan struct{}
	// lstatAnswered, when set before the set is used, runs once an Lstat
	// has its server's answer, before it returns.
	lstatAnswered func()
}

func (f *faulty) set(m mode) { f.mode.Store(int32(m)) }

func (f *faulty) setDown(down bool) {
	f.mu.Lock()
	f.down = down
	close(f.changed)
	f.changed = make(chan struct{})
	f.mu.Unlock()
}

func (f *faulty) Up() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return !f.down
}

func (f *faulty) Changed() <-chan struct{} {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.changed
}

var (
	errInjected = fmt.Errorf("injected connection loss: %w", syscall.ENOTCONN)
	errNotSent  = fmt.Errorf("injected: %w: %w", transport.ErrNoChannel, syscall.ENOTCONN)
)

// before applies the fault to a call about to be sent; a nil result lets
// it through.
func (f *faulty) before(ctx context.Context) error {
	switch mode(f.mode.Load()) {
	case broken:
		return errNotSent
	case hanging:
		<-ctx.Done()
		return ctx.Err()
	}
	return nil
}

// after applies the fault to a call's answer.
func (f *faulty) after(err error) error {
	if mode(f.mode.Load()) == answerLost {
		return errInjected
	}
	return err
}

func (f *faulty) Lstat(ctx context.Context, p string) (remote.Attr, error) {
	if err := f.before(ctx); err != nil {
		return remote.Attr{}, err
	}
	a, err := f.Remote.Lstat(ctx, p)
	if f.lstatAnswered != nil {
		f.lstatAnswered()
	}
	return a, f.after(err)
}

func (f *faulty) Stat(ctx context.Context, p string) (remote.Attr, error) {
	if err := f.before(ctx); err != nil {
		return remote.Attr{}, err
	}
	a, err := f.Remote.Stat(ctx, p)
	return a, f.after(err)
}

func (f *faulty) ReadDir(ctx context.Context, p string) ([]remote.DirEntry, error) {
	if err := f.before(ctx); err != nil {
		return nil, err
	}
	es, err := f.Remote.ReadDir(ctx, p)
	return es, f.after(err)
}

func (f *faulty) Mkdir(ctx context.Context, p string, perm uint32) error {
	if err := f.before(ctx); err != nil {
		return err
	}
	return f.after(f.Remote.Mkdir(ctx, p, perm))
}

func (f *faulty) Remove(ctx context.Context, p string) error {
	if err := f.before(ctx); err != nil {
		return err
	}
	return f.after(f.Remote.Remove(ctx, p))
}

func (f *faulty) Rename(ctx context.Context, o, n string, noReplace bool) error {
	if err := f.before(ctx); err != nil {
		return err
	}
	return f.after(f.Remote.Rename(ctx, o, n, noReplace))
}

func (f *faulty) Open(ctx context.Context, p string, flags int, perm uint32) (remote.File, error) {
	if err := f.before(ctx); err != nil {
		return nil, err
	}
	rf, err := f.Remote.Open(ctx, p, flags, perm)
	if err = f.after(err); err != nil {
		if rf != nil {
			rf.Close(ctx)
		}
		return nil, err
	}
	f.opens.Add(1)
	return &faultyFile{File: rf, f: f}, nil
}

type faultyFile struct {
	remote.File
	f *faulty
}

func (ff *faultyFile) ReadAt(ctx context.Context, p []byte, off int64) (int, error) {
	if err := ff.f.before(ctx); err != nil {
		return 0, err
	}
	n, err := ff.File.ReadAt(ctx, p, off)
	if e := ff.f.after(err); e != err {
		return 0, e
	}
	return n, err
}

func (ff *faultyFile) WriteAt(ctx context.Context, p []byte, off int64) (int, error) {
	if err := ff.f.before(ctx); err != nil {
		return 0, err
	}
	if mode(ff.f.mode.Load()) == lossy {
		return len(p), nil
	}
	n, err := ff.File.WriteAt(ctx, p, off)
	return n, ff.f.after(err)
}

func (ff *faultyFile) Stat(ctx context.Context) (remote.Attr, error) {
	if g := ff.f.statGate; g != nil {
		select {
		case <-g:
		case <-ctx.Done():
			return remote.Attr{}, ctx.Err()
		}
	}
	if err := ff.f.before(ctx); err != nil {
		return remote.Attr{}, err
	}
	a, err := ff.File.Stat(ctx)
	return a, ff.f.after(err)
}

func (ff *faultyFile) Sync(ctx context.Context) error {
	if err := ff.f.before(ctx); err != nil {
		return err
	}
	ff.f.syncs.Add(1)
	return ff.f.after(ff.File.Sync(ctx))
}

func (ff *faultyFile) Truncate(ctx context.Context, size int64) error {
	if err := ff.f.before(ctx); err != nil {
		return err
	}
	return ff.f.after(ff.File.Truncate(ctx, size))
}

func (ff *faultyFile) Close(ctx context.Context) error {
	if err := ff.f.before(ctx); err != nil {
		return err
	}
	return ff.f.after(ff.File.Close(ctx))
}

// newSet builds a set of n members, each an in-process SFTP host (its own
// transport Host with FailFast) serving one shared directory, wrapped in
// faulty.
func newSet(t *testing.T, n int, o Options) (*Set, []*faulty, string) {
	t.Helper()
	dir := t.TempDir()
	var ms []Member
	var fs []*faulty
	for i := range n {
		h, err := transport.Dial(bg, transport.Options{Host: fmt.Sprintf("m%d", i), Dir: dir,
			Conns: 2, Timeout: 5 * time.Second, Reconnect: true, FailFast: true,
			Dialer: testenv.SFTPDialer(dir)})
		if err != nil {
			t.Fatal(err)
		}
		f := &faulty{Remote: h.Remote(), changed: make(chan struct{})}
		fs = append(fs, f)
		ms = append(ms, Member{Name: fmt.Sprintf("m%d", i), Remote: f})
	}
	if o.ProbeInterval == 0 {
		o.ProbeInterval = 50 * time.Millisecond
	}
	s, err := New(ms, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s, fs, dir
}

// waitState waits until member i is in service (want) or taken out.
func waitState(t *testing.T, s *Set, i int, want bool) {
	t.Helper()
	waitStateFor(t, s, i, want, 5*time.Second)
}

func waitStateFor(t *testing.T, s *Set, i int, want bool, d time.Duration) {
	t.Helper()
	deadline := time.Now().Add(d)
	for s.members[i].up.Load() != want || s.Stats()[i].Up != want {
		if time.Now().After(deadline) {
			t.Fatalf("member %d: Up did not become %v: %+v", i, want, s.Stats()[i])
		}
		time.Sleep(5 * time.Millisecond)
	}
}
