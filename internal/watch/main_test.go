package watch

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/hanwen/go-fuse/v2/fuse"

	"sshfsm/internal/fusefs"
	"sshfsm/internal/namespace"
	"sshfsm/internal/testenv"
	"sshfsm/internal/transport"
)

func TestMain(m *testing.M) {
	if dir := os.Getenv(getcwdEnv); dir != "" {
		getcwdHelper(dir)
		return
	}
	testenv.Main(m)
}

// getcwdEnv makes the test binary a process that works in a directory:
// getcwdHelper.
const getcwdEnv = "SSHFSM_WATCH_TEST_GETCWD"

// getcwdHelper enters dir, waits, then prints what getcwd(2) says and
// makes a file there.
func getcwdHelper(dir string) {
	if err := os.Chdir(dir); err != nil {
		fmt.Println("chdir:", err)
		os.Exit(1)
	}
	time.Sleep(300 * time.Millisecond)
	wd, err := syscall.Getwd()
	if err != nil {
		fmt.Println("getcwd:", err)
		os.Exit(1)
	}
	fmt.Println(wd)
	if err := os.WriteFile("here", nil, 0o644); err != nil {
		fmt.Println("create:", err)
		os.Exit(1)
	}
	os.Exit(0)
}

// rig is a real sshd on loopback, its directory mounted through real ssh
// and FUSE, and a watcher pushing its changes to the mount.
type rig struct {
	th   *testenv.Host
	h    *transport.Host
	w    *Watcher
	mnt  string
	srv  *fuse.Server
	logs *testenv.LogBuffer
	// started is when the watcher was started.
	started time.Time
	// batches and paths count what reached the mount.
	batches, paths atomic.Int64
}

// cacheFor is the mount's cache timeouts: long enough that only the
// watcher can explain a change seen within a second.
const cacheFor = 60 * time.Second

// newRig mounts th's directory with every timeout at ttl and starts a
// watcher with o.
func newRig(t *testing.T, th *testenv.Host, ttl time.Duration, o Options) *rig {
	t.Helper()
	testenv.RequireFUSE(t)
	rg := &rig{th: th, mnt: t.TempDir(), logs: &testenv.LogBuffer{}}
	log := slog.New(slog.NewTextHandler(rg.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var err error
	rg.h, err = transport.Dial(ctx, transport.Options{Host: th.Alias, SSHArgs: th.SSHArgs(), Dir: th.Dir,
		Conns: 2, Timeout: 10 * time.Second, Reconnect: true, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rg.h.Close() })
	o.Logger = log
	rg.w = New([]Target{{Candidates: []Candidate{hostCandidate(th.Alias, rg.h)}}}, o)
	t.Cleanup(func() { rg.w.Close() })
	fo := fusefs.Options{AttrTimeout: ttl, EntryTimeout: ttl, NegativeTimeout: ttl, DirCacheTimeout: ttl,
		ContainSymlinks: true, Logger: log, Changes: rg.relay()}
	rg.srv, err = fusefs.Mount(rg.mnt, namespace.Single(rg.h.Remote()), fo, fusefs.MountOptions{FsName: "test", Subtype: "sshfsm"})
	if err != nil {
		t.Fatalf("Mount: %v", err)
	}
	t.Cleanup(func() {
		rg.unmount(t)
		if t.Failed() {
			t.Logf("log:\n%s", rg.logs)
		}
	})
	rg.started = time.Now()
	rg.w.Start()
	return rg
}

// relay passes the watcher's batches on to the mount, counting them.
func (rg *rig) relay() <-chan []namespace.Change {
	out := make(chan []namespace.Change)
	go func() {
		defer close(out)
		for b := range rg.w.Changes() {
			rg.batches.Add(1)
			rg.paths.Add(int64(len(b)))
			out <- b
		}
	}()
	return out
}

// hostCandidate watches the tree of transport host h.
func hostCandidate(name string, h *transport.Host) Candidate {
	return Candidate{Name: name,
		Connected: func() (Host, string) {
			if !h.Up() {
				return nil, ""
			}
			return h, h.Root()
		},
		Changed: h.Changed}
}

func (rg *rig) unmount(t *testing.T) {
	var err error
	for range 50 {
		if err = rg.srv.Unmount(); err == nil {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err != nil {
		t.Errorf("Unmount: %v", err)
	}
	if testenv.MountedAt(rg.mnt) {
		_ = testenv.Unmount(rg.mnt)
		t.Errorf("mount left behind at %s", rg.mnt)
	}
}

func (rg *rig) remote(p string) string { return filepath.Join(rg.th.Dir, p) }
func (rg *rig) local(p string) string  { return filepath.Join(rg.mnt, p) }

// waitState waits up to d for the first target to reach state s.
func (rg *rig) waitState(t *testing.T, s State, d time.Duration) Status {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		st := rg.w.Status()[0]
		if st.State == s {
			return st
		}
		if time.Now().After(deadline) {
			t.Fatalf("watcher %s after %v, want %s: %+v", st.State, d, s, st)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// within polls cond every 20 ms for up to d and returns how long it took
// to hold; it fails the test when it never does.
func within(t *testing.T, d time.Duration, what string, cond func() bool) time.Duration {
	t.Helper()
	start := time.Now()
	for {
		if cond() {
			return time.Since(start)
		}
		if time.Since(start) > d {
			t.Fatalf("%s: not seen within %v", what, d)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// watchers returns the pids of the watcher processes on the server (this
// machine) watching dir.
func watchers(dir string) []int {
	ents, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err != nil || !strings.Contains(string(b), "inotifywait") {
			continue
		}
		args := strings.Split(strings.TrimRight(string(b), "\x00"), "\x00")
		if args[len(args)-1] == dir && !zombie(pid) {
			out = append(out, pid)
		}
	}
	return out
}

func zombie(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return true
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || i+2 >= len(s) || s[i+2] == 'Z'
}

// noWatcherLeft fails the test when a watcher of dir still runs 5 s on.
func noWatcherLeft(t *testing.T, dir string) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for len(watchers(dir)) > 0 {
		if time.Now().After(deadline) {
			t.Fatalf("watcher processes left on the server: %v", watchers(dir))
		}
		time.Sleep(20 * time.Millisecond)
	}
}
