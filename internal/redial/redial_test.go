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
