package testenv

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"sshfsm/internal/mountinfo"
)

// fusectlDir is where the FUSE control file system shows each connection.
const fusectlDir = "/sys/fs/fuse/connections"

// AbortFUSE aborts the FUSE connection of the mount m: every request
// waiting on it fails with ENOTCONN at once, and so does every later one.
// It is the one way to free a thread that waits for a daemon that will
// never answer, such as a test binary's own mount when the binary is
// ending: a request the daemon has received is waited for uninterruptibly,
// and the daemon's /dev/fuse descriptor is released only when every thread
// of the process has ended, the waiting one too. It reports whether it
// could write the abort file (it needs root and fusectl).
func AbortFUSE(m Mount) bool {
	if !strings.HasPrefix(m.FSType, "fuse") {
		return false
	}
	_, minor, ok := strings.Cut(m.Dev, ":")
	if !ok {
		return false
	}
	mountFusectl()
	err := os.WriteFile(filepath.Join(fusectlDir, minor, "abort"), []byte("1"), 0o200)
	return err == nil
}

// mountFusectl mounts the FUSE control file system when it is not mounted
// and this process may (root); otherwise it does nothing.
func mountFusectl() {
	if m, ok := mountinfo.At(fusectlDir); ok && m.FSType == "fusectl" {
		return
	}
	if os.Geteuid() == 0 {
		_ = exec.Command("mount", "-t", "fusectl", "fusectl", fusectlDir).Run()
	}
}

// abortMountsBelow aborts the FUSE connections of every mount below dir and
// returns how many it aborted.
func abortMountsBelow(dir string) int {
	n := 0
	for _, m := range mountsBelow(dir) {
		if AbortFUSE(m) {
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
