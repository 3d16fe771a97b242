package transport

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"sshfsm/internal/testenv"
)

// TestStatsOldestRequest checks that a host reports how long its oldest
// request in flight has waited, for requests through pkg/sftp and reads
// sent past it, and nothing once they ended.
func TestStatsOldestRequest(t *testing.T) {
	h, ts, dir := dialTest(t, 1, func(o *Options) { o.Timeout = 2 * time.Second })
	randomFile(t, filepath.Join(dir, "f"), 1000)
	f, err := h.Remote().Open(bg, "f", os.O_RDONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if got := h.Stats().Oldest; got != 0 {
		t.Fatalf("nothing in flight, oldest %v", got)
	}
	ts.stream(0).freeze()
	done := make(chan error, 2)
	go func() { _, err := h.Remote().Stat(bg, "f"); done <- err }()
	go func() { _, err := f.ReadAt(bg, make([]byte, 100), 0); done <- err }()
	testenv.Eventually(t, "the oldest request's age while the server does not answer", func() bool {
		return h.Stats().Oldest > 0 && h.Stats().Channels[0].Outstanding >= 2 // both, and perhaps a health probe
	})
	<-done
	<-done
	testenv.Eventually(t, "no request in flight once they failed", func() bool {
		return h.Stats().Oldest == 0
	})
}

// TestStatsLatency checks that every request answered, on any channel, is
// in the host's latency histogram: reads sent past pkg/sftp included.
func TestStatsLatency(t *testing.T) {
	h, _, dir := dialTest(t, 2, nil)
	randomFile(t, filepath.Join(dir, "f"), 1000)
	before := h.Stats().Latency
	const stats = 10
	for range stats {
		if _, err := h.Remote().Stat(bg, "f"); err != nil {
			t.Fatal(err)
		}
	}
	f, err := h.Remote().Open(bg, "f", os.O_RDONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close(bg)
	if _, err := f.ReadAt(bg, make([]byte, 100), 0); err != nil {
		t.Fatal(err)
	}
	after := h.Stats().Latency
	if got := after.Count - before.Count; got < stats+2 {
		t.Errorf("%d requests timed for %d stats, an open and a read", got, stats)
	}
	if after.Sum <= before.Sum || len(after.Bounds) == 0 || after.Cumulative[len(after.Cumulative)-1] > after.Count {
		t.Errorf("histogram %+v after %+v", after, before)
	}
}
