package transport

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"sshfsm/internal/remote"
)

// cancelAfter returns a context cancelled after d.
func cancelAfter(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithCancel(bg)
	tm := time.AfterFunc(d, cancel)
	t.Cleanup(func() { tm.Stop(); cancel() })
	return ctx
}

func exists(dir, name string) bool {
	_, err := os.Lstat(filepath.Join(dir, name))
	return err == nil
}

// A mutation whose request was sent returns the server's real result even
// when its ctx is cancelled before the answer arrives.
func TestSentMutationIgnoresCancel(t *testing.T) {
	h, ts, dir := dialTest(t, 1, func(o *Options) { o.Timeout = 10 * time.Second })
	r := h.Remote()
	openFile := func(t *testing.T) remote.File {
		os.WriteFile(filepath.Join(dir, "f"), []byte("hello"), 0o644)
		f, err := r.Open(bg, "f", os.O_RDWR, 0)
		if err != nil {
			t.Fatal(err)
		}
		<-f.(*file).learned
		return f
	}
	mode := uint32(0o600)
	tests := []struct {
		name   string
		setup  func(t *testing.T) remote.File
		op     func(ctx context.Context, f remote.File) error
		effect func() bool
	}{
		{name: "mkdir",
			op:     func(ctx context.Context, _ remote.File) error { return r.Mkdir(ctx, "d", 0o755) },
			effect: func() bool { return exists(dir, "d") }},
		{name: "rmdir",
			setup:  func(*testing.T) remote.File { os.Mkdir(filepath.Join(dir, "d"), 0o755); return nil },
			op:     func(ctx context.Context, _ remote.File) error { return r.Rmdir(ctx, "d") },
			effect: func() bool { return !exists(dir, "d") }},
		{name: "remove",
			setup:  func(*testing.T) remote.File { os.WriteFile(filepath.Join(dir, "a"), nil, 0o644); return nil },
			op:     func(ctx context.Context, _ remote.File) error { return r.Remove(ctx, "a") },
			effect: func() bool { return !exists(dir, "a") }},
		{name: "rename",
			setup: func(*testing.T) remote.File { os.WriteFile(filepath.Join(dir, "a"), nil, 0o644); return nil },
			op:    func(ctx context.Context, _ remote.File) error { return r.Rename(ctx, "a", "b", false) },
			effect: func() bool {
				defer os.Remove(filepath.Join(dir, "b"))
				return !exists(dir, "a") && exists(dir, "b")
			}},
		{name: "symlink",
			op: func(ctx context.Context, _ remote.File) error { return r.Symlink(ctx, "target", "l") },
			effect: func() bool {
				defer os.Remove(filepath.Join(dir, "l"))
				return exists(dir, "l")
			}},
		{name: "setattr",
			setup: func(*testing.T) remote.File { os.WriteFile(filepath.Join(dir, "a"), nil, 0o644); return nil },
			op: func(ctx context.Context, _ remote.File) error {
				return r.SetAttr(ctx, "a", remote.SetAttr{Mode: &mode})
			},
			effect: func() bool {
				fi, err := os.Stat(filepath.Join(dir, "a"))
				defer os.Remove(filepath.Join(dir, "a"))
				return err == nil && fi.Mode().Perm() == 0o600
			}},
		{name: "create-excl",
			op: func(ctx context.Context, _ remote.File) error {
				f, err := r.Open(ctx, "c", os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o644)
				if err == nil {
					f.Close(bg)
				}
				return err
			},
			effect: func() bool {
				defer os.Remove(filepath.Join(dir, "c"))
				return exists(dir, "c")
			}},
		{name: "truncate", setup: openFile,
			op: func(ctx context.Context, f remote.File) error {
				defer f.Close(bg)
				return f.Truncate(ctx, 2)
			},
			effect: func() bool {
				b, err := os.ReadFile(filepath.Join(dir, "f"))
				return err == nil && string(b) == "he"
			}},
		{name: "close", setup: openFile,
			op:     func(ctx context.Context, f remote.File) error { return f.Close(ctx) },
			effect: func() bool { return true }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var f remote.File
			if tt.setup != nil {
				f = tt.setup(t)
			}
			s := ts.stream(0)
			s.hold()
			ctx := cancelAfter(t, 100*time.Millisecond)
			released := make(chan time.Time, 1)
			time.AfterFunc(400*time.Millisecond, func() { released <- time.Now(); s.release() })
			err := tt.op(ctx, f)
			at := time.Now()
			if err != nil {
				t.Fatalf("got %v, want the server's answer (nil)", err)
			}
			if rel := <-released; at.Before(rel) {
				t.Fatalf("returned %v before the answer was released", rel.Sub(at))
			}
			if !tt.effect() {
				t.Fatal("effect missing on the server")
			}
		})
	}
}

