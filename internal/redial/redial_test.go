package redial

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"sshfsm/internal/remote"
	"sshfsm/internal/testenv"
	"sshfsm/internal/transport"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// A host that fails its first dials is down (calls fail at once with
// ENOTCONN), then comes up on its own, fires Changed, and serves.
func TestConnectsInBackground(t *testing.T) {
	minBackoff, maxBackoff = 20*time.Millisecond, 50*time.Millisecond
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "f"), []byte("hello"), 0o644); err != nil {
		t.Fatal(err)
	}
	var attempts atomic.Int32
	var open atomic.Bool
	dial := func(ctx context.Context) (*transport.Host, error) {
		attempts.Add(1)
		if !open.Load() {
			return nil, errors.New("connection refused")
		}
		return transport.Dial(ctx, transport.Options{Host: "b", Dir: dir, Conns: 1,
			Timeout: 5 * time.Second, Reconnect: true, Dialer: testenv.SFTPDialer(dir)})
	}
	r := New("b", dial, errors.New("connection refused"), nil)
	defer r.Close()

	changed := r.Changed()
	var err error
	testenv.Returns(t, "lstat of a down host", func() { _, err = r.Lstat(context.Background(), "f") })
	if !errors.Is(err, syscall.ENOTCONN) {
		t.Fatalf("lstat while down: %v, want ENOTCONN", err)
	}
	if r.Up() || r.LastError() == nil {
		t.Fatalf("down host: Up %v, LastError %v", r.Up(), r.LastError())
	}
	testenv.Eventually(t, "three dial attempts", func() bool { return attempts.Load() >= 3 })
	open.Store(true)
	select {
	case <-changed:
	case <-time.After(testenv.Patience()):
		t.Fatal("Changed did not fire when the host connected")
	}
	testenv.Eventually(t, "up once the host answers", r.Up)
	a, err := r.Lstat(context.Background(), "f")
	if err != nil || a.Size != 5 || !r.Up() || r.LastError() != nil {
		t.Fatalf("after connect: %+v %v, Up %v", a, err, r.Up())
	}
}

// Close stops the dial loop of a host that never answers.
func TestCloseStopsDialling(t *testing.T) {
	minBackoff, maxBackoff = 10*time.Millisecond, 10*time.Millisecond
	var attempts atomic.Int32
	r := New("b", func(ctx context.Context) (*transport.Host, error) {
		attempts.Add(1)
		return nil, errors.New("no route to host")
	}, nil, nil)
	testenv.Eventually(t, "dialling", func() bool { return attempts.Load() > 0 })
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	n := attempts.Load()
	// Five backoff periods without an attempt: dialling stopped.
	if testenv.PollFor(5*maxBackoff, func() bool { return attempts.Load() != n }) {
		t.Fatalf("attempts %d then %d: dialling did not stop (or never ran)", n, attempts.Load())
	}
}

// sftpDial dials an in-process server of dir, counting the attempts; a
// dial fails with fail's error while it returns one.
func sftpDial(dir string, attempts *atomic.Int32, fail func() error) Dial {
	return func(ctx context.Context) (*transport.Host, error) {
		attempts.Add(1)
		if err := fail(); err != nil {
			return nil, err
		}
		return transport.Dial(ctx, transport.Options{Host: "b", Dir: dir, Conns: 1,
			Timeout: 5 * time.Second, Reconnect: true, Dialer: testenv.SFTPDialer(dir)})
	}
}

// OnFirstUse: nothing is dialled until a call; the host counts as up
// meanwhile; the first call connects and is served.
func TestFirstUseDialsAtFirstCall(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "f"), []byte("hello"), 0o644); err != nil {
		t.Fatal(err)
	}
	var attempts atomic.Int32
	r := OnFirstUse("b", sftpDial(dir, &attempts, func() error { return nil }), testenv.Patience(), nil)
	defer r.Close()
	if n := attempts.Load(); n != 0 || !r.Up() || r.Host() != nil || r.LastError() != nil {
		t.Fatalf("before any call: %d dials, Up %v, Host %v, LastError %v; want none, up, nil, nil",
			n, r.Up(), r.Host(), r.LastError())
	}
	// Tree listings are work ahead of need: they do not connect.
	err := r.ListTree(context.Background(), "", 1, func(string, []remote.DirEntry) {})
	if !errors.Is(err, syscall.ENOTCONN) || attempts.Load() != 0 {
		t.Fatalf("ListTree before any call: %v after %d dials; want ENOTCONN and no dial", err, attempts.Load())
	}
	a, err := r.Lstat(context.Background(), "f")
	if err != nil || a.Size != 5 {
		t.Fatalf("first call: %+v, %v", a, err)
	}
	if n := attempts.Load(); n != 1 || !r.Up() || r.Host() == nil {
		t.Fatalf("after the first call: %d dials, Up %v, Host %v; want 1, up, connected", n, r.Up(), r.Host())
	}
}

