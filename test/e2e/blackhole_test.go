package e2e

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"sshfsm/internal/mountinfo"
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
		killsBlocked(t, exec.Command("cat", m.Path("cat-me")), syscall.SIGINT)
	})

	// A signal whose default action dumps core is fatal too, although the
	// kernel queues no SIGKILL for it.
	t.Run("SIGABRTStopsBlockedCat", func(t *testing.T) {
		killsBlocked(t, exec.Command("sh", "-c", `ulimit -c 0; exec cat "$0"`, m.Path("abort-me")), syscall.SIGABRT)
	})

	t.Run("SIGINTGivesEINTR", func(t *testing.T) {
		r, tid := blockedReader(t, "read", m.Path("read-me"))
		sigintGivesEINTR(t, r, tid)
	})

	// Signals a program expects its system calls to survive (the Go
	// runtime's preemption, a child's exit, a timer, a resize, dd's
	// progress request) leave a blocked call waiting; a SIGINT that comes
	// after them still ends it, although the kernel sends one interrupt
	// per call.
	t.Run("HousekeepingSignalsWaitSIGINTDoesNot", func(t *testing.T) {
		r, tid := blockedReader(t, "read", m.Path("wait-me"))
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
		sigintGivesEINTR(t, r, tid)
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

// killsBlocked starts cmd, checks that it is still blocked after a
// second, sends sig and checks that cmd dies of it within 2s.
func killsBlocked(t *testing.T, cmd *exec.Cmd, sig syscall.Signal) {
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
	case <-time.After(30 * time.Second):
		cmd.Process.Kill()
		<-done
		t.Fatalf("%s still runs 30s after %v", cmd, sig)
	}
	after := time.Since(sent)
	ws, _ := cmd.ProcessState.Sys().(syscall.WaitStatus)
	if !ws.Signaled() || ws.Signal() != sig {
		t.Errorf("%s ended with %v, want death by %v", cmd, cmd.ProcessState, sig)
	}
	if after > 2*time.Second {
		t.Errorf("%s ended %v after %v, want within 2s", cmd, after, sig)
	}
}

// blockedReader starts the read helper (mode read or read-stay) on path
// and checks that its call blocks (for a second); it returns the helper
// and the blocked thread.
func blockedReader(t *testing.T, mode, path string) (*helper, int) {
	t.Helper()
	r := startHelper(t, mode, path)
	var tid int
	if _, err := fmt.Sscanf(r.next(t, 30*time.Second), "ready %d", &tid); err != nil {
		t.Fatalf("reader helper: %v", err)
	}
	select {
	case line := <-r.lines:
		t.Fatalf("reader printed %q before any signal: the call did not block on the black-holed link", line)
	case <-time.After(time.Second):
	}
	return r, tid
}

// sigintGivesEINTR sends SIGINT to the blocked reader's thread and checks
// that its call fails with EINTR within 2s.
func sigintGivesEINTR(t *testing.T, r *helper, tid int) {
	t.Helper()
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
}

// TestAbortedConnectionEndsDaemon aborts the FUSE connection (echo 1 >
// /sys/fs/fuse/connections/N/abort, the remedy for a hung mount) while a
// call waits on a black-holed link after an interrupt it ignored: the
// kernel answers the caller at once, and the daemon must end at once too,
// not when the call's timeout passes, although the caller lives on.
func TestAbortedConnectionEndsDaemon(t *testing.T) {
	h := testenv.StartHost(t, "127.0.0.2")
	if err := os.WriteFile(h.Dir+"/stuck", []byte("served by stuck"), 0o644); err != nil {
		t.Fatal(err)
	}
	connections := fusectl(t)
	p, sshArgs, dest := proxied(t, h, netproxy.Options{})
	m := mount(t, h, mountSpec{sshArgs: sshArgs, dest: dest, opts: []string{"timeout=600", "prefetch_depth=0"}})
	var st unix.Stat_t
	if err := unix.Stat(m.Dir, &st); err != nil {
		t.Fatal(err)
	}
	ctl := fmt.Sprintf("%s/%d", connections, unix.Minor(st.Dev))
	if _, err := os.Stat(ctl + "/abort"); err != nil {
		t.Fatalf("the mount's connection has no control directory: %v", err)
	}
	pid := m.daemonPID()
	if pid == 0 {
		t.Fatal("no daemon process serves the mount")
	}

	p.Blackhole(true)
	t.Cleanup(func() { p.Blackhole(false) })
	r, tid := blockedReader(t, "read-stay", m.Path("stuck"))
	syscall.Tgkill(r.cmd.Process.Pid, tid, syscall.SIGURG)
	select {
	case line := <-r.lines:
		t.Fatalf("reader printed %q after SIGURG: the signal interrupted its call", line)
	case <-time.After(300 * time.Millisecond):
	}

	aborted := time.Now()
	if err := os.WriteFile(ctl+"/abort", []byte("1"), 0o200); err != nil {
		t.Fatal(err)
	}
	if got := r.next(t, 10*time.Second); !strings.HasPrefix(got, "open: ") && !strings.HasPrefix(got, "read: ") {
		t.Errorf("reader printed %q after the abort, want its open or read to fail", got)
	}
	if !waitExit(pid, testenv.Patience()) {
		t.Fatalf("daemon %d still runs long after its connection was aborted (the call's timeout is 600s)", pid)
	}
	t.Logf("daemon ended %v after the abort", time.Since(aborted).Round(time.Millisecond))
}

// fusectl returns where the FUSE control filesystem is mounted, mounting
// it first as systemd does at boot if it is not, until the test ends.
func fusectl(t *testing.T) string {
	t.Helper()
	const dir = "/sys/fs/fuse/connections"
	if m, ok := mountinfo.At(dir); ok && m.FSType == "fusectl" {
		return dir
	}
	if err := unix.Mount("fusectl", dir, "fusectl", 0, ""); err != nil {
		t.Skipf("fusectl is not mounted and cannot be (needs root): %v", err)
	}
	t.Cleanup(func() {
		if err := unix.Unmount(dir, 0); err != nil {
			t.Errorf("unmounting fusectl: %v", err)
		}
	})
	return dir
}
