package transport

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"sshfsm/internal/remote"
)

// WriteAtOwned sends the caller's buffer and hands it back exactly once,
// also when the request was given up for its deadline and answered later.
func TestWriteAtOwnedReleasesOnce(t *testing.T) {
	h, ts, dir := dialTest(t, 1, func(o *Options) { o.Timeout = 5 * time.Second })
	f, err := h.Remote().Open(bg, "f", os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close(bg)
	bw := f.(remote.BufferWriter)

	var done atomic.Int32
	data := bytes.Repeat([]byte("x"), 100000)
	if n, err := bw.WriteAtOwned(bg, data, 0, func() { done.Add(1) }); err != nil || n != len(data) {
		t.Fatalf("write: %d %v", n, err)
	}
	if done.Load() != 1 {
		t.Fatalf("done called %d times after an answered write, want 1", done.Load())
	}

	// A write through pkg/sftp (larger than one packet here) whose wait
	// ends before the answer: done only once the request is answered.
	s := ts.stream(0)
	s.hold()
	var late atomic.Int32
	ctx, cancel := context.WithTimeout(bg, 200*time.Millisecond)
	defer cancel()
	_, err = bw.WriteAtOwned(ctx, bytes.Repeat([]byte("y"), 100000), 0, func() { late.Add(1) })
	if err == nil {
		t.Fatal("write through a held stream succeeded within 200ms")
	}
	if late.Load() != 0 {
		t.Fatal("done called while the request was still unanswered")
	}
	s.release()
	deadline := time.Now().Add(5 * time.Second)
	for late.Load() == 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if late.Load() != 1 {
		t.Fatalf("done called %d times after the late answer, want 1", late.Load())
	}
	got, err := os.ReadFile(filepath.Join(dir, "f"))
	if err != nil || len(got) != len(data) {
		t.Fatalf("file: %d bytes, %v", len(got), err)
	}
}
