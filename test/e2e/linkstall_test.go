package e2e

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"sshfsm/internal/control"
	"sshfsm/internal/fsx"
	"sshfsm/internal/netproxy"
	"sshfsm/internal/testenv"
)

// stallTimeout is the timeout option of the stall runs: short, so that
// stalls past it keep the run short, yet several times what a reconnect
// through a reset link takes on a loaded machine.
const stallTimeout = 6 * time.Second

// TestFsxLinkStallsAndResets runs fsx on a single-host mount whose TCP
// link, every few operations, is either cut (every connection closed;
// new ones go through at once) or stalled for 1-3 s (connections stay
// open, nothing moves, as on a lost link) while fsx goes on, and once
// per seed stalled for longer than the timeout. The proxy holds little
// data while stalled, so that writes into the link block as they do when
// a socket's buffer is full. Throughout, a watchdog fails the test if the
// daemon keeps any request longer than the timeout allows.
//
// Acknowledged writes must survive every cut and stall (as in
// TestFsxLinkResets). fsx takes every error as a failure, and an error is
// what a request caught by a stall longer than the timeout must get: the
// long stall therefore comes between operations, once nothing is in
// flight, and a request of its own (a read of a file never read before)
// must fail during it with ETIMEDOUT, EIO or ENOTCONN, within the
// watchdog's limit.
func TestFsxLinkStallsAndResets(t *testing.T) {
	h := testenv.StartHost(t, "127.0.0.4")
	const probes = 8
	for i := range probes {
		if err := os.MkdirAll(filepath.Join(h.Dir, "probes", fmt.Sprint(i)), 0o755); err != nil {
			t.Fatal(err)
		}
		writeServerFile(t, filepath.Join(h.Dir, "probes", fmt.Sprint(i), "data"), 64<<10, uint64(i))
	}
	p, sshArgs, dest := proxied(t, h, netproxy.Options{MaxQueued: 64 << 10})
	m := mount(t, h, mountSpec{sshArgs: sshArgs, dest: dest,
		opts: []string{fmt.Sprintf("timeout=%g", stallTimeout.Seconds())}})
	wd := startWatchdog(t, m, stallTimeout)
	st := &staller{p: p}
	t.Cleanup(st.lift) // before the watchdog's and the mount's cleanups
	nprobe := 0
	for _, seed := range linkLossSeeds(t) {
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
			dir := fmt.Sprintf("linkstall-%d", seed)
			if err := os.Mkdir(m.Path(dir), 0o755); err != nil {
				t.Fatal(err)
			}
			rng := rand.New(rand.NewPCG(seed, 23))
			const numOps = 200
			every := 8 + int(seed%4) // an event every 8..11 operations
			longAt := numOps/3 + rng.IntN(numOps/3)
			cuts, stalls, longs := 0, 0, 0
			var stalled time.Duration
			start := time.Now()
			err := fsx.Run(m.Path(dir), fsx.Options{
				Seed: seed, NumOps: numOps, Kinds: linkLossKinds(t), FullCheckEvery: 25,
				AfterOp: func(i int, _ string) {
					st.wait() // one event at a time
					switch {
					case i >= longAt && longs == 0 && nprobe < probes:
						longs++
						stalled += st.long(t, m, nprobe, rng)
						nprobe++
					case i%every != every-1:
					case rng.IntN(2) == 0:
						cuts += p.Reset()
					default:
						stalls++
						d := time.Second + time.Duration(rng.Int64N(int64(2*time.Second)))
						stalled += d
						st.stall(d)
					}
				},
				AfterFsync: func(path string, want []byte) error {
					return serverHolds(m, path, want)
				},
			})
			st.wait()
			age, kind := wd.oldest()
			t.Logf("seed %d: %v; %d connections cut, %d stalls of 1-3 s, %d past the timeout, %v stalled in all; oldest request so far %v (%s)",
				seed, time.Since(start).Round(time.Millisecond), cuts, stalls, longs, stalled.Round(time.Millisecond),
				age.Round(time.Millisecond), kind)
			if err != nil {
				logServerCopy(t, m, dir, err)
				t.Fatal(err)
			}
		})
	}
}

// staller stalls a proxy's link for a while, in the background.
type staller struct {
	p      *netproxy.Proxy
	lifted chan struct{} // closed when the current stall ends; nil if none
}

// stall stalls the link for d and returns at once.
func (s *staller) stall(d time.Duration) {
	s.p.Blackhole(true)
	lifted := make(chan struct{})
	s.lifted = lifted
	time.AfterFunc(d, func() {
		s.p.Blackhole(false)
		close(lifted)
	})
}

