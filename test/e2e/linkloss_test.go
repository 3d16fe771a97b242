package e2e

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"sshfsm/internal/fsx"
	"sshfsm/internal/netproxy"
	"sshfsm/internal/testenv"
)

// linkLossSeeds are the seeds TestFsxLinkResets runs: one by default;
// SSHFSM_E2E_LINKLOSS_SEEDS=N runs seeds 1..N.
func linkLossSeeds(t *testing.T) []uint64 {
	n := 1
	if env := os.Getenv("SSHFSM_E2E_LINKLOSS_SEEDS"); env != "" {
		if _, err := fmt.Sscanf(env, "%d", &n); err != nil || n < 1 {
			t.Fatalf("SSHFSM_E2E_LINKLOSS_SEEDS=%q: want a count", env)
		}
	}
	seeds := make([]uint64, n)
	for i := range seeds {
		seeds[i] = uint64(i + 1)
	}
	return seeds
}

// linkLossKinds are the operations of the fault run: every default fsx
// kind. Page faults of the mmap kinds are reads and writes like any other,
// answered on the new connection; the open file follows its renames; a
// sibling's unlink or creating open caught by a cut is settled by looking
// at the server (transport/told.go). With a mmap kind among them, the
// garbage collector is held for the rest of t (testenv.HoldGC): the caller runs
// runtime.GC between operations if it needs to.
// SSHFSM_E2E_LINKLOSS_KINDS (fsx.ParseKinds) replaces them.
func linkLossKinds(t *testing.T) []fsx.Kind {
	ks := fsx.DefaultKinds()
	if env := os.Getenv("SSHFSM_E2E_LINKLOSS_KINDS"); env != "" {
		var err error
		if ks, err = fsx.ParseKinds(env); err != nil {
			t.Fatalf("SSHFSM_E2E_LINKLOSS_KINDS: %v", err)
		}
	}
	for _, k := range ks {
		if k == fsx.MapRead || k == fsx.MapWrite {
			testenv.HoldGC(t)
			break
		}
	}
	return ks
}

// TestFsxLinkResets runs fsx on a single-host mount whose TCP link is cut
// every few operations (every connection of the proxy closed; new ones
// go through at once). Acknowledged writes must survive every cut: the
// file matches the reference after every operation fsx checks, the
// server holds exactly the reference after every fsync.
func TestFsxLinkResets(t *testing.T) {
	h := testenv.StartHost(t, "127.0.0.2")
	p, sshArgs, dest := proxied(t, h, netproxy.Options{})
	m := mount(t, h, mountSpec{sshArgs: sshArgs, dest: dest, opts: []string{"timeout=10"}})
	for _, seed := range linkLossSeeds(t) {
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
			dir := fmt.Sprintf("linkloss-%d", seed)
			if err := os.Mkdir(m.Path(dir), 0o755); err != nil {
				t.Fatal(err)
			}
			cuts := 0
			every := 5 + int(seed%5) // a cut every 5..9 operations
			err := fsx.Run(m.Path(dir), fsx.Options{
				Seed: seed, NumOps: 500, Kinds: linkLossKinds(t), FullCheckEvery: 25,
				AfterOp: func(i int, _ string) {
					if i%every == every-1 {
						cuts += p.Reset()
					}
					if i%50 == 49 {
						runtime.GC() // between operations: no page fault waits
					}
				},
				AfterFsync: func(path string, want []byte) error {
					return serverHolds(m, path, want)
				},
			})
			t.Logf("seed %d: %d connections cut", seed, cuts)
			if err != nil {
				logServerCopy(t, m, dir, err)
				t.Fatal(err)
			}
		})
	}
}

