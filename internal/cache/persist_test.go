package cache

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"sshfsm/internal/remote"
)

func newClock() *clock { return &clock{t: time.Unix(1_700_000_000, 0)} }

func file(size uint64, mtime int64) remote.Attr {
	return remote.Attr{Mode: syscall.S_IFREG | 0o644, Size: size, UID: 1000, GID: 100,
		Atime: time.Unix(mtime+5, 0), Mtime: time.Unix(mtime, 0)}
}

func dirAttr() remote.Attr {
	return remote.Attr{Mode: syscall.S_IFDIR | 0o755, Mtime: time.Unix(1_600_000_000, 0), Atime: time.Unix(1_600_000_000, 0)}
}

// logCount is a logger and a count of its lines containing a text.
type logCount struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *logCount) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *logCount) count(s string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Count(l.buf.String(), s)
}

func (l *logCount) logger() *slog.Logger { return slog.New(slog.NewTextHandler(l, nil)) }

// persisted returns a cache persisting to path in mode.
func persisted(t *testing.T, path string, mode Mode, c *clock, o PersistOptions) *Dirs {
	t.Helper()
	var now func() time.Time
	if c != nil {
		now = c.now
	}
	d := New(20*time.Second, now)
	o.Path, o.Mode = path, mode
	d.Persist(o)
	t.Cleanup(d.Close)
	return d
}

// store stores ents as the listing of dir, as listing the remote does.
func store(d *Dirs, dir string, ents []remote.DirEntry) {
	d.Fetch(context.Background(), dir, func(context.Context, string) ([]remote.DirEntry, error) { return ents, nil })
}

func mustList(t *testing.T, d *Dirs, dir string) []remote.DirEntry {
	t.Helper()
	ents, ok := d.List(dir)
	if !ok {
		t.Fatalf("no listing of %q answers", dir)
	}
	return ents
}

func noFetch(t *testing.T) Fetcher {
	return func(ctx context.Context, dir string) ([]remote.DirEntry, error) {
		t.Errorf("listed %q", dir)
		return nil, syscall.EIO
	}
}

