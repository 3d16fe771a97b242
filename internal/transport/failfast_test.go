package transport

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"sshfsm/internal/remote"
)

// Under FailFast a host without a live channel fails requests at once
// with ErrNoChannel (ENOTCONN), in flight or not yet sent, files included;
// without it the same request waits for the reconnect.
func TestFailFast(t *testing.T) {
	h, ts, dir := dialTest(t, 1, func(o *Options) { o.Timeout = 5 * time.Second; o.FailFast = true })
	randomFile(t, filepath.Join(dir, "f"), 1000)
	f, err := h.Remote().Open(bg, "f", os.O_RDONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close(bg)
	ts.setRefuse(true)
	ts.stream(0).hold()
	inflight := make(chan error, 1)
	go func() {
		_, err := h.Remote().ReadDir(bg, "")
		inflight <- err
	}()
	time.Sleep(50 * time.Millisecond)
	start := time.Now()
	ts.stream(0).drop()
	if err := <-inflight; !errors.Is(err, syscall.ENOTCONN) {
		t.Fatalf("in-flight readdir: %v after %v, want ENOTCONN, not the timeout's error", err, time.Since(start))
	}
	waitHealth(t, h, false)
	start = time.Now()
	_, err = h.Remote().Stat(bg, "f")
	if !errors.Is(err, ErrNoChannel) || !errors.Is(err, syscall.ENOTCONN) {
		t.Fatalf("stat: %v after %v, want ErrNoChannel, not the timeout's error", err, time.Since(start))
	}
	if _, err := f.ReadAt(bg, make([]byte, 10), 0); !errors.Is(err, ErrNoChannel) {
		t.Fatalf("read: %v, want ErrNoChannel", err)
	}
	if err := h.Remote().Mkdir(bg, "d", 0o755); !errors.Is(err, ErrNoChannel) {
		t.Fatalf("mkdir: %v, want ErrNoChannel", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "d")); !os.IsNotExist(err) {
		t.Fatalf("mkdir not sent must not create: %v", err)
	}
	ts.setRefuse(false)
	waitHealth(t, h, true)
	if _, err := h.Remote().Stat(bg, "f"); err != nil {
		t.Fatalf("stat after reconnect: %v", err)
	}
}

// Without FailFast a request during an outage waits for the reconnect.
func TestNoFailFastWaits(t *testing.T) {
	h, ts, _ := dialTest(t, 1, func(o *Options) { o.Timeout = 5 * time.Second })
	ts.setRefuse(true)
	ts.stream(0).drop()
	waitHealth(t, h, false)
	time.AfterFunc(300*time.Millisecond, func() { ts.setRefuse(false) })
	start := time.Now()
	if _, err := h.Remote().Stat(bg, ""); err != nil {
		t.Fatalf("stat across the reconnect: %v", err)
	}
	if d := time.Since(start); d < 200*time.Millisecond {
		t.Fatalf("stat answered after %v: it did not wait for the reconnect", d)
	}
}

func waitHealth(t *testing.T, h *Host, up bool) {
	t.Helper()
	hr := h.Remote().(remote.Health)
	deadline := time.After(5 * time.Second)
	for {
		changed := hr.Changed()
		if hr.Up() == up {
			return
		}
		select {
		case <-changed:
		case <-deadline:
			t.Fatalf("Up did not become %v", up)
		}
	}
}