// serverHolds compares the server's copy of path (a path in the mount)
// with want.
func serverHolds(m *Mount, path string, want []byte) error {
	rel, ok := strings.CutPrefix(path, m.Dir+string(filepath.Separator))
	if !ok {
		return fmt.Errorf("%s is not in the mount %s", path, m.Dir)
	}
	got, err := os.ReadFile(m.RemotePath(rel))
	if err != nil {
		return fmt.Errorf("reading the server's copy: %w", err)
	}
	if !bytes.Equal(got, want) {
		return fmt.Errorf("after fsync the server holds %d bytes (first difference at %d), want %d",
			len(got), firstDiff(got, want), len(want))
	}
	return nil
}

func firstDiff(a, b []byte) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

// logServerCopy shows what the server holds where fsx found a difference,
// to tell a wrong server copy from a stale view of the mount.
func logServerCopy(t *testing.T, m *Mount, dir string, err error) {
	var f *fsx.Failure
	if !errors.As(err, &f) {
		return
	}
	for _, name := range []string{"fsx.data", "fsx.data.moved"} {
		b, rerr := os.ReadFile(m.RemotePath(dir, name))
		if rerr != nil {
			continue
		}
		t.Logf("server copy of %s: %d bytes", name, len(b))
		if f.Offset >= 0 && f.Offset < int64(len(b)) {
			t.Logf("server bytes at %d: % x", f.Offset, b[f.Offset:min(int64(len(b)), f.Offset+16)])
		}
	}
}

// reconnectAll cuts every connection of p and waits until the mount
// answers again through new ones: the ssh processes then serving m were
// started after the mount.
func reconnectAll(t *testing.T, m *Mount, p *netproxy.Proxy) {
	t.Helper()
	p.Reset()
	n := 0
	testenv.EventuallyNoError(t, "a create through the new connections", func() error {
		n++
		return os.WriteFile(m.Path(fmt.Sprintf("reconnected-%d", n)), nil, 0o644)
	})
}

// threadState is the state letter of thread tid of pid (R, S, D, ...).
func threadState(pid, tid int) byte {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/stat", pid, tid))
	if err != nil {
		return 0
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 || i+2 >= len(s) {
		return 0
	}
	return s[i+2]
}

// TestKilledDaemonFailsBlockedReader kills the daemon with SIGKILL while
// a reader waits for it on a stalled link: the reader must get an error
// (not stay in uninterruptible sleep, which needs every holder of the
// FUSE connection gone, the daemon's ssh processes included), and the
// mount must unmount.
func TestKilledDaemonFailsBlockedReader(t *testing.T) {
	h := testenv.StartHost(t, "127.0.0.2")
	writeServerFile(t, h.Dir+"/big", 4*mib, 7)
	p, sshArgs, dest := proxied(t, h, netproxy.Options{})
	m := mount(t, h, mountSpec{sshArgs: sshArgs, dest: dest})
	reconnectAll(t, m, p)
	pid := m.daemonPID()
	if pid == 0 {
		t.Fatalf("no daemon process found serving %s", m.Dir)
	}

	checkFUSECloseOnExec(t, pid)
	checkNoFUSEHolder(t, pid)

	p.Blackhole(true)
	r := startHelper(t, "read", m.Path("big"))
	// Whatever happens below, the reader is released before its cleanup
	// waits for it.
	t.Cleanup(func() { testenv.AbortFUSE(m.Dir) })
	var tid int
	if _, err := fmt.Sscanf(r.next(t, testenv.Patience()), "ready %d", &tid); err != nil {
		t.Fatal(err)
	}
	blocked := func() bool { s := threadState(r.cmd.Process.Pid, tid); return s == 'S' || s == 'D' }
	testenv.Eventually(t, "the reader waits in the file system", blocked)

	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, "the daemon exits after SIGKILL", func() bool { return !testenv.Alive(pid) })
	got := r.next(t, testenv.Patience())
	for _, want := range []string{"EIO", "(transport endpoint is not connected)", "(software caused connection abort)"} {
		if strings.HasSuffix(got, want) {
			return
		}
	}
	t.Fatalf("the reader got %q after the daemon died, want ENOTCONN, ECONNABORTED or EIO", got)
}