// Everything a listing answers with survives a snapshot: names in their
// order (odd bytes included), attributes to the nanosecond, the server's
// identity (inode number, device, links, ctime) where a tree listing told
// it, zero times, unknown entries, and the root's attributes. Removed
// names stay removed.
func TestSnapshotRoundTrip(t *testing.T) {
	path := filepath.Join(t.TempDir(), "meta", "snap")
	root := dirAttr()
	rootAt := time.Now()
	d := persisted(t, path, Auto, nil, PersistOptions{Root: func() (remote.Attr, time.Time) { return root, rootAt }})
	odd := file(7, 1_650_000_000)
	odd.Mtime = time.Unix(1_650_000_000, 123456789)
	odd.Dev, odd.Ino, odd.Nlink, odd.Ctime = 1<<40+3, 1<<63+77, 2, time.Unix(1_650_000_001, 987654321)
	root.Dev, root.Ino, root.Nlink, root.Ctime = 2049, 2, 5, time.Unix(1_600_000_001, 1)
	zero := remote.Attr{Mode: syscall.S_IFLNK | 0o777, Size: 3}
	want := map[string][]remote.DirEntry{
		"": {{Name: "b", Attr: dirAttr()}, {Name: "a", Attr: file(1, 1)}},
		"b": {{Name: "new\nline", Attr: odd}, {Name: "non-utf8-\xff", Attr: zero},
			{Name: "gone", Attr: file(2, 2)}, {Name: "z", Attr: file(3, 3)}},
		"b/empty": nil,
	}
	for dir, ents := range want {
		store(d, dir, ents)
	}
	d.Remove("b", "gone")
	d.Set("b", "created", file(4, 4))
	d.Forget("b", "z")
	// The root's attributes learned before the mount changed the root
	// directory are not written; those learned after are.
	d.Set("", "a", file(1, 1))
	d.Close()
	if s, err := decodeFile(path); err != nil || s.hasRoot {
		t.Fatalf("root written: %v", err)
	}
	d = persisted(t, path, Auto, nil, PersistOptions{Root: func() (remote.Attr, time.Time) { return root, time.Now() }})
	d.Set("b", "z", file(3, 3))
	d.Forget("b", "z")
	d.Close()

	if _, err := os.Stat(path); err != nil {
		t.Fatal(err)
	}
	if fi, _ := os.Stat(filepath.Dir(path)); fi.Mode().Perm() != 0o700 {
		t.Errorf("snapshot directory mode %v, want 0700", fi.Mode().Perm())
	}
	e := persisted(t, path, Immutable, nil, PersistOptions{})
	if a, ok := e.PersistedRoot(); !ok || !reflect.DeepEqual(a, root) {
		t.Errorf("root %+v, %v; want %+v", a, ok, root)
	}
	if got := mustList(t, e, "b/empty"); len(got) != 0 {
		t.Errorf("listing of b/empty: %+v", got)
	}
	// The mount changed b, so b's times in the root's listing are out of
	// date: unknown.
	if a, st := e.Peek("", "a"); st != Hit || !reflect.DeepEqual(a, file(1, 1)) {
		t.Errorf("a: %+v %v", a, st)
	}
	if _, st := e.Peek("", "b"); st != Unknown {
		t.Errorf("b, changed by the mount: %v", st)
	}
	// b has an unknown entry: it cannot be listed whole, but answers
	// for the others.
	if _, ok := e.List("b"); ok {
		t.Error("a listing with an unknown entry was listed whole")
	}
	for _, c := range []struct {
		name string
		st   State
		a    remote.Attr
	}{
		{"new\nline", Hit, odd}, {"non-utf8-\xff", Hit, zero}, {"created", Hit, file(4, 4)},
		{"gone", Absent, remote.Attr{}}, {"z", Unknown, remote.Attr{}}, {"never", Absent, remote.Attr{}},
	} {
		a, st, err := e.Lookup(context.Background(), "b", c.name, noFetch(t))
		if err != nil || st != c.st || !reflect.DeepEqual(a, c.a) {
			t.Errorf("%q: %+v %v %v; want %+v %v", c.name, a, st, err, c.a, c.st)
		}
	}
	if a, _ := e.Peek("b", "new\nline"); a.Mtime.Nanosecond() != 123456789 || !a.Atime.Equal(odd.Atime) {
		t.Errorf("times %v %v", a.Mtime, a.Atime)
	}
	if a, _ := e.Peek("b", "non-utf8-\xff"); !a.Mtime.IsZero() || !a.Atime.IsZero() {
		t.Errorf("zero times came back as %v %v", a.Mtime, a.Atime)
	}
	st := e.PersistStats()
	if st.LoadedDirs != 3 || st.LoadedEntries != 6 || st.SnapshotTime.IsZero() {
		t.Errorf("stats %+v", st)
	}
}

// writeSample writes a snapshot of a few listings and returns its bytes.
func writeSample(t *testing.T, path string) []byte {
	t.Helper()
	d := persisted(t, path, Auto, nil, PersistOptions{})
	for i := range 10 {
		store(d, fmt.Sprintf("d%d", i), []remote.DirEntry{{Name: "f", Attr: file(uint64(i), 1)}})
	}
	d.Close()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// resum recomputes the checksum of a snapshot changed on purpose.
func resum(b []byte) []byte {
	end := len(b) - 4
	binary.LittleEndian.PutUint32(b[end:], crc32.Checksum(b[:end], castagnoli))
	return b
}

// A damaged, truncated, foreign or newer snapshot is ignored whole with
// one log line; the mount starts empty and writes a sound one.
func TestSnapshotRefused(t *testing.T) {
	dir := t.TempDir()
	good := writeSample(t, filepath.Join(dir, "good"))
	flip := func(i int) []byte {
		b := bytes.Clone(good)
		b[i] ^= 0x40
		return b
	}
	version := bytes.Clone(good)
	binary.LittleEndian.PutUint32(version[len(snapMagic):], snapVersion+1)
	// One of before: its listings lack what this version keeps.
	older := bytes.Clone(good)
	binary.LittleEndian.PutUint32(older[len(snapMagic):], snapVersion-1)
	// A body that decodes badly behind a good checksum: a count past
	// the end.
	lying := bytes.Clone(good)
	lying[snapHeader+6] = 0xff
	cases := map[string][]byte{
		"empty":      {},
		"garbage":    []byte(strings.Repeat("not a snapshot ", 10)),
		"truncated":  good[:len(good)/2],
		"short tail": good[:len(good)-1],
		"flipped":    flip(len(good) / 2),
		"magic":      flip(0),
		"version":    resum(version),
		"older":      resum(older),
		"longer":     append(bytes.Clone(good), 0),
		"lying":      resum(lying),
	}
	for name, data := range cases {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "snap")
			if err := os.WriteFile(path, data, 0o600); err != nil {
				t.Fatal(err)
			}
			var logs logCount
			d := persisted(t, path, Immutable, nil, PersistOptions{Logger: logs.logger()})
			if n := logs.count("metadata snapshot ignored"); n != 1 {
				t.Errorf("%d log lines about it, want 1:\n%s", n, logs.buf.String())
			}
			if st := d.PersistStats(); st.LoadedDirs != 0 {
				t.Errorf("loaded %d listings", st.LoadedDirs)
			}
			if _, ok := d.List("d1"); ok {
				t.Error("a listing answers")
			}
			d.Put("x", nil)
			d.Close()
			if _, err := decodeFile(path); err != nil {
				t.Errorf("the next snapshot: %v", err)
			}
		})
	}
}

