package fusefs

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
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

// TestRequestMetricsByKind checks that, with Options.Metrics, every kind
// of request answered is timed under its own name, and no other, and
// that answers other than OK are counted by kind and errno.
func TestRequestMetricsByKind(t *testing.T) {
	o := defaultOpts()
	o.Requests = &inflight.Table{}
	o.Metrics = &RequestMetrics{}
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
	for i := range 3 {
		if err := syscall.Rmdir(tm.path("d")); !errors.Is(err, syscall.ENOTEMPTY) {
			t.Fatalf("rmdir %d of a full directory: %v", i, err)
		}
	}
	counts := map[string]uint64{}
	o.Metrics.Durations(func(kind string, b metrics.Buckets) {
		counts[kind] = b.Count
		if n := len(b.Cumulative); n == 0 || b.Cumulative[n-1] > b.Count {
			t.Errorf("%s: histogram %+v", kind, b)
		}
	})
	for _, kind := range []string{"MKDIR", "CREATE", "WRITE", "FLUSH", "OPENDIR", "RMDIR"} {
		if counts[kind] == 0 {
			t.Errorf("no %s timed: %v", kind, counts)
		}
	}
	for _, kind := range []string{"SYMLINK", "LINK", "RENAME"} {
		if counts[kind] != 0 {
			t.Errorf("%d %s timed, none made", counts[kind], kind)
		}
	}
	errs := map[string]uint64{}
	o.Metrics.Errors(func(kind, errno string, n uint64) { errs[kind+" "+errno] = n })
	if errs["RMDIR ENOTEMPTY"] != 3 {
		t.Errorf("errors %v, want RMDIR ENOTEMPTY 3", errs)
	}
	for k := range errs {
		if strings.HasPrefix(k, "MKDIR ") || strings.HasPrefix(k, "WRITE ") {
			t.Errorf("error counted for a request that succeeded: %v", errs)
		}
	}
}