// A mutation cancelled before it could be sent fails with context.Canceled
// at once and has no effect.
func TestUnsentMutationCancelled(t *testing.T) {
	h, ts, dir := dialTest(t, 1, func(o *Options) { o.Timeout = 10 * time.Second })
	r := h.Remote()

	ctx, cancel := context.WithCancel(bg)
	cancel()
	if err := r.Mkdir(ctx, "early", 0o755); !errors.Is(err, context.Canceled) {
		t.Fatalf("mkdir with a cancelled ctx: %v, want Canceled", err)
	}
	if _, err := r.Open(ctx, "early", os.O_RDWR|os.O_CREATE, 0o644); !errors.Is(err, context.Canceled) {
		t.Fatalf("create with a cancelled ctx: %v, want Canceled", err)
	}

	ts.setRefuse(true)
	ts.stream(0).drop()
	deadline := time.Now().Add(5 * time.Second)
	for h.Stats().Channels[0].Up {
		if time.Now().After(deadline) {
			t.Fatal("channel still up after the drop")
		}
		time.Sleep(5 * time.Millisecond)
	}
	start := time.Now()
	err := r.Mkdir(cancelAfter(t, 100*time.Millisecond), "d", 0o755)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("mkdir during outage: %v after %v, want Canceled", err, time.Since(start))
	}
	if err := r.Rename(cancelAfter(t, 50*time.Millisecond), "x", "y", true); !errors.Is(err, context.Canceled) {
		t.Fatalf("rename during outage: %v, want Canceled", err)
	}
	ts.setRefuse(false)
	waitUp(t, h, 1)
	if _, err := r.Lstat(bg, "d"); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("lstat after reconnect: %v, want ErrNotExist", err)
	}
	if exists(dir, "d") || exists(dir, "early") {
		t.Fatal("a cancelled, unsent mutation took effect")
	}
}

// Read-only requests and WriteAt are abandoned as soon as ctx is cancelled.
func TestIdempotentAbandonedOnCancel(t *testing.T) {
	h, ts, dir := dialTest(t, 1, func(o *Options) { o.Timeout = 10 * time.Second })
	randomFile(t, filepath.Join(dir, "f"), 1000)
	f, err := h.Remote().Open(bg, "f", os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	<-f.(*file).learned
	ts.stream(0).freeze()
	calls := []struct {
		name string
		fn   func(ctx context.Context) error
	}{
		{"stat", func(ctx context.Context) error { _, err := h.Remote().Stat(ctx, "f"); return err }},
		{"lstat", func(ctx context.Context) error { _, err := h.Remote().Lstat(ctx, "f"); return err }},
		{"readlink", func(ctx context.Context) error { _, err := h.Remote().Readlink(ctx, "f"); return err }},
		{"statfs", func(ctx context.Context) error { _, err := h.Remote().StatFS(ctx, ""); return err }},
		{"open-read", func(ctx context.Context) error { _, err := h.Remote().Open(ctx, "f", os.O_RDONLY, 0); return err }},
		{"fstat", func(ctx context.Context) error { _, err := f.Stat(ctx); return err }},
		{"write", func(ctx context.Context) error { _, err := f.WriteAt(ctx, []byte("x"), 0); return err }},
	}
	for _, c := range calls {
		start := time.Now()
		err := c.fn(cancelAfter(t, 100*time.Millisecond))
		if d := time.Since(start); !errors.Is(err, context.Canceled) || d > time.Second {
			t.Errorf("%s: %v after %v, want Canceled promptly", c.name, err, d)
		}
	}
}

// A sent mutation on a stream that never answers fails once the request
// deadline passes, cancelled or not, and its channel is recycled.
func TestSentMutationBoundedByTimeout(t *testing.T) {
	h, ts, _ := dialTest(t, 1, func(o *Options) { o.Timeout = time.Second })
	ts.stream(0).freeze()
	start := time.Now()
	err := h.Remote().Remove(cancelAfter(t, 100*time.Millisecond), "a")
	d := time.Since(start)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("got %v, want DeadlineExceeded", err)
	}
	if d < 900*time.Millisecond || d > 2*time.Second {
		t.Fatalf("returned after %v, want about Timeout (1s), at most Timeout+1s", d)
	}
	if _, err := h.Remote().Stat(bg, ""); err != nil {
		t.Fatalf("after recycling: %v", err)
	}
	if h.Stats().Channels[0].Reconnects < 1 {
		t.Fatal("channel not recycled")
	}
}

// A ctx's own deadline still bounds a sent mutation.
func TestSentMutationKeepsCtxDeadline(t *testing.T) {
	h, ts, _ := dialTest(t, 1, func(o *Options) { o.Timeout = 10 * time.Second })
	ts.stream(0).freeze()
	ctx, cancel := context.WithTimeout(bg, 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	err := h.Remote().Mkdir(ctx, "d", 0o755)
	if d := time.Since(start); !errors.Is(err, context.DeadlineExceeded) || d > 2*time.Second {
		t.Fatalf("got %v after %v, want DeadlineExceeded after about 300ms", err, d)
	}
	if errors.Is(err, syscall.EINTR) {
		t.Fatal("deadline reported as EINTR")
	}
}