func decodeFile(path string) (*snapshot, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return decodeSnapshot(b)
}

// A snapshot keeps the most recently used directories within its bounds;
// so does the cache itself.
func TestSnapshotBound(t *testing.T) {
	c := newClock()
	path := filepath.Join(t.TempDir(), "snap")
	d := persisted(t, path, Auto, c, PersistOptions{MaxEntries: 1000})
	ents := make([]remote.DirEntry, 10)
	for i := range ents {
		ents[i] = remote.DirEntry{Name: fmt.Sprintf("file-%d", i), Attr: file(1, 1)}
	}
	for i := range 150 {
		store(d, fmt.Sprintf("d%03d", i), ents)
		c.add(time.Second)
		if st := d.PersistStats(); st.Entries > 1000 {
			t.Fatalf("%d entries kept after %d listings", st.Entries, i+1)
		}
	}
	// Using d000's listing keeps it; it would be the oldest.
	if _, ok := d.List("d000"); ok {
		t.Fatal("d000 was kept past the bound")
	}
	store(d, "d000", ents)
	c.add(time.Second)
	mustList(t, d, "d149")
	d.Close()
	s, err := decodeFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if s.entries > 1000 || s.entries < 800 {
		t.Errorf("%d entries written, bound 1000", s.entries)
	}
	kept := map[string]bool{}
	for _, ld := range s.dirs {
		kept[ld.path] = true
	}
	for _, p := range []string{"d000", "d149", "d148"} {
		if !kept[p] {
			t.Errorf("recently used %s not written", p)
		}
	}
	for i := 1; i < 149; i++ {
		if kept[fmt.Sprintf("d%03d", i)] && !kept[fmt.Sprintf("d%03d", i+1)] {
			t.Errorf("d%03d written, the newer d%03d not", i, i+1)
		}
	}

	// The byte bound.
	small := filepath.Join(t.TempDir(), "small")
	e := persisted(t, small, Auto, c, PersistOptions{MaxBytes: 4096})
	for i := range 100 {
		store(e, fmt.Sprintf("d%03d", i), ents)
		c.add(time.Second)
	}
	e.Close()
	b, err := os.ReadFile(small)
	if err != nil || len(b) > 4096 || len(b) < 2048 {
		t.Fatalf("%d bytes, %v; bound 4096", len(b), err)
	}
	s, err = decodeFile(small)
	if err != nil || s.dirs[0].path != "d099" {
		t.Errorf("%v; first %q, want the newest", err, s.dirs[0].path)
	}
}

// fetches counts the listings of each directory a Fetcher made.
type fetches struct {
	mu    sync.Mutex
	n     map[string]int
	trees atomic.Int32
	tree  map[string][]remote.DirEntry // what the remote holds
	hold  chan struct{}                // when set, tree listings start once it is closed
}

func (f *fetches) readDir(ctx context.Context, dir string) ([]remote.DirEntry, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.n == nil {
		f.n = map[string]int{}
	}
	f.n[dir]++
	ents, ok := f.tree[dir]
	if !ok {
		return nil, syscall.ENOENT
	}
	return ents, nil
}

func (f *fetches) count(dir string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.n[dir]
}