// checkNoFUSEHolder fails the test if a process the daemon pid started
// (ssh, and what ssh starts) holds /dev/fuse open: such a process keeps
// the FUSE connection alive after the daemon dies, and whatever waits on
// the mount then waits in uninterruptible sleep until it exits.
func checkNoFUSEHolder(t *testing.T, pid int) {
	t.Helper()
	kids := children(pid)
	if len(kids) == 0 {
		t.Fatalf("daemon %d has no child process to check", pid)
	}
	for len(kids) > 0 {
		k := kids[0]
		kids = append(kids[1:], children(k)...)
		fds, _ := os.ReadDir(fmt.Sprintf("/proc/%d/fd", k))
		for _, fd := range fds {
			if target, _ := os.Readlink(fmt.Sprintf("/proc/%d/fd/%s", k, fd.Name())); target == "/dev/fuse" {
				t.Errorf("process %d (%s), started by the daemon, holds /dev/fuse as fd %s", k, cmdline(k), fd.Name())
			}
		}
	}
}

// TestSIGTERMEndsDaemonOnStalledLink sends SIGTERM to a daemon whose link
// is stalled while a reader waits on it: the daemon must end on its own
// (it bounds its shutdown, aborting the FUSE connection if it must), and
// the reader must get an error rather than wait on.
func TestSIGTERMEndsDaemonOnStalledLink(t *testing.T) {
	h := testenv.StartHost(t, "127.0.0.3")
	writeServerFile(t, h.Dir+"/big", 4*mib, 8)
	p, sshArgs, dest := proxied(t, h, netproxy.Options{})
	m := mount(t, h, mountSpec{sshArgs: sshArgs, dest: dest, opts: []string{"timeout=600"}})
	pid := m.daemonPID()
	if pid == 0 {
		t.Fatalf("no daemon process found serving %s", m.Dir)
	}

	p.Blackhole(true)
	r := startHelper(t, "read", m.Path("big"))
	t.Cleanup(func() { testenv.AbortFUSE(m.Dir) })
	var tid int
	if _, err := fmt.Sscanf(r.next(t, testenv.Patience()), "ready %d", &tid); err != nil {
		t.Fatal(err)
	}
	blocked := func() bool { s := threadState(r.cmd.Process.Pid, tid); return s == 'S' || s == 'D' }
	testenv.Eventually(t, "the reader waits in the file system", blocked)

	if err := syscall.Kill(pid, syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, "the daemon exits after SIGTERM", func() bool { return !testenv.Alive(pid) })
	got := r.next(t, testenv.Patience())
	if !strings.HasPrefix(got, "open: ") && !strings.HasPrefix(got, "read: ") || strings.Contains(got, "bytes") {
		t.Fatalf("the reader got %q after the daemon ended, want an error", got)
	}
}

// checkFUSECloseOnExec fails the test unless every descriptor of
// /dev/fuse the daemon pid holds is close-on-exec: a process it starts
// must not keep the FUSE connection alive after it dies.
func checkFUSECloseOnExec(t *testing.T, pid int) {
	t.Helper()
	fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, fd := range fds {
		if target, _ := os.Readlink(fmt.Sprintf("/proc/%d/fd/%s", pid, fd.Name())); target != "/dev/fuse" {
			continue
		}
		found = true
		info, err := os.ReadFile(fmt.Sprintf("/proc/%d/fdinfo/%s", pid, fd.Name()))
		if err != nil {
			t.Fatal(err)
		}
		var flags uint64
		for _, line := range strings.Split(string(info), "\n") {
			if v, ok := strings.CutPrefix(line, "flags:"); ok {
				flags, _ = strconv.ParseUint(strings.TrimSpace(v), 8, 64)
			}
		}
		if flags&syscall.O_CLOEXEC == 0 {
			t.Errorf("the daemon's /dev/fuse descriptor %s is not close-on-exec (flags %o)", fd.Name(), flags)
		}
	}
	if !found {
		t.Fatalf("daemon %d holds no /dev/fuse descriptor", pid)
	}
}
