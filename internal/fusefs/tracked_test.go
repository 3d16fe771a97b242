package fusefs

import (
	"os"
	"path/filepath"
	"testing"

	"sshfsm/internal/inflight"
	"sshfsm/internal/metrics"
	"sshfsm/internal/testenv"
)

// TestRequestsInFlightTracked checks that a request the kernel waits on
// is in the table of requests in flight, with its kind, for as long as
// the remote keeps it waiting, and leaves it once answered.
func TestRequestsInFlightTracked(t *testing.T) {
	release := make(chan struct{})
	hook := &hookRemote{}
	hook.fail = func(op, p string) error {
		if op == "readdir" && p == "d" {
			<-release
		}
		return nil
	}
	o := defaultOpts()
	o.Requests = &inflight.Table{}
	tm := mountWith(t, o, hook.wrap)
	if err := os.Mkdir(filepath.Join(tm.dir, "d"), 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(tm.path("d")); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := os.Lstat(tm.path("d/f"))
		done <- err
	}()
	var s inflight.Snapshot
	testenv.Eventually(t, "the lookup waiting on the remote is in flight", func() bool {
		s = o.Requests.Oldest()
		return s.Count >= 1 && RequestKind(s.Kind) == "LOOKUP"
	})
	close(release)
	<-done
	testenv.Eventually(t, "no request in flight once answered", func() bool {
		s = o.Requests.Oldest()
		return s.Count == 0
	})
}

// TestRequestLatencyByKind checks that, with Options.Latency, every kind
// of request answered is timed under its own name, and no other.
func TestRequestLatencyByKind(t *testing.T) {
	o := defaultOpts()
	o.Requests = &inflight.Table{}
	o.Latency = &RequestLatency{}
	tm := mountWith(t, o, nil)
	if err := os.Mkdir(tm.path("d"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(tm.path("d/f"), []byte("data"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := os.ReadDir(tm.path("d")); err != nil {
		t.Fatal(err)
	}
	counts := map[string]uint64{}
	o.Latency.Each(func(kind string, b metrics.Buckets) {
		counts[kind] = b.Count
		if n := len(b.Cumulative); n == 0 || b.Cumulative[n-1] > b.Count {
			t.Errorf("%s: histogram %+v", kind, b)
		}
	})
	for _, kind := range []string{"MKDIR", "CREATE", "WRITE", "FLUSH", "OPENDIR"} {
		if counts[kind] == 0 {
			t.Errorf("no %s timed: %v", kind, counts)
		}
	}
	for _, kind := range []string{"SYMLINK", "LINK", "RENAME", "RMDIR"} {
		if counts[kind] != 0 {
			t.Errorf("%d %s timed, none made", counts[kind], kind)
		}
	}
}