// wait waits until the current stall, if any, has ended.
func (s *staller) wait() {
	if s.lifted != nil {
		<-s.lifted
		s.lifted = nil
	}
}

// lift ends any stall now.
func (s *staller) lift() { s.p.Blackhole(false) }

// long stalls the link for longer than the timeout, once nothing is in
// flight, and checks that a request made meanwhile (reading probes/N/data,
// never read before) fails with an error while the link is still
// stalled. It returns how long the link was stalled.
func (s *staller) long(t *testing.T, m *Mount, n int, rng *rand.Rand) time.Duration {
	t.Helper()
	testenv.Eventually(t, "nothing in flight before a long stall", func() bool {
		st, err := (control.Client{}).Query(m.Dir)
		return err == nil && idle(st)
	})
	d := stallTimeout + time.Second + time.Duration(rng.Int64N(int64(2*time.Second)))
	start := time.Now()
	s.p.Blackhole(true)
	defer s.p.Blackhole(false)
	res := make(chan error, 1)
	go func() {
		_, err := os.ReadFile(m.Path("probes", fmt.Sprint(n), "data"))
		res <- err
	}()
	var err error
	select {
	case err = <-res:
	case <-time.After(testenv.Patience()):
		// The watchdog has failed the test by now; aborting the mount
		// releases the read.
		testenv.AbortFUSE(m.Dir)
		t.Fatalf("a read during a stall did not end within %v", testenv.Patience())
	}
	took := time.Since(start)
	t.Logf("a read during a stall failed after %v: %v", took.Round(time.Millisecond), err)
	if err == nil {
		t.Errorf("a read during a stall longer than the timeout succeeded")
	} else if !errors.Is(err, syscall.ETIMEDOUT) && !errors.Is(err, syscall.EIO) && !errors.Is(err, syscall.ENOTCONN) {
		t.Errorf("a read during a stall failed with %v, want ETIMEDOUT, EIO or ENOTCONN", err)
	}
	if rest := d - time.Since(start); rest > 0 {
		time.Sleep(rest) // the stall itself: the link stays down this long
	}
	return time.Since(start)
}

// idle reports whether a mount's daemon is answering no request and has
// none in flight to its servers.
func idle(st *control.Status) bool {
	if st.Requests == nil || st.Requests.InFlight != 0 {
		return false
	}
	for _, b := range st.Branches {
		for _, h := range b.Hosts {
			if h.InFlight != 0 {
				return false
			}
		}
	}
	return true
}

