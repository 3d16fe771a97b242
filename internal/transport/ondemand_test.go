package transport

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

func upChannels(h *Host) int {
	up := 0
	for _, c := range h.Stats().Channels {
		if c.Up {
			up++
		}
	}
	return up
}

// dialOnDemand dials with Options.OnDemand: only the first channel opens.
func dialOnDemand(t *testing.T, conns int) (*Host, *testServer, string) {
	t.Helper()
	dir := t.TempDir()
	ts := newTestServer(t)
	h, err := Dial(context.Background(), Options{Host: "test", Dir: dir, Conns: conns,
		Timeout: 2 * time.Second, Reconnect: true, Dialer: ts.dial, OnDemand: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	return h, ts, dir
}

// With OnDemand, one request at a time (a walk, a single file's reads)
// never opens a second channel; a large read split over channels does,
// and the next such read is spread.
func TestOnDemandChannelsForSplitReads(t *testing.T) {
	h, ts, dir := dialOnDemand(t, 3)
	want := randomFile(t, filepath.Join(dir, "f"), 1<<20+123)
	for range 20 {
		if _, err := h.Remote().Stat(bg, "f"); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(100 * time.Millisecond) // a slot woken by mistake would connect now
	if n, streams := upChannels(h), ts.count(); n != 1 || streams != 1 {
		t.Fatalf("%d channels up, %d streams opened after sequential requests; want 1", n, streams)
	}
	f := openRead(t, h, "f")
	got := make([]byte, len(want))
	if n, err := f.ReadAt(bg, got, 0); n != len(want) || (err != nil && err != io.EOF) || !bytes.Equal(got, want) {
		t.Fatalf("first split read: %d %v", n, err)
	}
	waitUp(t, h, 3)
	before := h.Stats().Channels
	if n, err := f.ReadAt(bg, got, 0); n != len(want) || (err != nil && err != io.EOF) || !bytes.Equal(got, want) {
		t.Fatalf("second split read: %d %v", n, err)
	}
	used := 0
	for i, c := range h.Stats().Channels {
		if c.BytesRead > before[i].BytesRead {
			used++
		}
	}
	if used < 2 {
		t.Fatalf("second split read served by %d channel(s): %+v", used, h.Stats().Channels)
	}
}

// A large read that arrives before the file's attributes are learned
// cannot split yet, but it still asks for channels: a burst of first reads
// of fresh files must open them as one large read does.
func TestOnDemandChannelsForEarlyLargeRead(t *testing.T) {
	h, _, dir := dialOnDemand(t, 3)
	want := randomFile(t, filepath.Join(dir, "f"), 1<<20)
	f, err := h.Remote().Open(bg, "f", os.O_RDONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close(bg)
	ff := f.(*file)
	<-ff.learned
	ff.mu.Lock()
	ff.knownOK = false // as if the read came before the FSTAT's answer
	ff.mu.Unlock()
	got := make([]byte, len(want))
	if n, err := f.ReadAt(bg, got, 0); n != len(want) || (err != nil && err != io.EOF) || !bytes.Equal(got, want) {
		t.Fatalf("read: %d %v", n, err)
	}
	waitUp(t, h, 3)
}

// Requests queueing behind others on the one open channel open more.
func TestOnDemandChannelsForQueuedRequests(t *testing.T) {
	h, _, dir := dialOnDemand(t, 2)
	if err := os.WriteFile(filepath.Join(dir, "x"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	time.Sleep(50 * time.Millisecond)
	if n := upChannels(h); n != 1 {
		t.Fatalf("%d channels up before any request, want 1", n)
	}
	deadline := time.Now().Add(10 * time.Second)
	for upChannels(h) < 2 {
		if time.Now().After(deadline) {
			t.Fatalf("only %d channel(s) up with requests queued", upChannels(h))
		}
		var wg sync.WaitGroup
		for range 4 * queuedDemand {
			wg.Go(func() {
				if _, err := h.Remote().Stat(bg, "x"); err != nil {
					t.Error(err)
				}
			})
		}
		wg.Wait()
	}
}

// Without OnDemand every channel opens after Dial, as before.
func TestEagerChannels(t *testing.T) {
	h, ts, _ := dialTest(t, 3, nil) // waits for all three
	if ts.count() != 3 || upChannels(h) != 3 {
		t.Fatalf("%d streams, %d up", ts.count(), upChannels(h))
	}
}
