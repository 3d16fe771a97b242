package namespace_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"slices"
	"sync"
	"syscall"
	"testing"
	"time"

	"sshfsm/internal/defaults"
	"sshfsm/internal/fusefs"
	"sshfsm/internal/namespace"
	"sshfsm/internal/testenv"
	"sshfsm/internal/transport"
)

// mount serves ns at a fresh mountpoint with the CLI's default timeouts.
func mount(t *testing.T, ns namespace.Namespace) (string, *testenv.LogBuffer) {
	t.Helper()
	testenv.RequireFUSE(t)
	mnt, logs := t.TempDir(), &testenv.LogBuffer{}
	o := fusefs.Options{
		AttrTimeout: defaults.CacheTimeout, EntryTimeout: defaults.CacheTimeout,
		NegativeTimeout: defaults.CacheTimeout, DirCacheTimeout: defaults.CacheTimeout,
		PrefetchDepth: defaults.PrefetchDepth, ContainSymlinks: true,
		Logger: slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
	}
	srv, err := fusefs.Mount(mnt, ns, o, fusefs.MountOptions{FsName: "union", Subtype: "sshfsm"})
	if err != nil {
		t.Fatalf("Mount: %v", err)
	}
	t.Cleanup(func() {
		var err error
		for range 50 {
			if err = srv.Unmount(); err == nil {
				break
			}
			time.Sleep(50 * time.Millisecond)
		}
		if err != nil {
			t.Errorf("Unmount: %v", err)
		}
		if testenv.MountedAt(mnt) {
			_ = testenv.Unmount(mnt)
			t.Errorf("mount left behind at %s", mnt)
		}
		if t.Failed() {
			t.Logf("filesystem log:\n%s", logs)
		}
	})
	return mnt, logs
}

func ls(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatalf("ls %s: %v", dir, err)
	}
	out := []string{}
	for _, e := range ents {
		out = append(out, e.Name())
	}
	return out
}

func cat(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatalf("cat %s: %v", p, err)
	}
	return string(b)
}

func wantTree(t *testing.T, what, dir string, want ...string) {
	t.Helper()
	if got := tree(t, dir); !slices.Equal(got, want) {
		t.Errorf("%s = %q, want %q", what, got, want)
	}
}