// TestRequestsEndDuringLongStall stalls the link of a mount for good while
// programs read, list, stat, create, write, fsync, rename and remove: each
// of their calls must end while the link stays stalled, and the watchdog
// fails the test if any is kept past the timeout. Each call must reach
// the server, so each fails (the link gives no answer); once the link is
// back the mount works again.
func TestRequestsEndDuringLongStall(t *testing.T) {
	const timeout = 3 * time.Second
	h := testenv.StartHost(t, "127.0.0.5")
	for _, d := range []string{"unlisted", "old"} {
		if err := os.MkdirAll(filepath.Join(h.Dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	writeServerFile(t, filepath.Join(h.Dir, "unread"), mib, 1)
	writeServerFile(t, filepath.Join(h.Dir, "unlisted", "f"), 4096, 2)
	for _, n := range []string{"kept", "moved", "removed"} {
		writeServerFile(t, filepath.Join(h.Dir, "old", n), 4096, 3)
	}
	p, sshArgs, dest := proxied(t, h, netproxy.Options{MaxQueued: 64 << 10})
	// No listing ahead: the directories never listed must stay so.
	m := mount(t, h, mountSpec{sshArgs: sshArgs, dest: dest,
		opts: []string{fmt.Sprintf("timeout=%g", timeout.Seconds()), "prefetch_depth=0"}})
	t.Cleanup(func() { testenv.AbortFUSE(m.Dir) }) // releases any call still waiting
	if _, err := os.ReadDir(m.Path("old")); err != nil {
		t.Fatal(err)
	}
	open, err := os.OpenFile(m.Path("old", "kept"), os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	rewritten, err := os.OpenFile(m.Path("old", "rewritten"), os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	wd := startWatchdog(t, m, timeout)

	p.Blackhole(true)
	start := time.Now()
	calls := map[string]func() error{
		"read a file never read":           func() error { _, err := os.ReadFile(m.Path("unread")); return err },
		"list a directory never listed":    func() error { _, err := os.ReadDir(m.Path("unlisted")); return err },
		"stat in a directory never listed": func() error { _, err := os.Stat(m.Path("unlisted", "f")); return err },
		"create, write, fsync and close": func() error {
			f, err := os.Create(m.Path("new"))
			if err != nil {
				return err
			}
			defer f.Close()
			if _, err := f.Write(make([]byte, 4*mib)); err != nil {
				return err
			}
			return f.Sync()
		},
		"write, fsync and close an open file": func() error {
			if _, err := open.WriteAt(make([]byte, 4*mib), 0); err != nil {
				open.Close()
				return err
			}
			if err := open.Sync(); err != nil {
				open.Close()
				return err
			}
			return open.Close()
		},
		// The second write overlaps the first, in flight: it waits
		// for the first to be answered before it is sent.
		"write a range twice, fsync and close": func() error {
			defer rewritten.Close()
			for range 2 {
				if _, err := rewritten.WriteAt(make([]byte, 64<<10), 0); err != nil {
					return err
				}
			}
			return rewritten.Sync()
		},
		"mkdir":  func() error { return os.Mkdir(m.Path("old", "dir"), 0o755) },
		"rename": func() error { return os.Rename(m.Path("old", "moved"), m.Path("old", "moved2")) },
		"unlink": func() error { return os.Remove(m.Path("old", "removed")) },
	}
	type result struct {
		what string
		err  error
		took time.Duration
	}
	results := make(chan result, len(calls))
	for what, call := range calls {
		go func() {
			err := call()
			results <- result{what, err, time.Since(start)}
		}()
	}
	patience := time.After(testenv.Patience())
	for range calls {
		select {
		case r := <-results:
			t.Logf("%s: ended after %v: %v", r.what, r.took.Round(time.Millisecond), r.err)
			if r.err == nil {
				t.Errorf("%s succeeded while the link was stalled", r.what)
			}
		case <-patience:
			t.Fatalf("calls still waiting %v into the stall", testenv.Patience())
		}
	}
	age, kind := wd.oldest()
	t.Logf("every call ended %v into the stall; oldest request seen %v (%s)",
		time.Since(start).Round(time.Millisecond), age.Round(time.Millisecond), kind)
	p.Blackhole(false)
	testenv.EventuallyNoError(t, "a create once the link is back", func() error {
		return os.WriteFile(m.Path("after"), []byte("x"), 0o644)
	})
}

// TestSIGTERMEndsDaemonWithWritesInFlight sends SIGTERM to a daemon whose
// link is stalled while a program's writes wait on it, with a timeout far
// longer than any test: the daemon must end on its own, without SIGKILL,
// the writer must get an error rather than "done", and the mountpoint must
// be unmounted or fail with ENOTCONN (never hang). How long the daemon
// took is logged, not asserted.
func TestSIGTERMEndsDaemonWithWritesInFlight(t *testing.T) {
	h := testenv.StartHost(t, "127.0.0.6")
	p, sshArgs, dest := proxied(t, h, netproxy.Options{MaxQueued: 64 << 10})
	m := mount(t, h, mountSpec{sshArgs: sshArgs, dest: dest, opts: []string{"timeout=600"}})
	pid := m.daemonPID()
	if pid == 0 {
		t.Fatalf("no daemon process found serving %s", m.Dir)
	}
	t.Cleanup(func() { testenv.AbortFUSE(m.Dir) })

	w := startHelper(t, "write", m.Path("big"), fmt.Sprint(64*mib), "9", fmt.Sprint(mib))
	if got := w.next(t, testenv.Patience()); got != "paused" {
		t.Fatalf("writer: %q, want paused", got)
	}
	p.Blackhole(true)
	w.resume(t)
	testenv.Eventually(t, "writes in flight on the stalled link", func() bool {
		st, err := (control.Client{}).Query(m.Dir)
		if err != nil || st.Requests == nil || st.Requests.InFlight == 0 {
			return false
		}
		for _, b := range st.Branches {
			for _, h := range b.Hosts {
				if h.InFlight > 0 {
					t.Logf("%d requests of programs in flight (the oldest a %s), %d sftp requests", st.Requests.InFlight, st.Requests.OldestKind, h.InFlight)
					return true
				}
			}
		}
		return false
	})

	start := time.Now()
	if err := syscall.Kill(pid, syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, "the daemon exits after SIGTERM", func() bool { return !testenv.Alive(pid) })
	t.Logf("the daemon exited %v after SIGTERM", time.Since(start).Round(time.Millisecond))
	if got := w.next(t, testenv.Patience()); got == "done" {
		t.Errorf("the writer finished as if its data were stored; want an error")
	} else {
		t.Logf("the writer: %s", got)
	}
	var st syscall.Stat_t
	if err := syscall.Stat(m.Dir, &st); testenv.MountedAt(m.Dir) && err != syscall.ENOTCONN {
		t.Errorf("the mountpoint after the daemon ended: %v, want unmounted or ENOTCONN", err)
	}
}
