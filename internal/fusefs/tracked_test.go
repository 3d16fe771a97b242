package fusefs

import (
	"os"
	"path/filepath"
	"testing"

	"sshfsm/internal/inflight"
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
