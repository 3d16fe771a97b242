package testenv

import (
	"flag"
	"fmt"
	"os"
	"time"

	"sshfsm/internal/mountinfo"
)

// abortMountsBelow aborts the FUSE connections of every mount below dir and
// returns how many it aborted. A request the daemon has received is waited
// for uninterruptibly, and a daemon's /dev/fuse descriptor is released only
// when every thread of its process has ended: a test binary whose thread
// waits on the binary's own mount can end only through the abort.
func abortMountsBelow(dir string) int {
	n := 0
	for _, m := range mountsBelow(dir) {
		if mountinfo.AbortFUSE(m.Point) == nil {
			n++
		}
	}
	return n
}

// abortBeforeTimeout arranges that, shortly before go test's -timeout ends
// the binary, the FUSE connections of the mounts below dir are aborted: the
// binary then dies with its timeout panic and stack dump, instead of
// lingering as a zombie whose last thread waits on its own mount, which
// neither go test nor kill -9 can end. It returns a function that cancels
// the arrangement.
func abortBeforeTimeout(dir string) (stop func()) {
	f := flag.Lookup("test.timeout")
	if f == nil {
		return func() {}
	}
	timeout, err := time.ParseDuration(f.Value.String())
	if err != nil || timeout <= 0 {
		return func() {}
	}
	margin := min(time.Minute, timeout/10)
	t := time.AfterFunc(timeout-margin, func() {
		n := abortMountsBelow(dir)
		fmt.Fprintf(os.Stderr, "testenv: the tests still run %v before go test's -timeout (%v): aborted the FUSE connections of %d mounts below %s\n",
			margin, timeout, n, dir)
	})
	return func() { t.Stop() }
}
