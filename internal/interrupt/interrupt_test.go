package interrupt

import (
	"context"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/hanwen/go-fuse/v2/fuse"

	"sshfsm/internal/testenv"
)

func TestParseStatus(t *testing.T) {
	status := "Name:\tcat\nSigQ:\t0/96365\nSigPnd:\t0000000000000002\nShdPnd:\t0000000000400000\nSigBlk:\t0000000000000002\nSigIgn:\t0000000000001000\nSigCgt:\t0000000000004000\n"
	got, err := parseStatus([]byte(status))
	if err != nil {
		t.Fatal(err)
	}
	want := signalState{sigPnd: 2, shdPnd: 0x400000, sigBlk: 2, sigIgn: 0x1000, sigCgt: 0x4000}
	if got != want {
		t.Errorf("parsed %+v, want %+v", got, want)
	}
	if _, err := parseStatus([]byte("Name:\tcat\nSigPnd:\t0\n")); err == nil {
		t.Error("a status without ShdPnd, SigBlk, SigIgn and SigCgt parsed without error")
	}
	if _, err := parseStatus([]byte("SigPnd:\tzz\nShdPnd:\t0\nSigBlk:\t0\nSigIgn:\t0\nSigCgt:\t0\n")); err == nil {
		t.Error("a status with a malformed SigPnd parsed without error")
	}
}

