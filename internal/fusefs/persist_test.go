package fusefs

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"sshfsm/internal/cache"
	"sshfsm/internal/namespace"
	"sshfsm/internal/remote"
	"sshfsm/internal/testenv"
	"sshfsm/internal/transport"
)

// metaMount is one mount of a real sshd's directory with a snapshot file.
type metaMount struct {
	*testMount
	host *transport.Host
	dirs *cache.Dirs
}

// mountMeta mounts th's directory in mode with the snapshot meta; wrap,
// when not nil, wraps the host's remote.
func mountMeta(t *testing.T, th *testenv.Host, mode cache.Mode, meta string, wrap func(remote.Remote) remote.Remote) *metaMount {
	t.Helper()
	testenv.RequireFUSE(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	h, err := transport.Dial(ctx, transport.Options{Host: th.Alias, SSHArgs: th.SSHArgs(),
		Dir: th.Dir, Conns: 2, Timeout: 10 * time.Second, Reconnect: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	o := walkOpts()
	o.Mode, o.MetaFile = mode, meta
	o.Cache = cache.New(o.DirCacheTimeout, nil)
	tm := &testMount{dir: th.Dir, mnt: t.TempDir(), logs: &testenv.LogBuffer{}}
	o.Logger = slog.New(slog.NewTextHandler(tm.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	r := h.Remote()
	if wrap != nil {
		r = wrap(r)
	}
	srv, err := Mount(tm.mnt, namespace.Single(r), o, MountOptions{FsName: "test", Subtype: "sshfsm"})
	if err != nil {
		t.Fatalf("Mount: %v", err)
	}
	tm.srv = srv
	t.Cleanup(func() {
		tm.unmount(t)
		o.Cache.Close()
		if t.Failed() {
			t.Logf("filesystem log (%s):\n%s", mode, tm.logs)
		}
	})
	return &metaMount{testMount: tm, host: h, dirs: o.Cache}
}

// end unmounts and waits for the snapshot to be written.
func (m *metaMount) end(t *testing.T) {
	t.Helper()
	m.unmount(t)
	m.dirs.Close()
}

// listingRequests returns the requests that list or stat something, sent
// since before.
func listingRequests(h *transport.Host, before map[string]uint64) map[string]uint64 {
	now := h.Stats().Requests
	out := map[string]uint64{}
	for _, k := range []string{"OPENDIR", "READDIR", "STAT", "LSTAT", "exec"} {
		if n := now[k] - before[k]; n > 0 {
			out[k] = n
		}
	}
	return out
}

func copyRequests(h *transport.Host) map[string]uint64 {
	m := map[string]uint64{}
	for k, v := range h.Stats().Requests {
		m[k] = v
	}
	return m
}

// walkAll runs find over the whole mount and lstats every name of proj
// against the local tree.
func walkAll(t *testing.T, th *testenv.Host, m *metaMount) int {
	t.Helper()
	findIn(t, m.mnt)
	var st, local syscall.Stat_t
	if err := syscall.Stat(m.mnt, &st); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Stat(th.Dir, &local); err != nil {
		t.Fatal(err)
	}
	if st.Mode != local.Mode || st.Mtim.Sec != local.Mtim.Sec || st.Ino != rootIno {
		t.Errorf("root: mode %o mtime %d ino %d, locally mode %o mtime %d", st.Mode, st.Mtim.Sec, st.Ino, local.Mode, local.Mtim.Sec)
	}
	return sameTree(t, filepath.Join(th.Dir, "proj"), m.path("proj"))
}

// Immutable: after a remount, find and a stat of every name are answered
// from the snapshot without a single request.
func TestPersistImmutableRemount(t *testing.T) {
	th := testenv.StartHost(t, "127.0.0.2")
	walkTree(t, filepath.Join(th.Dir, "proj"), 6, 8)
	meta := filepath.Join(t.TempDir(), "meta", "snap")

	first := mountMeta(t, th, cache.Immutable, meta, nil)
	before := copyRequests(first.host)
	n := walkAll(t, th, first)
	cost := listingRequests(first.host, before)
	first.end(t)

	second := mountMeta(t, th, cache.Immutable, meta, nil)
	before = copyRequests(second.host)
	walkAll(t, th, second)
	again := listingRequests(second.host, before)
	st := second.dirs.PersistStats()
	t.Logf("%d names; first mount %v; remount %v; loaded %d listings of %d entries", n, cost, again, st.LoadedDirs, st.LoadedEntries)
	if len(again) != 0 {
		t.Errorf("the remount sent %v", again)
	}
	if st.LoadedDirs == 0 {
		t.Error("nothing loaded")
	}
}

// gate holds back the listings of a remote until opened.
type gate struct {
	remote.Remote
	open chan struct{}
}

func (g *gate) wait(ctx context.Context) error {
	select {
	case <-g.open:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (g *gate) ReadDir(ctx context.Context, p string) ([]remote.DirEntry, error) {
	if err := g.wait(ctx); err != nil {
		return nil, err
	}
	return g.Remote.ReadDir(ctx, p)
}

func (g *gate) ListTree(ctx context.Context, dir string, depth int, fn func(string, []remote.DirEntry)) error {
	if err := g.wait(ctx); err != nil {
		return err
	}
	return g.Remote.(remote.TreeLister).ListTree(ctx, dir, depth, fn)
}

// changeWhileUnmounted adds, removes and rewrites a file of proj on the
// server; it returns their paths below proj.
func changeWhileUnmounted(t *testing.T, th *testenv.Host) (added, removed, rewritten string) {
	t.Helper()
	sub := "d01 new\nline/s02"
	dir := filepath.Join(th.Dir, "proj", sub)
	ents, err := os.ReadDir(dir)
	if err != nil || len(ents) < 2 {
		t.Fatalf("%v, %d entries", err, len(ents))
	}
	added, removed, rewritten = sub+"/added", sub+"/"+ents[0].Name(), sub+"/"+ents[1].Name()
	mustWrite(t, filepath.Join(th.Dir, "proj", added), []byte("new"))
	if err := os.Remove(filepath.Join(th.Dir, "proj", removed)); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(th.Dir, "proj", rewritten)
	mustWrite(t, p, []byte(strings.Repeat("y", 1000)))
	old := time.Now().Add(-time.Hour)
	if err := os.Chtimes(p, old, old); err != nil {
		t.Fatal(err)
	}
	return added, removed, rewritten
}

func (g *gate) ListChanged(ctx context.Context, dir string, within time.Duration, fn func(string, time.Duration)) error {
	if err := g.wait(ctx); err != nil {
		return err
	}
	return g.Remote.(remote.ChangeLister).ListChanged(ctx, dir, within, fn)
}

// Auto: after a remount, the loaded listings answer only once one change
// listing checked them; find and lstat then show what changed on the
// server while unmounted at once.
func TestPersistAutoRemount(t *testing.T) {
	th := testenv.StartHost(t, "127.0.0.2")
	walkTree(t, filepath.Join(th.Dir, "proj"), 6, 8)
	meta := filepath.Join(t.TempDir(), "meta", "snap")
	first := mountMeta(t, th, cache.Auto, meta, nil)
	before := copyRequests(first.host)
	walkAll(t, th, first)
	cost := listingRequests(first.host, before)
	first.end(t)
	added, removed, rewritten := changeWhileUnmounted(t, th)

	g := &gate{open: make(chan struct{})}
	second := mountMeta(t, th, cache.Auto, meta, func(r remote.Remote) remote.Remote { g.Remote = r; return g })
	before = copyRequests(second.host)
	// Nothing loaded answers before the check.
	if _, ok := second.dirs.List("proj"); ok {
		t.Error("a loaded listing answers before the check")
	}
	close(g.open)
	got := findIn(t, second.path("proj"))
	_, errAdded := os.Lstat(second.path("proj/" + added))
	_, errRemoved := os.Lstat(second.path("proj/" + removed))
	fi, err := os.Lstat(second.path("proj/" + rewritten))
	if !slices.Contains(got, added) || slices.Contains(got, removed) || errAdded != nil ||
		!os.IsNotExist(errRemoved) || err != nil || fi.Size() != 1000 {
		t.Errorf("first look after the remount: find shows added %v, removed %v; lstat: added %v, removed %v, rewritten %v %v",
			slices.Contains(got, added), slices.Contains(got, removed), errAdded, errRemoved, fi, err)
	}
	sameTree(t, filepath.Join(th.Dir, "proj"), second.path("proj"))
	again := listingRequests(second.host, before)
	st := second.dirs.PersistStats()
	t.Logf("first mount %v; remount %v, %+v", cost, again, st)
	if st.Check != "done" || st.CheckChanged == 0 {
		t.Errorf("check at mount: %+v", st)
	}
}

// Strict: nothing loaded answers; the first find lists the server and
// shows its changes at once.
func TestPersistStrictRemount(t *testing.T) {
	th := testenv.StartHost(t, "127.0.0.2")
	walkTree(t, filepath.Join(th.Dir, "proj"), 6, 8)
	meta := filepath.Join(t.TempDir(), "meta", "snap")
	first := mountMeta(t, th, cache.Strict, meta, nil)
	before := copyRequests(first.host)
	walkAll(t, th, first)
	cost := listingRequests(first.host, before)
	first.end(t)
	added, removed, _ := changeWhileUnmounted(t, th)

	second := mountMeta(t, th, cache.Strict, meta, nil)
	before = copyRequests(second.host)
	names := walkAll(t, th, second)
	again := listingRequests(second.host, before)
	t.Logf("%d names; first mount %v, remount %v", names, cost, again)
	got := findIn(t, second.path("proj"))
	if !slices.Contains(got, added) || slices.Contains(got, removed) {
		t.Error("strict remount answered from the snapshot")
	}
	if again["exec"]+again["OPENDIR"] == 0 {
		t.Errorf("the remount listed nothing: %v", again)
	}
	if st := second.dirs.PersistStats(); st.LoadedDirs == 0 {
		t.Error("the snapshot was not loaded")
	}
}

// Names created and removed through the mount just before it ends are
// right in the snapshot, which the unmount itself writes.
func TestPersistOwnChanges(t *testing.T) {
	th := testenv.StartHost(t, "127.0.0.3")
	walkTree(t, filepath.Join(th.Dir, "proj"), 3, 2)
	meta := filepath.Join(t.TempDir(), "meta", "snap")
	first := mountMeta(t, th, cache.Immutable, meta, nil)
	walkAll(t, th, first)
	ents, err := os.ReadDir(filepath.Join(th.Dir, "proj/d00 sp ace/s01"))
	if err != nil || len(ents) == 0 {
		t.Fatalf("%v, %d entries", err, len(ents))
	}
	victim := "proj/d00 sp ace/s01/" + ents[0].Name()
	mustWrite(t, first.path("proj/made"), []byte("12345"))
	if err := os.Remove(first.path(victim)); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(first.path("proj/newdir"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("made", first.path("proj/newdir/link")); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(first.path("proj/empty"), first.path("proj/moved")); err != nil {
		t.Fatal(err)
	}
	// Unmounting writes the snapshot; nothing else is asked to.
	first.unmount(t)
	for i := 0; ; i++ {
		if _, err := os.Stat(meta); err == nil {
			break
		}
		if i == 100 {
			t.Fatal("no snapshot 5 s after the unmount")
		}
		time.Sleep(50 * time.Millisecond)
	}
	first.dirs.Close()

	second := mountMeta(t, th, cache.Immutable, meta, nil)
	for _, c := range []struct {
		name   string
		exists bool
	}{{"proj/made", true}, {victim, false}, {"proj/newdir/link", true}, {"proj/empty", false}, {"proj/moved", true}} {
		_, err := os.Lstat(second.path(c.name))
		if (err == nil) != c.exists {
			t.Errorf("%q after remount: %v", c.name, err)
		}
	}
	if fi, err := os.Lstat(second.path("proj/made")); err != nil || fi.Size() != 5 {
		t.Errorf("made: %v, %v", fi, err)
	}
	sameTree(t, filepath.Join(th.Dir, "proj"), second.path("proj"))
}
