package transport

import (
	"bytes"
	"context"
	"math/rand"
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

// asyncWrite sends p at off with WriteAtAsync and returns a channel that
// gets its outcome, and a counter of the buffer's releases.
func asyncWrite(f remote.File, p []byte, off int64) (<-chan error, *atomic.Int32) {
	res := make(chan error, 2)
	var released atomic.Int32
	f.(remote.AsyncWriter).WriteAtAsync(p, off, func() { released.Add(1) }, func(err error) { res <- err })
	return res, &released
}

func outcome(t *testing.T, res <-chan error) error {
	t.Helper()
	select {
	case err := <-res:
		return err
	case <-time.After(20 * time.Second):
		t.Fatal("no outcome for an asynchronous write")
		return nil
	}
}

// Writes sent without waiting land, in one packet or more, are re-sent on
// a new channel when theirs is lost unanswered, report the server's
// refusal, and hand their buffer back exactly once.
func TestWriteAtAsync(t *testing.T) {
	h, ts, dir := dialTest(t, 1, nil)
	f, err := h.Remote().Open(bg, "f", os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	want := make([]byte, 3*30_000+100_000) // the last is larger than a packet
	rand.New(rand.NewSource(1)).Read(want)
	res, rel := asyncWrite(f, want[:30_000], 0)
	if err := outcome(t, res); err != nil || rel.Load() != 1 {
		t.Fatalf("first write: %v, released %d times", err, rel.Load())
	}

	// The server executes the next write but its answer never arrives.
	ts.stream(0).freeze()
	res, rel = asyncWrite(f, want[30_000:60_000], 30_000)
	time.Sleep(100 * time.Millisecond)
	if rel.Load() != 0 || len(res) != 0 {
		t.Fatal("an unanswered write ended")
	}
	ts.stream(0).drop()
	if err := outcome(t, res); err != nil || rel.Load() != 1 {
		t.Fatalf("write re-sent after the channel was lost: %v, released %d times", err, rel.Load())
	}
	for _, w := range [][2]int{{60_000, 90_000}, {90_000, len(want)}} {
		res, rel = asyncWrite(f, want[w[0]:w[1]], int64(w[0]))
		if err := outcome(t, res); err != nil || rel.Load() != 1 {
			t.Fatalf("write at %d: %v, released %d times", w[0], err, rel.Load())
		}
	}
	if err := f.Close(bg); err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(filepath.Join(dir, "f"))
	if !bytes.Equal(got, want) {
		t.Fatalf("content differs: %d bytes, want %d", len(got), len(want))
	}

	// A handle open for reading only: the server refuses the write.
	rf, err := h.Remote().Open(bg, "f", os.O_RDONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer rf.Close(bg)
	res, rel = asyncWrite(rf, []byte("refused"), 0)
	if err := outcome(t, res); err == nil || rel.Load() != 1 {
		t.Fatalf("write on a read-only handle: %v, released %d times", err, rel.Load())
	}
}