// The seed scenario through a real mount: a home on host1 merged with
// project data on host2, plus a graft.
func TestMountUnionAndGraft(t *testing.T) {
	home, data, scratch := t.TempDir(), t.TempDir(), t.TempDir()
	plant(t, home, ".bashrc=alias ll='ls -l'", "notes.txt=mine", "proj/", "proj/README=home readme", "shared=home copy")
	plant(t, data, "data/", "data/set1.csv=1,2,3", "proj/", "proj/results.txt=42", "shared=project copy")
	plant(t, scratch, "tmp.txt=t")
	u, err := namespace.NewUnion([]namespace.Branch{
		{Name: "host1:", Remote: dial(t, "host1", home, false)},
		{Name: "host2:/p", Remote: dial(t, "host2", data, false)},
	}, namespace.UnionOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ns, err := namespace.NewGraft(u, []namespace.Graft{{Name: "scratch", NS: dial(t, "host3", scratch, false)}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ns.Close() })
	mnt, _ := mount(t, ns)

	if got, want := ls(t, mnt), []string{".bashrc", "data", "notes.txt", "proj", "scratch", "shared"}; !slices.Equal(got, want) {
		t.Fatalf("ls = %v, want %v", got, want)
	}
	if got, want := ls(t, mnt+"/proj"), []string{"README", "results.txt"}; !slices.Equal(got, want) {
		t.Fatalf("ls proj = %v, want %v", got, want)
	}
	for p, want := range map[string]string{"shared": "home copy", "data/set1.csv": "1,2,3",
		"proj/results.txt": "42", "scratch/tmp.txt": "t"} {
		if got := cat(t, mnt+"/"+p); got != want {
			t.Errorf("cat %s = %q, want %q", p, got, want)
		}
	}
	// New names go where their directory is (epff), the highest first.
	for p, text := range map[string]string{"new.txt": "n", "data/out.csv": "4,5", "proj/plan": "p", "scratch/s": "s"} {
		if err := os.WriteFile(mnt+"/"+p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Mkdir(mnt+"/data/run", 0o755); err != nil {
		t.Fatal(err)
	}
	// rm removes both copies: the lower one must not reappear.
	if err := os.Remove(mnt + "/shared"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(mnt + "/shared"); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("stat shared after rm: %v", err)
	}
	// Renames across a graft's edge fail with EXDEV, which mv handles.
	if err := os.Rename(mnt+"/scratch/tmp.txt", mnt+"/tmp.txt"); !errors.Is(err, syscall.EXDEV) {
		t.Errorf("rename out of the graft: %v, want EXDEV", err)
	}
	if err := os.Rename(mnt+"/new.txt", mnt+"/proj/new.txt"); err != nil {
		t.Errorf("rename inside host1: %v", err)
	}
	var st syscall.Statfs_t
	if err := syscall.Statfs(mnt, &st); err != nil || st.Blocks == 0 {
		t.Errorf("statfs: %+v, %v", st, err)
	}
	wantTree(t, "host1", home, ".bashrc=alias ll='ls -l'", "notes.txt=mine", "proj/", "proj/README=home readme",
		"proj/new.txt=n", "proj/plan=p")
	wantTree(t, "host2", data, "data/", "data/out.csv=4,5", "data/run/", "data/set1.csv=1,2,3", "proj/",
		"proj/results.txt=42")
	wantTree(t, "scratch", scratch, "s=s", "tmp.txt=t")
	if got, want := ls(t, mnt), []string{".bashrc", "data", "notes.txt", "proj", "scratch"}; !slices.Equal(got, want) {
		t.Errorf("ls at the end = %v, want %v", got, want)
	}
}

// waitRefreshed waits until the mount has dropped its caches n times.
func waitRefreshed(t *testing.T, logs *testenv.LogBuffer, n int) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for logs.Count("caches refreshed") < n {
		if time.Now().After(deadline) {
			t.Fatalf("the mount did not refresh its caches %d times", n)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// A branch goes down and comes back: its names vanish and reappear
// through the mount (the fake Health of a wrapper).
func TestMountBranchDownAndUp(t *testing.T) {
	home, data := t.TempDir(), t.TempDir()
	plant(t, home, "a=home", "proj/", "proj/mine=")
	plant(t, data, "data/", "data/set1.csv=1,2,3", "proj/", "proj/theirs=")
	host2 := newFlaky(dial(t, "host2", data, false))
	u, err := namespace.NewUnion([]namespace.Branch{
		{Name: "host1", Remote: dial(t, "host1", home, false)},
		{Name: "host2", Remote: host2},
	}, namespace.UnionOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { u.Close() })
	mnt, logs := mount(t, u)
	checkDownUp(t, mnt, data, logs, func() { host2.set(false) }, func() { host2.set(true) })
	if n := host2.hung.Load(); n != 0 {
		t.Errorf("%d calls reached host2 while it was down", n)
	}
}

// The same with the real transport: host2's connection is cut and its
// server refuses new ones until it is restored.
func TestMountHostDownAndUp(t *testing.T) {
	home, data := t.TempDir(), t.TempDir()
	plant(t, home, "a=home", "proj/", "proj/mine=")
	plant(t, data, "data/", "data/set1.csv=1,2,3", "proj/", "proj/theirs=")
	sw := &switchDialer{dial: testenv.SFTPDialer(data)}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	h, err := transport.Dial(ctx, transport.Options{Host: "host2", Dir: data, Conns: 1,
		Timeout: 5 * time.Second, Reconnect: true, Dialer: sw.Dial})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	u, err := namespace.NewUnion([]namespace.Branch{
		{Name: "host1", Remote: dial(t, "host1", home, false)},
		{Name: "host2", Remote: h.Remote()},
	}, namespace.UnionOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { u.Close() })
	mnt, logs := mount(t, u)
	checkDownUp(t, mnt, data, logs, sw.cut, sw.restore)
}

// The same with real sshd hosts: host2's sshd is killed and restarted.
func TestMountSSHHostKilledAndRestarted(t *testing.T) {
	testenv.RequireFUSE(t)
	hosts, _ := testenv.StartHosts(t, 2)
	plant(t, hosts[0].Dir, "a=home", "proj/", "proj/mine=")
	plant(t, hosts[1].Dir, "data/", "data/set1.csv=1,2,3", "proj/", "proj/theirs=")
	var brs []namespace.Branch
	for _, th := range hosts {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		h, err := transport.Dial(ctx, transport.Options{Host: th.Alias, SSHArgs: th.SSHArgs(), Dir: th.Dir,
			Conns: 1, Timeout: 5 * time.Second, Reconnect: true})
		cancel()
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { h.Close() })
		brs = append(brs, namespace.Branch{Name: th.Alias, Remote: h.Remote()})
	}
	u, err := namespace.NewUnion(brs, namespace.UnionOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { u.Close() })
	mnt, logs := mount(t, u)
	checkDownUp(t, mnt, hosts[1].Dir, logs, hosts[1].Kill, func() {
		if err := hosts[1].Restart(); err != nil {
			t.Fatal(err)
		}
	})
}

// checkDownUp runs the scenario: host2's names show, vanish while it is
// down (without waiting for its timeout), and show again once it is back,
// including a name that was looked up in vain meanwhile.
func checkDownUp(t *testing.T, mnt, data string, logs *testenv.LogBuffer, down, up func()) {
	t.Helper()
	if got, want := ls(t, mnt), []string{"a", "data", "proj"}; !slices.Equal(got, want) {
		t.Fatalf("ls = %v, want %v", got, want)
	}
	if got := cat(t, mnt+"/data/set1.csv"); got != "1,2,3" {
		t.Fatalf("cat = %q", got)
	}
	if got, want := ls(t, mnt+"/proj"), []string{"mine", "theirs"}; !slices.Equal(got, want) {
		t.Fatalf("ls proj = %v, want %v", got, want)
	}

	down()
	waitRefreshed(t, logs, 1)
	start := time.Now()
	if got, want := ls(t, mnt), []string{"a", "proj"}; !slices.Equal(got, want) {
		t.Errorf("ls with host2 down = %v, want %v", got, want)
	}
	if got, want := ls(t, mnt+"/proj"), []string{"mine"}; !slices.Equal(got, want) {
		t.Errorf("ls proj with host2 down = %v, want %v", got, want)
	}
	if _, err := os.Stat(mnt + "/data/set1.csv"); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("stat data/set1.csv with host2 down: %v, want ENOENT", err)
	}
	// A name host2 gains meanwhile is looked up in vain: the kernel keeps
	// that answer for NegativeTimeout unless told.
	plant(t, data, "later.txt=l")
	if _, err := os.Stat(mnt + "/later.txt"); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("stat later.txt with host2 down: %v, want ENOENT", err)
	}
	if got := cat(t, mnt+"/a"); got != "home" {
		t.Errorf("cat a = %q", got)
	}
	if el := time.Since(start); el > 3*time.Second {
		t.Errorf("the mount took %v to answer with host2 down", el)
	}

	up()
	waitRefreshed(t, logs, 2)
	// Before any listing, which would replace the negative entry too.
	if b, err := os.ReadFile(mnt + "/later.txt"); err != nil || string(b) != "l" {
		t.Errorf("cat later.txt = %q, %v", b, err)
	}
	if got, want := ls(t, mnt), []string{"a", "data", "later.txt", "proj"}; !slices.Equal(got, want) {
		t.Errorf("ls with host2 back = %v, want %v", got, want)
	}
	if got := cat(t, mnt+"/data/set1.csv"); got != "1,2,3" {
		t.Errorf("cat data/set1.csv = %q", got)
	}
	if got, want := ls(t, mnt+"/proj"), []string{"mine", "theirs"}; !slices.Equal(got, want) {
		t.Errorf("ls proj with host2 back = %v, want %v", got, want)
	}
}

// switchDialer serves an in-process SFTP server that can be cut off: cut
// closes every session and refuses new ones until restore.
type switchDialer struct {
	dial func(ctx context.Context) (io.ReadCloser, io.WriteCloser, error)

	mu      sync.Mutex // guards the fields below
	refuse  bool
	closers []io.Closer
}

func (s *switchDialer) Dial(ctx context.Context) (io.ReadCloser, io.WriteCloser, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.refuse {
		return nil, nil, errors.New("connection refused (test)")
	}
	r, w, err := s.dial(ctx)
	if err == nil {
		s.closers = append(s.closers, r, w)
	}
	return r, w, err
}

func (s *switchDialer) cut() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.refuse = true
	for _, c := range s.closers {
		c.Close()
	}
	s.closers = nil
}

func (s *switchDialer) restore() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.refuse = false
}