// stopped starts a shell that catches sigs (none if empty) and stops it, so that signals
// sent to it stay pending; it returns its pid.
func stopped(t *testing.T, sigs string) int {
	t.Helper()
	script := "kill -STOP $$; exit 0"
	if sigs != "" {
		script = "trap : " + sigs + "; " + script
	}
	cmd := exec.Command("bash", "-c", script)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	pid := cmd.Process.Pid
	deadline := time.Now().Add(10 * time.Second)
	for {
		out, err := exec.Command("ps", "-o", "stat=", "-p", strconv.Itoa(pid)).Output()
		if err == nil && strings.HasPrefix(strings.TrimSpace(string(out)), "T") {
			return pid
		}
		if time.Now().After(deadline) {
			t.Fatalf("shell %d did not stop: %s %v", pid, out, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestMeantSignals(t *testing.T) {
	for _, c := range []struct {
		sig  syscall.Signal
		name string
		want bool
	}{
		{syscall.SIGWINCH, "WINCH", false},
		{syscall.SIGCHLD, "CHLD", false},
		{syscall.SIGALRM, "ALRM", false},
		{syscall.SIGUSR1, "USR1", false},
		{syscall.SIGTSTP, "TSTP", false},
		{syscall.SIGINT, "INT", true},
		{syscall.SIGTERM, "TERM", true},
		{syscall.SIGHUP, "HUP", true},
		{syscall.SIGQUIT, "QUIT", true},
		// Not caught: its default action dumps core, for which the
		// kernel queues no SIGKILL.
		{syscall.SIGABRT, "", true},
		{syscall.SIGSEGV, "", true},
	} {
		pid := stopped(t, c.name)
		if meant(uint32(pid)) {
			t.Fatalf("a stopped shell with nothing pending means to stop")
		}
		if err := syscall.Kill(pid, c.sig); err != nil {
			t.Fatal(err)
		}
		if got := meant(uint32(pid)); got != c.want {
			t.Errorf("with %v pending (caught: %q), Meant = %v, want %v", c.sig, c.name, got, c.want)
		}
	}
	if !meant(1 << 30) {
		t.Error("a thread that does not exist does not mean to stop: it cannot wait for an answer")
	}
}

// request is what go-fuse gives a node method: the caller's thread and the
// channel an interrupt closes.
func request(tid int) (*fuse.Context, chan struct{}) {
	cancel := make(chan struct{})
	return &fuse.Context{Caller: fuse.Caller{Pid: uint32(tid)}, Cancel: cancel}, cancel
}

// goesOn fails with why if ctx is cancelled within three polls.
func goesOn(t *testing.T, ctx context.Context, why string) {
	t.Helper()
	select {
	case <-ctx.Done():
		t.Fatal(why)
	case <-time.After(3 * pollInterval):
	}
}

// cancelled fails with why unless ctx is cancelled within ten polls.
func cancelled(t *testing.T, ctx context.Context, why string) {
	t.Helper()
	select {
	case <-ctx.Done():
	case <-time.After(10 * pollInterval):
		t.Fatal(why)
	}
}

func TestFilterIgnoresHousekeeping(t *testing.T) {
	pid := stopped(t, "WINCH TERM")
	syscall.Kill(pid, syscall.SIGWINCH)
	parent, cancel := request(pid)
	ctx, req := Filter(parent, alive)
	defer req.End()
	close(cancel)
	goesOn(t, ctx, "an interrupt for SIGWINCH cancelled the request")
	if ctx.Err() != nil {
		t.Fatalf("Err = %v after an ignored interrupt", ctx.Err())
	}
	// A later SIGTERM (caught) ends it without a second interrupt.
	syscall.Kill(pid, syscall.SIGTERM)
	cancelled(t, ctx, "SIGTERM after an ignored interrupt did not cancel the request")
	if ctx.Err() != context.Canceled {
		t.Errorf("Err = %v, want context.Canceled", ctx.Err())
	}
}

// A caller that died while waiting (a fatal signal: the end-to-end tests
// kill a cat blocked on a dead link) cannot use an answer.
func TestFilterHonoursDeadCaller(t *testing.T) {
	cmd := exec.Command("sleep", "60")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	parent, cancel := request(cmd.Process.Pid)
	ctx, req := Filter(parent, alive)
	defer req.End()
	if ctx.Err() != nil {
		t.Fatalf("Err = %v before any interrupt", ctx.Err())
	}
	cmd.Process.Kill()
	cmd.Wait()
	close(cancel)
	select {
	case <-ctx.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("an interrupt from a caller that died did not cancel the request")
	}
}

func TestFilterEndStopsWatching(t *testing.T) {
	before := runtime.NumGoroutine()
	for range 100 {
		parent, _ := request(1)
		ctx, req := Filter(parent, alive)
		_ = ctx.Done()
		req.End()
	}
	deadline := time.Now().Add(10 * time.Second)
	for runtime.NumGoroutine() > before {
		if time.Now().After(deadline) {
			t.Fatalf("%d goroutines after 100 ended requests, %d before", runtime.NumGoroutine(), before)
		}
		time.Sleep(10 * time.Millisecond)
	}
	parent, _ := request(1)
	ctx, req := Filter(parent, alive)
	req.End()
	if ctx.Err() != nil {
		t.Errorf("Err = %v for a request ended before anything waited", ctx.Err())
	}
}

func TestFilterPassesOthers(t *testing.T) {
	ctx, req := Filter(context.Background(), alive)
	defer req.End() // nil: does nothing
	if ctx != context.Background() || req != nil {
		t.Error("a context without a FUSE caller was wrapped")
	}
	parent, _ := request(1)
	once, req1 := Filter(parent, alive)
	defer req1.End()
	if twice, _ := Filter(once, alive); twice != once {
		t.Error("a filtered context was filtered again")
	}
	if c, ok := fuse.FromContext(once); !ok || c.Pid != 1 {
		t.Errorf("caller of the filtered context = %v %v, want pid 1", c, ok)
	}
}

// conn is a FUSE connection whose end the test decides.
type conn struct{ gone atomic.Bool }

func (c *conn) Gone() bool { return c.gone.Load() }

// alive is a connection that never ends.
var alive = &conn{}

// When the connection ends, go-fuse cancels every request in flight; the
// kernel answered the callers, so the request ends too.
func TestFilterHonoursGoneConnection(t *testing.T) {
	c := &conn{}
	parent, cancel := request(os.Getpid())
	ctx, req := Filter(parent, c)
	defer req.End()
	close(cancel)
	goesOn(t, ctx, "an interrupt with nothing pending cancelled the request while the connection lives")
	c.gone.Store(true)
	cancelled(t, ctx, "the request went on after its connection ended")
}

// Await waits without a goroutine until an interrupt comes, then filters
// it as Done does.
func TestAwait(t *testing.T) {
	pid := stopped(t, "WINCH TERM")
	parent, cancel := request(pid)
	ctx, req := Filter(parent, alive)
	defer req.End()
	r := ctx.(*Request)

	// Watchers of the earlier tests' requests end on their own time.
	for i := 0; goroutinesIn("(*Request).watch") > 0; i++ {
		if i == 200 {
			t.Fatal("watchers of ended requests are still running after 2 s")
		}
		time.Sleep(10 * time.Millisecond)
	}
	answered := make(chan struct{})
	result := make(chan error, 1)
	go func() { result <- r.Await(answered) }()
	time.Sleep(50 * time.Millisecond)
	if w, a := goroutinesIn("(*Request).watch"), goroutinesIn("(*Request).Await"); w != 0 || a != 1 {
		t.Errorf("while one request awaits: %d watchers, %d waiters; want only the waiter", w, a)
	}
	close(answered)
	if err := <-result; err != nil {
		t.Fatalf("Await of an answered request = %v", err)
	}

	// An interrupt for SIGWINCH is ignored; a later SIGTERM ends the wait.
	syscall.Kill(pid, syscall.SIGWINCH)
	close(cancel)
	never := make(chan struct{})
	go func() { result <- r.Await(never) }()
	select {
	case err := <-result:
		t.Fatalf("an interrupt for SIGWINCH ended Await: %v", err)
	case <-time.After(3 * pollInterval):
	}
	syscall.Kill(pid, syscall.SIGTERM)
	select {
	case err := <-result:
		if err != context.Canceled {
			t.Errorf("Await after SIGTERM = %v, want context.Canceled", err)
		}
	case <-time.After(10 * pollInterval):
		t.Fatal("SIGTERM after an ignored interrupt did not end Await")
	}
}

// goroutinesIn counts the goroutines with fn, a function of this package,
// on their stack.
func goroutinesIn(fn string) int {
	buf := make([]byte, 1<<20)
	buf = buf[:runtime.Stack(buf, true)]
	n := 0
	for _, g := range strings.Split(string(buf), "\n\n") {
		if strings.Contains(g, "sshfsm/internal/interrupt."+fn+"(") {
			n++
		}
	}
	return n
}

// TestFilterWithinEndsAtItsBound: a request bounded by FilterWithin is
// done at its bound with context.DeadlineExceeded, seen through Await, Err
// and contexts derived from it (as the transport derives its calls'), and
// the bound is its Deadline.
func TestFilterWithinEndsAtItsBound(t *testing.T) {
	parent, _ := request(os.Getpid())
	const limit = 50 * time.Millisecond
	start := time.Now()
	ctx, req := FilterWithin(parent, alive, limit)
	defer req.End()
	if d, ok := ctx.Deadline(); !ok || d.Before(start.Add(limit)) {
		t.Fatalf("Deadline = %v, %v; want the bound %v after the start", d, ok, limit)
	}
	if err := req.Await(make(chan struct{})); err != context.DeadlineExceeded {
		t.Fatalf("Await = %v, want context.DeadlineExceeded", err)
	}
	if waited := time.Since(start); waited < limit {
		t.Fatalf("Await returned after %v, before the bound %v", waited, limit)
	}
	child, cancel := context.WithTimeout(ctx, time.Hour)
	defer cancel()
	select {
	case <-child.Done():
	case <-time.After(testenv.Patience()):
		t.Fatal("a context derived from a bounded request did not end at its bound")
	}
	if child.Err() != context.DeadlineExceeded || ctx.Err() != context.DeadlineExceeded {
		t.Fatalf("Err = %v (derived: %v), want context.DeadlineExceeded", ctx.Err(), child.Err())
	}
}

// TestFilterWithinZeroSetsNoBound: a limit of 0 leaves the request as
// Filter makes it.
func TestFilterWithinZeroSetsNoBound(t *testing.T) {
	parent, _ := request(os.Getpid())
	ctx, req := FilterWithin(parent, alive, 0)
	defer req.End()
	if d, ok := ctx.Deadline(); ok {
		t.Fatalf("Deadline = %v, want none", d)
	}
	goesOn(t, ctx, "a request without a bound ended")
	if ctx.Err() != nil {
		t.Fatalf("Err = %v", ctx.Err())
	}
}

// TestFilterKeepsParentDeadline: a request filtered from a context with a
// deadline (what follows a change, made in the time left to the request
// that made it) ends at that deadline, as a bound of its own, although
// the deadline's passing cancels its parent like an interrupt would; and
// FilterWithin's later bound does not extend it.
func TestFilterKeepsParentDeadline(t *testing.T) {
	fctx, _ := request(os.Getpid())
	const left = 50 * time.Millisecond
	parent, cancelParent := context.WithTimeout(context.WithoutCancel(fctx), left)
	defer cancelParent()
	want, _ := parent.Deadline()
	ctx, req := FilterWithin(parent, alive, time.Hour)
	defer req.End()
	if d, ok := ctx.Deadline(); !ok || !d.Equal(want) {
		t.Fatalf("Deadline = %v, %v; want the parent's %v", d, ok, want)
	}
	awaited := make(chan error, 1)
	go func() { awaited <- req.Await(make(chan struct{})) }()
	select {
	case err := <-awaited:
		if err != context.DeadlineExceeded {
			t.Fatalf("Await = %v, want context.DeadlineExceeded", err)
		}
	case <-time.After(testenv.Patience()):
		t.Fatal("Await did not return at the parent's deadline")
	}
	child, cancel := context.WithTimeout(ctx, time.Hour)
	defer cancel()
	select {
	case <-child.Done():
	case <-time.After(testenv.Patience()):
		t.Fatal("a context derived from the request did not end at its parent's deadline")
	}
	if child.Err() != context.DeadlineExceeded || ctx.Err() != context.DeadlineExceeded {
		t.Fatalf("Err = %v (derived: %v), want context.DeadlineExceeded", ctx.Err(), child.Err())
	}
}