// ListTree lists the tree below dir, children first.
func (f *fetches) ListTree(ctx context.Context, dir string, depth int, fn func(string, []remote.DirEntry)) error {
	f.trees.Add(1)
	if f.hold != nil {
		select {
		case <-f.hold:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	var walk func(d string, lvl int)
	walk = func(d string, lvl int) {
		f.mu.Lock()
		ents, ok := f.tree[d]
		f.mu.Unlock()
		if !ok {
			return
		}
		for _, e := range ents {
			if e.Attr.Mode&syscall.S_IFMT == syscall.S_IFDIR && lvl < depth {
				walk(joinPath(d, e.Name), lvl+1)
			}
		}
		fn(d, ents)
	}
	walk(dir, 0)
	return nil
}

func sampleTree() map[string][]remote.DirEntry {
	return map[string][]remote.DirEntry{
		"":      {{Name: "a", Attr: dirAttr()}, {Name: "top", Attr: file(1, 1)}},
		"a":     {{Name: "b", Attr: dirAttr()}, {Name: "f", Attr: file(2, 2)}, {Name: "g", Attr: file(3, 3)}},
		"a/b":   {{Name: "c", Attr: dirAttr()}, {Name: "h", Attr: file(4, 4)}},
		"a/b/c": {{Name: "i", Attr: file(5, 5)}},
	}
}

// saveTree writes a snapshot of tree as a mount that listed all of it.
func saveTree(t *testing.T, path string, tree map[string][]remote.DirEntry) {
	t.Helper()
	d := persisted(t, path, Auto, nil, PersistOptions{})
	for dir, ents := range tree {
		store(d, dir, ents)
	}
	d.Close()
}

// changes collects what revalidations report.
type changes struct {
	mu sync.Mutex
	cs []Change
}

func (c *changes) add(ch Change) {
	c.mu.Lock()
	c.cs = append(c.cs, ch)
	c.mu.Unlock()
}

func (c *changes) all() []Change {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]Change(nil), c.cs...)
}

