package fusefs

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/hanwen/go-fuse/v2/fs"

	"sshfsm/internal/namespace"
	"sshfsm/internal/remote"
	"sshfsm/internal/testenv"
	"sshfsm/internal/transport"
)

// mountSSH mounts th's directory through real ssh and returns the mount
// and its host (for the request counters).
func mountSSH(t *testing.T, th *testenv.Host, o Options) (*testMount, *transport.Host) {
	t.Helper()
	h := dialSSH(t, th)
	return mountNS(t, th.Dir, namespace.Single(h.Remote()), o), h
}

// dialSSH connects to th's directory through real ssh.
func dialSSH(t *testing.T, th *testenv.Host) *transport.Host {
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
	return h
}

// mountNS mounts ns; dir is where the test reads what the mount serves.
func mountNS(t *testing.T, dir string, ns namespace.Namespace, o Options) *testMount {
	t.Helper()
	testenv.RequireFUSE(t)
	tm := &testMount{dir: dir, mnt: t.TempDir(), logs: &testenv.LogBuffer{}}
	o.Logger = slog.New(slog.NewTextHandler(tm.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	srv, err := Mount(tm.mnt, ns, o, MountOptions{FsName: "test", Subtype: "sshfsm"})
	if err != nil {
		t.Fatalf("Mount: %v", err)
	}
	tm.srv = srv
	t.Cleanup(func() {
		tm.unmount(t)
		if t.Failed() {
			t.Logf("filesystem log:\n%s", tm.logs)
		}
	})
	return tm
}

// walkTree builds below root a tree of width directories of width
// subdirectories of files, odd names among them, and a chain of
// chainLen nested directories; it returns how many directories it made.
func walkTree(t *testing.T, root string, width, chainLen int) int {
	t.Helper()
	odd := []string{"sp ace", "new\nline", "quo'te", `back\slash`, "non-utf8-\xff", "$(x)"}
	dirs := 1
	mk := func(p string) {
		if err := os.MkdirAll(p, 0o755); err != nil {
			t.Fatal(err)
		}
		dirs++
	}
	for i := range width {
		top := filepath.Join(root, fmt.Sprintf("d%02d %s", i, odd[i%len(odd)]))
		mk(top)
		for j := range width {
			sub := filepath.Join(top, fmt.Sprintf("s%02d", j))
			mk(sub)
			for k := range 4 {
				mustWrite(t, filepath.Join(sub, fmt.Sprintf("f%d%s", k, odd[(j+k)%len(odd)])), []byte(strings.Repeat("x", k)))
			}
		}
		if err := os.Symlink("s00", filepath.Join(top, "link")); err != nil {
			t.Fatal(err)
		}
	}
	mk(filepath.Join(root, "empty"))
	chain := root
	for i := range chainLen {
		chain = filepath.Join(chain, fmt.Sprintf("c%d", i))
		mk(chain)
		mustWrite(t, filepath.Join(chain, "leaf"), nil)
	}
	return dirs - 1
}

// findIn runs find on dir and returns the names it prints, relative to
// dir, sorted. (find gets dir as an argument: a child that changed into a
// directory of this process's own mount before exec could deadlock it.)
func findIn(t *testing.T, dir string) []string {
	t.Helper()
	cmd := exec.Command("find", dir, "-print0")
	var errb bytes.Buffer
	cmd.Stderr = &errb
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("find in %s: %v: %s", dir, err, errb.String())
	}
	names := strings.Split(strings.TrimSuffix(string(out), "\x00"), "\x00")
	for i, n := range names {
		if names[i] = strings.TrimPrefix(n, dir+"/"); n == dir {
			names[i] = "."
		}
	}
	sort.Strings(names)
	return names
}

// sameTree checks that find lists the same names in both directories and
// that every entry has the same type, permissions, size, owner and mtime.
func sameTree(t *testing.T, local, mounted string) int {
	t.Helper()
	want, got := findIn(t, local), findIn(t, mounted)
	if strings.Join(got, "\x00") != strings.Join(want, "\x00") {
		t.Fatalf("find over the mount lists %d names, locally %d:\n got %q\nwant %q", len(got), len(want), got, want)
	}
	for _, n := range want {
		var l, m syscall.Stat_t
		if err := syscall.Lstat(filepath.Join(local, n), &l); err != nil {
			t.Fatal(err)
		}
		if err := syscall.Lstat(filepath.Join(mounted, n), &m); err != nil {
			t.Fatal(err)
		}
		if l.Mode != m.Mode || (l.Size != m.Size && l.Mode&syscall.S_IFMT != syscall.S_IFDIR) ||
			l.Uid != m.Uid || l.Gid != m.Gid || l.Mtim.Sec != m.Mtim.Sec {
			t.Errorf("%q: local mode %o size %d mtime %d, mounted mode %o size %d mtime %d",
				n, l.Mode, l.Size, l.Mtim.Sec, m.Mode, m.Size, m.Mtim.Sec)
		}
	}
	return len(want)
}

func walkOpts() Options {
	o := defaultOpts()
	o.PrefetchDepth = 6
	return o
}

// A walk is listed by one remote command per bulkDepthFactor*PrefetchDepth
// levels instead of a listing per directory.
func TestBulkWalk(t *testing.T) {
	th := testenv.StartHost(t, "127.0.0.2")
	dirs := walkTree(t, filepath.Join(th.Dir, "proj"), 8, 6*bulkDepthFactor+3)
	tm, h := mountSSH(t, th, walkOpts())
	before := h.Stats().Requests
	n := sameTree(t, filepath.Join(th.Dir, "proj"), tm.path("proj"))
	after := h.Stats().Requests
	execs := after["exec"] - before["exec"]
	opendirs := after["OPENDIR"] - before["OPENDIR"]
	t.Logf("%d names in %d directories: %d execs, %d OPENDIR, %d READDIR", n, dirs, execs, opendirs,
		after["READDIR"]-before["READDIR"])
	// One command for the tree and one below the first one's last level;
	// the listings of the root and of proj, before the walk began.
	if execs != 2 || opendirs > 3 {
		t.Errorf("%d execs and %d OPENDIR for %d directories", execs, opendirs, dirs)
	}
}

// Walks of a union and of grafts of two hosts are listed by one remote
// command per host, as on one host: the union merges the hosts' tree
// listings, the graft passes each one on below its name.
func TestBulkWalkUnionAndGrafts(t *testing.T) {
	th0, th1 := testenv.StartHost(t, "127.0.0.2"), testenv.StartHost(t, "127.0.0.3")
	walkTree(t, filepath.Join(th0.Dir, "proj"), 6, 8)
	walkTree(t, filepath.Join(th1.Dir, "proj"), 4, 3) // merges with th0's proj
	mustWrite(t, filepath.Join(th1.Dir, "proj", "only1"), []byte("1"))
	// What the union shows: th0's copies win, th1 adds its other names.
	merged := t.TempDir()
	for _, dir := range []string{th1.Dir, th0.Dir} {
		if out, err := exec.Command("cp", "-a", filepath.Join(dir, "proj"), merged).CombinedOutput(); err != nil {
			t.Fatalf("cp: %v: %s", err, out)
		}
	}
	counts := func(hs ...*transport.Host) (execs, opendirs uint64) {
		for _, h := range hs {
			r := h.Stats().Requests
			execs, opendirs = execs+r["exec"], opendirs+r["OPENDIR"]
		}
		return
	}

	h0, h1 := dialSSH(t, th0), dialSSH(t, th1)
	u, err := namespace.NewUnion([]namespace.Branch{{Name: "h0", Remote: h0.Remote()}, {Name: "h1", Remote: h1.Remote()}}, namespace.UnionOptions{})
	if err != nil {
		t.Fatal(err)
	}
	tm := mountNS(t, th0.Dir, u, walkOpts())
	e0, o0 := counts(h0, h1)
	n := sameTree(t, filepath.Join(merged, "proj"), tm.path("proj"))
	e1, o1 := counts(h0, h1)
	t.Logf("union: %d names: %d execs, %d OPENDIR", n, e1-e0, o1-o0)
	// One command per host for the tree, one more per host below the
	// first one's last level on th0's chain; the root and proj listed first.
	if e1-e0 > 4 || o1-o0 > 6 {
		t.Errorf("union walk: %d execs and %d OPENDIR", e1-e0, o1-o0)
	}

	g0, g1 := dialSSH(t, th0), dialSSH(t, th1)
	g, err := namespace.NewGraft(nil, []namespace.Graft{{Name: "A", NS: namespace.Single(g0.Remote())}, {Name: "B", NS: namespace.Single(g1.Remote())}})
	if err != nil {
		t.Fatal(err)
	}
	gm := mountNS(t, th0.Dir, g, walkOpts())
	e0, o0 = counts(g0, g1)
	if got := findIn(t, gm.mnt); len(got) != len(findIn(t, th0.Dir))+len(findIn(t, th1.Dir))+1 {
		t.Errorf("graft root: find lists %d names", len(got))
	}
	sameTree(t, filepath.Join(th0.Dir, "proj"), gm.path("A/proj"))
	sameTree(t, filepath.Join(th1.Dir, "proj"), gm.path("B/proj"))
	e1, o1 = counts(g0, g1)
	t.Logf("grafts: %d execs, %d OPENDIR", e1-e0, o1-o0)
	if e1-e0 > 4 || o1-o0 > 6 {
		t.Errorf("graft walk: %d execs and %d OPENDIR", e1-e0, o1-o0)
	}
}

// A single look lists one level ahead directory by directory, as before.
func TestBulkNotForASingleLook(t *testing.T) {
	th := testenv.StartHost(t, "127.0.0.2")
	walkTree(t, th.Dir, 4, 0)
	tm, h := mountSSH(t, th, walkOpts())
	ents, err := os.ReadDir(tm.mnt)
	if err != nil || len(ents) != 5 {
		t.Fatalf("%d entries, %v", len(ents), err)
	}
	for _, e := range ents {
		if _, err := e.Info(); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(100 * time.Millisecond) // the prefetch of the level below
	if n := h.Stats().Requests["exec"]; n != 0 {
		t.Errorf("a single look ran %d bulk listings", n)
	}
}

// A host that runs no commands is walked directory by directory.
func TestBulkFallback(t *testing.T) {
	th := testenv.StartHostWith(t, testenv.Options{Addr: "127.0.0.3", SFTPOnly: true})
	dirs := walkTree(t, filepath.Join(th.Dir, "proj"), 6, 9)
	walkTree(t, filepath.Join(th.Dir, "more"), 3, 0)
	tm, h := mountSSH(t, th, walkOpts())
	sameTree(t, filepath.Join(th.Dir, "proj"), tm.path("proj"))
	req := h.Stats().Requests
	if req["exec"] != 1 || req["OPENDIR"] < uint64(dirs) {
		t.Errorf("%d execs, %d OPENDIR for %d directories: want one try, then SFTP", req["exec"], req["OPENDIR"], dirs)
	}
	// The next walk does not try again.
	sameTree(t, filepath.Join(th.Dir, "more"), tm.path("more"))
	if n := h.Stats().Requests["exec"]; n != 1 {
		t.Errorf("%d execs after a second walk", n)
	}
}

// scriptedLister is a remote whose tree listings publish what the real one
// lists, then stop with err after publishing at most limit directories.
type scriptedLister struct {
	remote.Remote
	limit int
	err   error
	calls atomic.Int32
}

func (s *scriptedLister) ListTree(ctx context.Context, dir string, depth int, fn func(string, []remote.DirEntry)) error {
	s.calls.Add(1)
	if s.limit == 0 {
		return s.err
	}
	// Children first, as a real listing reports them.
	var walk func(d string, level int) bool
	published := 0
	walk = func(d string, level int) bool {
		ents, err := s.Remote.ReadDir(ctx, d)
		if err != nil {
			return false
		}
		for _, e := range ents {
			if e.Attr.Mode&syscall.S_IFMT == syscall.S_IFDIR && level < depth && !walk(join(d, e.Name), level+1) {
				return false
			}
		}
		if published >= s.limit {
			return false
		}
		published++
		fn(d, ents)
		return true
	}
	walk(dir, 0)
	return s.err
}

// A failed bulk listing falls back to listing directory by directory, and
// walks are not listed in bulk for a while.
func TestBulkFailureFallsBack(t *testing.T) {
	for _, c := range []struct {
		name  string
		limit int
		err   error
		min   int32 // bulk listings for two walks
		max   int32
	}{
		{"failed", 0, syscall.ECONNRESET, 1, 1},
		// Walks going on where a truncated listing did not reach start
		// more listings there.
		{"truncated", 5, remote.ErrTreeTruncated, 3, 20},
		{"complete", 1 << 30, nil, 2, 2},
	} {
		t.Run(c.name, func(t *testing.T) {
			var sl *scriptedLister
			tm := mountWith(t, walkOpts(), func(r remote.Remote) remote.Remote {
				sl = &scriptedLister{Remote: r, limit: c.limit, err: c.err}
				return sl
			})
			walkTree(t, filepath.Join(tm.dir, "one"), 4, 3)
			walkTree(t, filepath.Join(tm.dir, "two"), 4, 3)
			sameTree(t, filepath.Join(tm.dir, "one"), tm.path("one"))
			sameTree(t, filepath.Join(tm.dir, "two"), tm.path("two"))
			if n := sl.calls.Load(); n < c.min || n > c.max {
				t.Errorf("%d bulk listings, want %d to %d", n, c.min, c.max)
			}
		})
	}
}

// mountFsys mounts a fresh remote directory like mountWith and returns its
// filesys too, to look at the nodes a walk made.
func mountFsys(t *testing.T, o Options) (*testMount, *filesys) {
	t.Helper()
	testenv.RequireFUSE(t)
	tm := &testMount{dir: t.TempDir(), mnt: t.TempDir(), logs: &testenv.LogBuffer{}}
	o.Logger = slog.New(slog.NewTextHandler(tm.logs, nil))
	fsys := newFilesys(namespace.Single(newRemote(t, tm.dir)), o)
	srv, err := fs.Mount(tm.mnt, fsys.root, fsys.fsOptions(MountOptions{FsName: "test", Subtype: "sshfsm"}))
	if err != nil {
		t.Fatalf("Mount: %v", err)
	}
	tm.srv = srv
	t.Cleanup(func() {
		tm.unmount(t)
		if t.Failed() {
			t.Logf("filesystem log:\n%s", tm.logs)
		}
	})
	return tm, fsys
}

// nodesUnder counts the directories and files below p that have a node.
func nodesUnder(fsys *filesys, p string) (dirs, files int) {
	in := &fsys.root.Inode
	for _, name := range strings.Split(p, "/") {
		if in = in.GetChild(name); in == nil {
			return 0, 0
		}
	}
	var walk func(in *fs.Inode)
	walk = func(in *fs.Inode) {
		for _, ch := range in.Children() {
			if ch.IsDir() {
				dirs++
				walk(ch)
			} else {
				files++
			}
		}
	}
	walk(in)
	return dirs, files
}

// A walk's READDIRPLUS replies carry the entries of directories only,
// until a walker looks up a file left out; then they carry every entry.
// Names, types and attributes are the same either way.
func TestWalkLeavesFilesOut(t *testing.T) {
	tm, fsys := mountFsys(t, walkOpts())
	dirs := walkTree(t, filepath.Join(tm.dir, "one"), 4, 3)
	walkTree(t, filepath.Join(tm.dir, "two"), 4, 3)

	findIn(t, tm.path("one"))
	if d, f := nodesUnder(fsys, "one"); d != dirs || f != 0 {
		t.Errorf("after find: nodes for %d directories (want %d) and %d files (want none)", d, dirs, f)
	}
	if !fsys.pre.filesLeftOut() {
		t.Fatal("find looked files up")
	}
	// Stat every name: the files left out are looked up, with the
	// attributes READDIRPLUS would have given.
	sameTree(t, filepath.Join(tm.dir, "one"), tm.path("one"))
	if fsys.pre.filesLeftOut() {
		t.Fatal("looking up files left out did not turn full entries back on")
	}
	findIn(t, tm.path("two"))
	if d, f := nodesUnder(fsys, "two"); d != dirs || f == 0 {
		t.Errorf("after stats of files, find made nodes for %d directories (want %d) and %d files (want all)", d, dirs, f)
	}
	sameTree(t, filepath.Join(tm.dir, "two"), tm.path("two"))
}

// ls -l DIR on a fresh mount reads a listing the lookup of DIR prefetched,
// like a walk does, but nobody read DIR's parent: READDIRPLUS carries
// every entry, so the stats of its files need no lookups.
func TestLookAtOneDirectoryKeepsFiles(t *testing.T) {
	tm, fsys := mountFsys(t, walkOpts())
	const files = 50
	if err := os.MkdirAll(filepath.Join(tm.dir, "top", "dir"), 0o755); err != nil {
		t.Fatal(err)
	}
	for i := range files {
		mustWrite(t, filepath.Join(tm.dir, "top", "dir", fmt.Sprintf("f%02d", i)), []byte("x"))
	}
	var st syscall.Stat_t
	if err := syscall.Lstat(tm.path("top/dir"), &st); err != nil {
		t.Fatal(err)
	}
	ents, err := os.ReadDir(tm.path("top/dir"))
	if err != nil || len(ents) != files {
		t.Fatalf("read %d entries, %v; want %d", len(ents), err, files)
	}
	if d, f := nodesUnder(fsys, "top/dir"); d != 0 || f != files {
		t.Errorf("after reading top/dir: nodes for %d directories and %d files, want 0 and %d", d, f, files)
	}
}
