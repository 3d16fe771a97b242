package e2e

import (
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	"sshfsm/internal/control"
	"sshfsm/internal/netproxy"
	"sshfsm/internal/testenv"
)

// TestAbortEndsDaemonWithFsyncWaiting ends a mount's FUSE connection from
// outside, through fusectl's abort (what an administrator does to a mount
// that hangs), while a program's fsync waits for its writes on a stalled
// link, with a timeout far longer than any test. The kernel has then
// answered every caller; the daemon must exit on its own within the time
// a stop signal is given (it counts from the end of the connection, not
// from the end of its own requests, which would be the timeout), and
// leave no dead mount behind. How long it took is logged, not asserted:
// with the timeout at 600 s, a daemon waiting for its requests outlives
// the test's patience.
func TestAbortEndsDaemonWithFsyncWaiting(t *testing.T) {
	h := testenv.StartHost(t, "127.0.0.7")
	p, sshArgs, dest := proxied(t, h, netproxy.Options{MaxQueued: 64 << 10})
	m := mount(t, h, mountSpec{sshArgs: sshArgs, dest: dest, opts: []string{"timeout=600"}})
	pid := m.daemonPID()
	if pid == 0 {
		t.Fatalf("no daemon process found serving %s", m.Dir)
	}
	t.Cleanup(func() { testenv.AbortFUSE(m.Dir) })

	// 4 MiB fit in the writes a handle queues: they are all
	// acknowledged, and the fsync then waits for them.
	w := startHelper(t, "write", m.Path("big"), fmt.Sprint(4*mib), "11", fmt.Sprint(mib))
	if got := w.next(t, testenv.Patience()); got != "paused" {
		t.Fatalf("writer: %q, want paused", got)
	}
	p.Blackhole(true)
	t.Cleanup(func() { p.Blackhole(false) })
	w.resume(t)
	testenv.Eventually(t, "an fsync waiting on the stalled link", func() bool {
		st, err := (control.Client{}).Query(m.Dir)
		return err == nil && st.Requests != nil && strings.EqualFold(st.Requests.OldestKind, "FSYNC")
	})

	start := time.Now()
	if err := testenv.AbortFUSE(m.Dir); err != nil {
		t.Fatalf("aborting the FUSE connection: %v", err)
	}
	if got := w.next(t, testenv.Patience()); got == "done" {
		t.Errorf("the writer finished as if its data were stored; want an error")
	} else {
		t.Logf("the writer: %s", got)
	}
	testenv.Eventually(t, "the daemon exits after its connection was aborted", func() bool { return !testenv.Alive(pid) })
	t.Logf("the daemon exited %v after the abort", time.Since(start).Round(time.Millisecond))
	if testenv.MountedAt(m.Dir) {
		var st syscall.Stat_t
		t.Errorf("the daemon left its aborted mount at %s (stat: %v); want it detached", m.Dir, syscall.Stat(m.Dir, &st))
	}
}

// TestLazyUnmountFromOutsideEndsDaemon unmounts a mount lazily from
// outside (umount -l) while a program's open waits on a stalled link.
// The kernel keeps the filesystem, and the daemon serving it, until that
// call is answered: the daemon must answer it within its timeout (the
// watchdog's limit), with an error since the link stays stalled, and then
// exit on its own, the connection having ended.
//
// The open's lookup lists the directory with a remote command (a mount of
// one host lists by tree listings), whose ssh process is killed at the
// timeout: the lookup must not then wait for the stderr the ssh master
// holds on to. The timeout is short so that the watchdog's margin (half
// of it) is shorter than that wait was (1 s).
func TestLazyUnmountFromOutsideEndsDaemon(t *testing.T) {
	const timeout = time.Second
	h := testenv.StartHost(t, "127.0.0.8")
	writeServerFile(t, h.Dir+"/unread", mib, 4)
	p, sshArgs, dest := proxied(t, h, netproxy.Options{})
	m := mount(t, h, mountSpec{sshArgs: sshArgs, dest: dest,
		opts: []string{fmt.Sprintf("timeout=%g", timeout.Seconds()), "prefetch_depth=0"}})
	pid := m.daemonPID()
	if pid == 0 {
		t.Fatalf("no daemon process found serving %s", m.Dir)
	}
	t.Cleanup(func() { testenv.AbortFUSE(m.Dir) })
	startWatchdog(t, m, timeout)

	p.Blackhole(true)
	t.Cleanup(func() { p.Blackhole(false) })
	r := startHelper(t, "read", m.Path("unread"))
	if got := r.next(t, testenv.Patience()); !strings.HasPrefix(got, "ready ") {
		t.Fatalf("reader: %q, want ready", got)
	}
	testenv.Eventually(t, "the reader's request in flight", func() bool {
		st, err := (control.Client{}).Query(m.Dir)
		return err == nil && st.Requests != nil && st.Requests.InFlight > 0
	})
	if err := syscall.Unmount(m.Dir, syscall.MNT_DETACH); err != nil {
		t.Fatalf("umount -l: %v", err)
	}
	got := r.next(t, testenv.Patience())
	if !strings.HasPrefix(got, "open: ") && !strings.HasPrefix(got, "read: ") || strings.HasSuffix(got, " bytes") {
		t.Errorf("reader printed %q, want its open or read to fail", got)
	} else {
		t.Logf("the reader: %s", got)
	}
	start := time.Now()
	testenv.Eventually(t, "the daemon exits once its lazily unmounted filesystem is released", func() bool { return !testenv.Alive(pid) })
	t.Logf("the daemon exited %v after the reader's call ended", time.Since(start).Round(time.Millisecond))
}