// settle waits until no revalidation is queued or under way.
func settle(t *testing.T, d *Dirs) {
	t.Helper()
	for i := 0; d.PersistStats().Pending > 0; i++ {
		if i > 500 {
			t.Fatal("revalidations did not end")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// In Auto mode a loaded listing that the check at mount found unchanged
// answers at once; its first answer queues
// one revalidation, which replaces it and reports what changed for names
// that were answered. Without a revalidation it expires one time to live
// after its first answer.
func TestAutoRevalidatesDirectories(t *testing.T) {
	path := filepath.Join(t.TempDir(), "snap")
	// A file replaced on the server keeping size and mtime (another
	// inode) has changed too; one whose identity only one listing tells
	// has not.
	identified := func(ino uint64) remote.Attr {
		a := file(6, 6)
		a.Dev, a.Ino, a.Nlink, a.Ctime = 1, ino, 1, time.Unix(7, 0)
		return a
	}
	saved := sampleTree()
	saved["a"] = append(saved["a"], remote.DirEntry{Name: "replaced", Attr: identified(10)},
		remote.DirEntry{Name: "told once", Attr: identified(12)})
	saveTree(t, path, saved)
	remoteNow := sampleTree()
	remoteNow["a"] = []remote.DirEntry{{Name: "b", Attr: dirAttr()}, {Name: "f", Attr: file(20, 9)}, {Name: "new", Attr: file(1, 1)},
		{Name: "replaced", Attr: identified(11)}, {Name: "told once", Attr: file(6, 6)}}
	f := &fetches{tree: remoteNow}
	var ch changes
	c := newClock()
	d := persisted(t, path, Auto, c, PersistOptions{ReadDir: f.readDir, Changed: ch.add, Changes: &changeList{}})
	checkDone(t, d)

	a, st, err := d.Lookup(context.Background(), "a", "g", noFetch(t))
	if err != nil || st != Hit || a.Size != 3 {
		t.Fatalf("loaded listing answered %+v %v %v", a, st, err)
	}
	settle(t, d)
	if n := f.count("a"); n != 1 {
		t.Fatalf("a listed %d times, want 1", n)
	}
	if n := f.count("a/b") + f.count(""); n != 0 {
		t.Errorf("directories not used were listed %d times", n)
	}
	got := ch.all()
	if len(got) != 1 || got[0].Dir != "a" || !got[0].Listed {
		t.Fatalf("changes %+v", got)
	}
	names := map[string]NameChange{}
	for _, nc := range got[0].Names {
		names[nc.Name] = nc
	}
	if len(names) != 4 || names["g"].Exists || !names["new"].Exists || names["f"].Attr.Size != 20 ||
		names["replaced"].Attr.Ino != 11 {
		t.Errorf("changed names %+v", got[0].Names)
	}
	if _, st := d.Peek("a", "new"); st != Hit {
		t.Error("the revalidated listing does not show a new name")
	}
	// Answering again does not revalidate again.
	d.Peek("a", "f")
	settle(t, d)
	if n := f.count("a"); n != 1 {
		t.Errorf("a listed %d times", n)
	}
	if st := d.PersistStats(); st.Revalidated != 1 || st.Changed != 1 {
		t.Errorf("stats %+v", st)
	}

	// Without revalidation (none configured), a loaded listing answers
	// for one time to live after its first answer.
	e := persisted(t, path, Auto, c, PersistOptions{Changes: &changeList{}})
	checkDone(t, e)
	mustList(t, e, "a/b")
	c.add(19 * time.Second)
	mustList(t, e, "a/b")
	c.add(2 * time.Second)
	if _, ok := e.List("a/b"); ok {
		t.Error("a loaded listing answered past its time to live")
	}
	// Never answered before, a/b/c starts its time now.
	mustList(t, e, "a/b/c")
}

// When the namespace lists trees, the first answer revalidates the whole
// loaded subtree in one request; listings of directories gone from the
// remote are dropped. Lookups of directories in its range wait for it
// rather than list them.
func TestAutoRevalidatesTrees(t *testing.T) {
	path := filepath.Join(t.TempDir(), "snap")
	saveTree(t, path, sampleTree())
	remoteNow := sampleTree()
	remoteNow["a/b"] = []remote.DirEntry{{Name: "h", Attr: file(44, 4)}}
	delete(remoteNow, "a/b/c")
	// The tree listing the root's first answer starts waits until a/b
	// has answered too, as a walker reaching it first would.
	f := &fetches{tree: remoteNow, hold: make(chan struct{})}
	var ch changes
	d := persisted(t, path, Auto, nil, PersistOptions{ReadDir: f.readDir, Tree: f, Changed: ch.add, Changes: &changeList{}})
	checkDone(t, d)

	mustList(t, d, "")
	mustList(t, d, "a/b")
	close(f.hold)
	settle(t, d)
	if n := f.trees.Load(); n != 1 {
		t.Errorf("%d tree listings, want 1", n)
	}
	for _, dir := range []string{"", "a", "a/b"} {
		if n := f.count(dir); n != 0 {
			t.Errorf("%q listed alone %d times", dir, n)
		}
	}
	// a/b answered, so its change is reported; a did not.
	got := ch.all()
	if len(got) != 1 || got[0].Dir != "a/b" || len(got[0].Names) != 2 {
		t.Errorf("changes %+v", got)
	}
	if _, ok := d.List("a/b/c"); ok {
		t.Error("the listing of a directory gone from the remote answers")
	}
	if ents := mustList(t, d, "a"); len(ents) != 3 {
		t.Errorf("a: %+v", ents)
	}
	if st := d.PersistStats(); st.Revalidated != 3 {
		t.Errorf("stats %+v", st)
	}
}

// A change by the mount while a directory is listed again keeps that
// listing from being stored: it is dropped and listed on the next
// question.
func TestRevalidationRacesWithMount(t *testing.T) {
	path := filepath.Join(t.TempDir(), "snap")
	saveTree(t, path, sampleTree())
	release := make(chan struct{})
	entered := make(chan struct{})
	f := &fetches{tree: sampleTree()}
	slow := func(ctx context.Context, dir string) ([]remote.DirEntry, error) {
		close(entered)
		<-release
		return f.readDir(ctx, dir)
	}
	d := persisted(t, path, Auto, nil, PersistOptions{ReadDir: slow, Changes: &changeList{}})
	checkDone(t, d)
	mustList(t, d, "a")
	<-entered
	d.Set("a", "made", file(9, 9))
	close(release)
	settle(t, d)
	if _, ok := d.List("a"); ok {
		t.Fatal("a listing that raced with a change was stored")
	}
	a, st, err := d.Lookup(context.Background(), "a", "made", f.readDir)
	if err != nil || st != Absent || f.count("a") != 2 {
		t.Errorf("lookup after the race: %+v %v %v, %d listings (the remote has no \"made\")", a, st, err, f.count("a"))
	}
}

// Immutable: loaded listings answer forever and nothing is listed. Strict:
// they never answer.
func TestImmutableAndStrict(t *testing.T) {
	path := filepath.Join(t.TempDir(), "snap")
	saveTree(t, path, sampleTree())
	f := &fetches{tree: sampleTree()}
	c := newClock()
	d := persisted(t, path, Immutable, c, PersistOptions{ReadDir: f.readDir, Tree: f})
	for range 3 {
		for dir := range sampleTree() {
			mustList(t, d, dir)
		}
		c.add(365 * 24 * time.Hour)
	}
	settle(t, d)
	if f.trees.Load() != 0 || f.count("") != 0 {
		t.Error("immutable listings were revalidated")
	}
	// A walk here starts no bulk listing: everything below is known.
	if b := d.StartBulk("a", 8); b != nil {
		t.Error("a bulk listing starts over a loaded tree")
	}
	d.Put("a/b/c/new", nil)
	if b := d.StartBulk("a/b/c/new", 8); b == nil {
		t.Error("no bulk listing for a directory not loaded")
	} else {
		b.End(false)
	}

	s := persisted(t, path, Strict, c, PersistOptions{ReadDir: f.readDir, Tree: f})
	if _, ok := s.List("a"); ok {
		t.Error("strict: a loaded listing answers")
	}
	if _, st, err := s.Lookup(context.Background(), "a", "f", f.readDir); err != nil || st != Hit || f.count("a") != 1 {
		t.Errorf("strict lookup: %v %v, %d listings", st, err, f.count("a"))
	}
	if st := s.PersistStats(); st.LoadedDirs != 4 {
		t.Errorf("strict loaded %d", st.LoadedDirs)
	}
}

// Loading a snapshot of 100 000 entries takes well under a second.
func TestSnapshotOf100kEntries(t *testing.T) {
	path := filepath.Join(t.TempDir(), "snap")
	d := persisted(t, path, Auto, nil, PersistOptions{})
	for i := range 2000 {
		ents := make([]remote.DirEntry, 50)
		for j := range ents {
			ents[j] = remote.DirEntry{Name: fmt.Sprintf("source-file-%04d.go", j), Attr: file(uint64(i*j), int64(1_600_000_000+j))}
		}
		store(d, fmt.Sprintf("src/pkg%04d/sub", i), ents)
	}
	start := time.Now()
	d.Close()
	wrote := time.Since(start)
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	start = time.Now()
	e := persisted(t, path, Immutable, nil, PersistOptions{})
	took := time.Since(start)
	st := e.PersistStats()
	t.Logf("100k entries: %d bytes, written in %v, loaded in %v", fi.Size(), wrote, took)
	if st.LoadedEntries != 100_000 {
		t.Fatalf("loaded %d entries", st.LoadedEntries)
	}
}

// BenchmarkSnapshotLoad measures loading a snapshot of 100k entries, the
// part of a remount that waits for the disk (TestSnapshotOf100kEntries checks
// what is loaded; the time is a figure, not an assertion, since it
// depends on the machine's load).
func BenchmarkSnapshotLoad(b *testing.B) {
	path := filepath.Join(b.TempDir(), "snap")
	open := func(mode Mode) *Dirs {
		d := New(20*time.Second, nil)
		d.Persist(PersistOptions{Path: path, Mode: mode})
		return d
	}
	d := open(Auto)
	for i := range 2000 {
		ents := make([]remote.DirEntry, 50)
		for j := range ents {
			ents[j] = remote.DirEntry{Name: fmt.Sprintf("source-file-%04d.go", j), Attr: file(uint64(i*j), int64(1_600_000_000+j))}
		}
		store(d, fmt.Sprintf("src/pkg%04d/sub", i), ents)
	}
	d.Close()
	b.ResetTimer()
	for range b.N {
		e := open(Immutable)
		if n := e.PersistStats().LoadedEntries; n != 100_000 {
			b.Fatalf("loaded %d entries", n)
		}
		e.Close()
	}
}

// Close cuts revalidations short without losing the listings they were
// to replace: the snapshot still holds them.
func TestCloseKeepsListingsUnderRevalidation(t *testing.T) {
	path := filepath.Join(t.TempDir(), "snap")
	saveTree(t, path, sampleTree())
	entered := make(chan struct{})
	stuck := func(ctx context.Context, dir string) ([]remote.DirEntry, error) {
		close(entered)
		<-ctx.Done()
		return nil, ctx.Err()
	}
	d := persisted(t, path, Auto, nil, PersistOptions{ReadDir: stuck, Changes: &changeList{}})
	checkDone(t, d)
	mustList(t, d, "a/b")
	<-entered
	store(d, "other", nil) // something to write
	d.Close()
	s, err := decodeFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, ld := range s.dirs {
		if ld.path == "a/b" {
			return
		}
	}
	t.Errorf("a/b not in the snapshot written at Close: %d listings", len(s.dirs))
}