// OnFirstUse: calls made while a dial runs all wait for that one dial.
func TestFirstUseCallsShareOneDial(t *testing.T) {
	dir := t.TempDir()
	var attempts atomic.Int32
	release := make(chan struct{})
	dial := sftpDial(dir, &attempts, func() error { <-release; return nil })
	r := OnFirstUse("b", dial, testenv.Patience(), nil)
	defer r.Close()
	const calls = 8
	errs := make(chan error, calls)
	for range calls {
		go func() {
			_, err := r.Stat(context.Background(), "")
			errs <- err
		}()
	}
	testenv.Eventually(t, "the first dial", func() bool { return attempts.Load() > 0 })
	close(release)
	for range calls {
		if err := <-errs; err != nil {
			t.Errorf("call: %v", err)
		}
	}
	if n := attempts.Load(); n != 1 {
		t.Errorf("%d calls made %d dials; want 1", calls, n)
	}
}

// OnFirstUse: a failed dial fails the calls waiting for it with the errno
// of its kind, takes the host down (Changed fires), answers the calls
// that follow it for retryAfter, and then the next call dials again.
func TestFirstUseFailureThenRecovery(t *testing.T) {
	minBackoff, maxBackoff = time.Hour, time.Hour // only calls dial here
	retryAfter = time.Hour
	defer func() { retryAfter = time.Second }()
	dir := t.TempDir()
	var attempts atomic.Int32
	var open atomic.Bool
	refused := &transport.DialError{Kind: transport.ErrUnreachable, Host: "b", Detail: "ssh: connect to host b port 22: Connection refused"}
	r := OnFirstUse("b", sftpDial(dir, &attempts, func() error {
		if open.Load() {
			return nil
		}
		return refused
	}), testenv.Patience(), nil)
	defer r.Close()
	changed := r.Changed()
	_, err := r.Stat(context.Background(), "")
	if !errors.Is(err, syscall.EHOSTUNREACH) {
		t.Fatalf("call while refused: %v; want EHOSTUNREACH", err)
	}
	select {
	case <-changed:
	default:
		t.Fatal("Changed did not fire when the first dial failed")
	}
	if r.Up() || !errors.Is(r.LastError(), transport.ErrUnreachable) {
		t.Fatalf("after a failed dial: Up %v, LastError %v; want down, unreachable", r.Up(), r.LastError())
	}
	open.Store(true)
	// Right after a failure, calls get its error without dialling.
	if _, err := r.Stat(context.Background(), ""); !errors.Is(err, syscall.EHOSTUNREACH) || attempts.Load() != 1 {
		t.Fatalf("call right after the failure: %v after %d dials; want EHOSTUNREACH and no new dial", err, attempts.Load())
	}
	retryAfter = 0
	if _, err := r.Stat(context.Background(), ""); err != nil {
		t.Fatalf("call once the host answers: %v", err)
	}
	if n := attempts.Load(); n != 2 || !r.Up() {
		t.Fatalf("%d dials, Up %v; want 2, up", n, r.Up())
	}
}

// OnFirstUse: a call waits for a dial that does not end at most its wait,
// then fails with ETIMEDOUT; Close ends the dial.
func TestFirstUseWaitEnds(t *testing.T) {
	minBackoff, maxBackoff = time.Hour, time.Hour
	var attempts atomic.Int32
	r := OnFirstUse("b", func(ctx context.Context) (*transport.Host, error) {
		attempts.Add(1)
		<-ctx.Done()
		return nil, ctx.Err()
	}, 10*time.Millisecond, nil)
	var err error
	testenv.Returns(t, "a call to a host that never answers", func() { _, err = r.Lstat(context.Background(), "f") })
	if !errors.Is(err, syscall.ETIMEDOUT) {
		t.Fatalf("call: %v; want ETIMEDOUT", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := r.Lstat(ctx, "f"); !errors.Is(err, context.Canceled) {
		t.Fatalf("call with its context cancelled: %v; want context.Canceled", err)
	}
	testenv.Returns(t, "Close during a dial", func() { r.Close() })
	if _, err := r.Lstat(context.Background(), "f"); err == nil || attempts.Load() != 1 {
		t.Fatalf("call after Close: %v after %d dials; want an error and no new dial", err, attempts.Load())
	}
}

// dialErrno: each kind of failed dial has its errno.
func TestDialErrno(t *testing.T) {
	de := func(kind error, detail string) error {
		return &transport.DialError{Kind: kind, Host: "h", Detail: detail}
	}
	for _, tc := range []struct {
		err  error
		want syscall.Errno
	}{
		{de(transport.ErrUnreachable, "ssh: connect to host h port 22: Connection timed out"), syscall.ETIMEDOUT},
		{de(transport.ErrUnreachable, "Connection timed out during banner exchange"), syscall.ETIMEDOUT},
		{de(transport.ErrUnreachable, "context deadline exceeded"), syscall.ETIMEDOUT},
		{context.DeadlineExceeded, syscall.ETIMEDOUT},
		{de(transport.ErrUnreachable, "ssh: connect to host h port 22: Connection refused"), syscall.EHOSTUNREACH},
		{de(transport.ErrUnreachable, "ssh: Could not resolve hostname h"), syscall.EHOSTUNREACH},
		{de(transport.ErrNoDir, "/srv: file does not exist"), syscall.ENOENT},
		{de(transport.ErrNotDir, "/srv: not a directory"), syscall.ENOTDIR},
		{de(transport.ErrAuth, "Permission denied (publickey)."), syscall.EIO},
		{de(transport.ErrSSH, "kex_exchange_identification: read: Connection reset by peer"), syscall.EIO},
	} {
		if got := dialErrno(tc.err); got != tc.want {
			t.Errorf("%v: %v, want %v", tc.err, got, tc.want)
		}
	}
}
