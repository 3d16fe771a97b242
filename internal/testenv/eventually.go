package testenv

import (
	"os"
	"testing"
	"time"
)

// PatienceDefault is how long Eventually waits before it gives up. It is
// generous on purpose: the suite runs under -race on loaded two-core machines,
// and a condition that holds late is not a failure of the behaviour tested.
// SSHFSM_TEST_PATIENCE (a Go duration) overrides it.
const PatienceDefault = 2 * time.Minute

// Patience returns how long polls wait for a condition.
func Patience() time.Duration {
	if s := os.Getenv("SSHFSM_TEST_PATIENCE"); s != "" {
		if d, err := time.ParseDuration(s); err == nil && d > 0 {
			return d
		}
	}
	return PatienceDefault
}

// Poll calls cond until it returns true or Patience has passed, and reports
// whether it did. The pause between calls grows from 1 ms to 100 ms, so a
// condition that holds soon is seen soon and a slow one costs little CPU.
// Every wait for something asynchronous in the tests goes through Poll or
// Eventually: no test sleeps a fixed time and hopes.
func Poll(cond func() bool) bool {
	return PollFor(Patience(), cond)
}

// PollFor is Poll with its own limit, for the rare wait that is expected to
// time out (proving that something does NOT happen within d).
func PollFor(d time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(d)
	pause := time.Millisecond
	for {
		if cond() {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(pause)
		if pause < 100*time.Millisecond {
			pause *= 2
		}
	}
}

// Eventually fails the test when cond does not hold within Patience. what
// names the condition in the failure message.
func Eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	if !Poll(cond) {
		t.Fatalf("after %v: still not %s", Patience(), what)
	}
}

// EventuallyNoError is Eventually for a check that explains its failure: the
// last error is in the failure message.
func EventuallyNoError(t testing.TB, what string, check func() error) {
	t.Helper()
	var last error
	if !Poll(func() bool { last = check(); return last == nil }) {
		t.Fatalf("after %v: still not %s: %v", Patience(), what, last)
	}
}

// Returns runs fn and fails the test when it has not returned within
// Patience: the check that a call fails fast instead of waiting for a host
// or a timeout. Give the code under test no timeout of its own, or one
// longer than Patience, so that only failing fast passes.
func Returns(t testing.TB, what string, fn func()) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		fn()
	}()
	select {
	case <-done:
	case <-time.After(Patience()):
		t.Fatalf("%s: still waiting after %v", what, Patience())
	}
}
