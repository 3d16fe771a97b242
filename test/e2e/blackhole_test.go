package e2e

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"

	"sshfsm/internal/netproxy"
	"sshfsm/internal/testenv"
)

// TestBlackhole cuts the link silently (nothing answers, nothing closes):
// calls must fail within the timeout, blocked calls must yield to SIGINT,
// and the same mount must work again once the link is back.
func TestBlackhole(t *testing.T) {
	const timeout = 5 * time.Second
	h := testenv.StartHost(t, "127.0.0.2")
	// Files the mount has not opened and a directory it has not listed, so
	// that no cache can answer for them.
	for _, name := range []string{"cat-me", "abort-me", "read-me", "wait-me"} {
		if err := os.WriteFile(h.Dir+"/"+name, []byte("served by "+name), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Mkdir(h.Dir+"/unlisted", 0o755); err != nil {
		t.Fatal(err)
	}
	p, sshArgs, dest := proxied(t, h, netproxy.Options{})
	// prefetch_depth=0: listing the root must not list "unlisted" ahead.
	m := mount(t, h, mountSpec{sshArgs: sshArgs, dest: dest, opts: []string{"timeout=5", "reconnect", "prefetch_depth=0"}})

	if err := os.WriteFile(m.Path("before"), []byte("written before"), 0o644); err != nil {
		t.Fatal(err)
	}

	p.Blackhole(true)
	t.Cleanup(func() { p.Blackhole(false) })

	t.Run("StatFailsWithinTimeout", func(t *testing.T) {
		start := time.Now()
		var err error
		within(t, 60*time.Second, "stat on a black-holed mount", func() error {
			_, err = os.Stat(m.Path("unlisted", "never-seen"))
			return nil
		})
		took := time.Since(start)
		if err == nil || errors.Is(err, os.ErrNotExist) {
			t.Errorf("stat = %v, want an error other than ENOENT (the server cannot be asked)", err)
		}
		if took > timeout+2*time.Second {
			t.Errorf("stat returned after %v, want at most timeout+2s = %v", took, timeout+2*time.Second)
		}
		t.Logf("stat returned %v after %v", err, took)
	})

	t.Run("SIGINTStopsBlockedCat", func(t *testing.T) {
		cmd := exec.Command("cat", m.Path("cat-me"))
		status, after := interrupt(t, cmd, syscall.SIGINT)
		ws, _ := status.Sys().(syscall.WaitStatus)
		if !ws.Signaled() || ws.Signal() != syscall.SIGINT {
			t.Errorf("cat ended with %v, want death by SIGINT", status)
		}
		if after > 2*time.Second {
			t.Errorf("cat ended %v after SIGINT, want within 2s", after)
		}
	})

	// A signal whose default action dumps core is fatal too, although the
	// kernel queues no SIGKILL for it.
	t.Run("SIGABRTStopsBlockedCat", func(t *testing.T) {
		cmd := exec.Command("sh", "-c", `ulimit -c 0; exec cat "$0"`, m.Path("abort-me"))
		status, after := interrupt(t, cmd, syscall.SIGABRT)
		ws, _ := status.Sys().(syscall.WaitStatus)
		if !ws.Signaled() || ws.Signal() != syscall.SIGABRT {
			t.Errorf("cat ended with %v, want death by SIGABRT", status)
		}
		if after > 2*time.Second {
			t.Errorf("cat ended %v after SIGABRT, want within 2s", after)
		}
	})

	t.Run("SIGINTGivesEINTR", func(t *testing.T) {
		r := startHelper(t, "read", m.Path("read-me"))
		var tid int
		if _, err := fmt.Sscanf(r.next(t, 30*time.Second), "ready %d", &tid); err != nil {
			t.Fatalf("reader helper: %v", err)
		}
		select {
		case line := <-r.lines:
			t.Fatalf("reader printed %q before the signal: the call did not block on the black-holed link", line)
		case <-time.After(time.Second):
		}
		sent := time.Now()
		if err := syscall.Tgkill(r.cmd.Process.Pid, tid, syscall.SIGINT); err != nil {
			t.Fatal(err)
		}
		got := r.next(t, 30*time.Second)
		if got != "open: EINTR" && got != "read: EINTR" {
			t.Errorf("reader printed %q, want its open or read to fail with EINTR", got)
		}
		if after := time.Since(sent); after > 2*time.Second {
			t.Errorf("reader's call returned %v after SIGINT, want within 2s", after)
		}
	})

	// Signals a program expects its system calls to survive (the Go
	// runtime's preemption, a child's exit, a timer, a resize, dd's
	// progress request) leave a blocked call waiting; a SIGINT that comes
	// after them still ends it, although the kernel sends one interrupt
	// per call.
	t.Run("HousekeepingSignalsWaitSIGINTDoesNot", func(t *testing.T) {
		r := startHelper(t, "read", m.Path("wait-me"))
		var tid int
		if _, err := fmt.Sscanf(r.next(t, 30*time.Second), "ready %d", &tid); err != nil {
			t.Fatalf("reader helper: %v", err)
		}
		select {
		case line := <-r.lines:
			t.Fatalf("reader printed %q before any signal: the call did not block on the black-holed link", line)
		case <-time.After(time.Second):
		}
		for i := range 20 {
			sig := []syscall.Signal{syscall.SIGURG, syscall.SIGCHLD, syscall.SIGWINCH, syscall.SIGALRM, syscall.SIGUSR1}[i%5]
			syscall.Tgkill(r.cmd.Process.Pid, tid, sig)
			wait := 25 * time.Millisecond
			if i == 19 {
				wait = 300 * time.Millisecond
			}
			select {
			case line := <-r.lines:
				t.Fatalf("reader printed %q after %v: the signal interrupted its call", line, sig)
			case <-time.After(wait):
			}
		}
		sent := time.Now()
		if err := syscall.Tgkill(r.cmd.Process.Pid, tid, syscall.SIGINT); err != nil {
			t.Fatal(err)
		}
		got := r.next(t, 30*time.Second)
		if got != "open: EINTR" && got != "read: EINTR" {
			t.Errorf("reader printed %q, want its open or read to fail with EINTR", got)
		}
		if after := time.Since(sent); after > 2*time.Second {
			t.Errorf("reader's call returned %v after SIGINT, want within 2s", after)
		}
	})

	p.Blackhole(false)
	eventually(t, 30*time.Second, "using the mount after the link is back", func() error {
		if err := os.WriteFile(m.Path("after"), []byte("written after"), 0o644); err != nil {
			return err
		}
		for name, want := range map[string]string{
			"before": "written before", "after": "written after",
			"cat-me": "served by cat-me", "abort-me": "served by abort-me",
			"read-me": "served by read-me", "wait-me": "served by wait-me",
		} {
			got, err := os.ReadFile(m.Path(name))
			if err != nil {
				return err
			}
			if string(got) != want {
				return fmt.Errorf("%s = %q, want %q", name, got, want)
			}
		}
		return nil
	})
}

// interrupt starts cmd, checks that it is still blocked after a second,
// sends sig and waits (at most 30s) for it to end. It returns how it
// ended and how long after the signal.
func interrupt(t *testing.T, cmd *exec.Cmd, sig syscall.Signal) (*os.ProcessState, time.Duration) {
	t.Helper()
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		io.Copy(io.Discard, stdout)
		cmd.Wait()
		close(done)
	}()
	select {
	case <-done:
		t.Fatalf("%s ended before the signal (%v): the call did not block on the black-holed link", cmd, cmd.ProcessState)
	case <-time.After(time.Second):
	}
	sent := time.Now()
	if err := cmd.Process.Signal(sig); err != nil {
		t.Fatal(err)
	}
	select {
	case <-done:
		return cmd.ProcessState, time.Since(sent)
	case <-time.After(30 * time.Second):
		cmd.Process.Kill()
		<-done
		t.Fatalf("%s still runs 30s after %v", cmd, sig)
	}
	return nil, 0
}
