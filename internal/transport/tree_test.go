package transport

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"

	"sshfsm/internal/remote"
	"sshfsm/internal/testenv"
)

// collect gathers what ListTree reports.
type collect struct {
	mu    sync.Mutex
	dirs  map[string][]remote.DirEntry
	order []string
}

func (c *collect) fn(dir string, ents []remote.DirEntry) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.dirs == nil {
		c.dirs = map[string][]remote.DirEntry{}
	}
	if _, dup := c.dirs[dir]; dup {
		panic("reported twice: " + dir)
	}
	c.dirs[dir] = ents
	c.order = append(c.order, dir)
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// hostileTree builds, below root, every kind of entry with names a shell
// or a line-based parser would trip over, plus a chain deeper than the
// listing goes. It returns the directories at most depth levels below
// root, as tree paths relative to top.
func hostileTree(t *testing.T, top, root string, depth int) []string {
	t.Helper()
	must(t, os.MkdirAll(root, 0o755))
	for i, n := range hostileNames {
		must(t, os.WriteFile(filepath.Join(root, n), []byte(strings.Repeat("x", i)), 0o640))
	}
	sub := filepath.Join(root, "dir with 'quotes'\n")
	must(t, os.MkdirAll(filepath.Join(sub, "empty"), 0o700))
	must(t, os.WriteFile(filepath.Join(sub, "setuid"), nil, 0o644))
	must(t, os.Chown(filepath.Join(sub, "setuid"), 1234, 5678))
	must(t, os.Chmod(filepath.Join(sub, "setuid"), 0o755|os.ModeSetuid))
	must(t, os.Mkdir(filepath.Join(sub, "sticky"), 0o755))
	must(t, os.Chmod(filepath.Join(sub, "sticky"), 0o777|os.ModeSticky|os.ModeSetgid))
	must(t, os.Symlink("nowhere\nat all", filepath.Join(sub, "dangling")))
	must(t, os.Symlink("..", filepath.Join(sub, "up")))
	must(t, syscall.Mkfifo(filepath.Join(sub, "fifo"), 0o600))
	must(t, syscall.Mknod(filepath.Join(sub, "null"), syscall.S_IFCHR|0o666, int(mkdev(1, 3))))
	// Socket paths are short; make it elsewhere and move it in.
	short := filepath.Join(t.TempDir(), "s")
	l, err := net.Listen("unix", short)
	must(t, err)
	l.(*net.UnixListener).SetUnlinkOnClose(false)
	l.Close()
	must(t, os.Rename(short, filepath.Join(sub, "sock")))
	old := time.Date(1999, 12, 31, 23, 59, 59, 999_999_999, time.UTC)
	must(t, os.Chtimes(filepath.Join(sub, "fifo"), old, old))
	deep := root
	for i := range depth + 2 {
		deep = filepath.Join(deep, fmt.Sprintf("level%d \xff", i+1))
		must(t, os.Mkdir(deep, 0o755))
		must(t, os.WriteFile(filepath.Join(deep, "f"), []byte("f"), 0o644))
	}
	futureAtimes(t, root)
	var dirs []string
	must(t, filepath.Walk(root, func(p string, fi os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		if fi.IsDir() && (rel == "." || strings.Count(rel, "/")+1 <= depth) {
			dirs = append(dirs, treePath(top, p))
		}
		return nil
	}))
	sort.Strings(dirs)
	return dirs
}

// futureAtimes sets the atime of everything below root an hour ahead.
// Listing a directory updates its atime (relatime: when it is not newer
// than its mtime), which would make two listings differ; an atime ahead of
// mtime and ctime is left alone.
func futureAtimes(t *testing.T, root string) {
	t.Helper()
	later := time.Now().Add(time.Hour)
	must(t, filepath.Walk(root, func(p string, fi os.FileInfo, err error) error {
		switch {
		case fi != nil && fi.Name() == "denied":
			return filepath.SkipDir // mountDenied's
		case err != nil || fi.Mode()&os.ModeSymlink != 0:
			return err
		}
		return os.Chtimes(p, later, time.Time{})
	}))
}

func mkdev(major, minor uint32) uint64 {
	return uint64(major)<<8 | uint64(minor)
}

// treePath is the tree path of local path p below top.
func treePath(top, p string) string {
	rel, _ := filepath.Rel(top, p)
	if rel == "." {
		return ""
	}
	return rel
}

func byName(ents []remote.DirEntry) []remote.DirEntry {
	out := append([]remote.DirEntry(nil), ents...)
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

func TestListTreeMatchesReadDir(t *testing.T) {
	th := testenv.StartHost(t, "127.0.0.2")
	const depth = 3
	rootName := "tree 'root' $x\n"
	want := hostileTree(t, th.Dir, filepath.Join(th.Dir, rootName), depth)
	h := dialSSH(t, th, nil)
	r := h.Remote().(remote.TreeLister)
	before := h.Stats().Requests
	var c collect
	if err := r.ListTree(bg, rootName, depth, c.fn); err != nil {
		t.Fatal(err)
	}
	after := h.Stats().Requests
	if after["exec"]-before["exec"] != 1 || after["OPENDIR"] != before["OPENDIR"] {
		t.Errorf("requests before %v after %v: want one exec and no OPENDIR", before, after)
	}
	var got []string
	for d := range c.dirs {
		got = append(got, d)
	}
	sort.Strings(got)
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("reported directories\n got %q\nwant %q", got, want)
	}
	if c.order[len(c.order)-1] != rootName {
		t.Errorf("the listed directory was reported before its subdirectories: %q", c.order)
	}
	for _, d := range want {
		sftp, err := h.Remote().ReadDir(bg, d)
		if err != nil {
			t.Fatal(err)
		}
		compareListings(t, d, byName(c.dirs[d]), byName(sftp))
	}
}

func compareListings(t *testing.T, dir string, got, want []remote.DirEntry) {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("%q: %d entries, READDIR has %d", dir, len(got), len(want))
	}
	for i := range min(len(got), len(want)) {
		g, w := got[i], want[i]
		if g.Name != w.Name || g.Attr.Mode != w.Attr.Mode || g.Attr.Size != w.Attr.Size ||
			g.Attr.UID != w.Attr.UID || g.Attr.GID != w.Attr.GID ||
			!g.Attr.Atime.Equal(w.Attr.Atime) || !g.Attr.Mtime.Equal(w.Attr.Mtime) {
			t.Errorf("%q:\n got %q %+v\nwant %q %+v", dir, g.Name, g.Attr, w.Name, w.Attr)
		}
	}
}

// deniedDir is a FUSE directory that refuses to be opened, as a directory
// the remote user may not read (the tests run as root, whom permission
// bits do not stop).
type deniedDir struct{ fs.Inode }

var _ = (fs.NodeOpendirer)((*deniedDir)(nil))
var _ = (fs.NodeGetattrer)((*deniedDir)(nil))

func (*deniedDir) Opendir(ctx context.Context) syscall.Errno { return syscall.EACCES }

func (*deniedDir) Getattr(ctx context.Context, fh fs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	out.Mode = syscall.S_IFDIR | 0o755
	return 0
}

// mountDenied mounts an unreadable directory at dir.
func mountDenied(t *testing.T, dir string) {
	t.Helper()
	testenv.RequireFUSE(t)
	must(t, os.MkdirAll(dir, 0o755))
	srv, err := fs.Mount(dir, &deniedDir{}, &fs.Options{MountOptions: fuse.MountOptions{
		DirectMount: true, FsName: "denied", Name: "sshfsm-test"}})
	must(t, err)
	t.Cleanup(func() {
		if err := srv.Unmount(); err != nil {
			t.Error(err)
		}
	})
}

func TestListTreeSkipsUnreadableDirectories(t *testing.T) {
	th := testenv.StartHost(t, "127.0.0.2")
	for _, d := range []string{"a/x", "a/y", "b/z", "c"} {
		must(t, os.MkdirAll(filepath.Join(th.Dir, d), 0o755))
		must(t, os.WriteFile(filepath.Join(th.Dir, d, "file"), nil, 0o644))
	}
	mountDenied(t, filepath.Join(th.Dir, "a/denied"))
	mountDenied(t, filepath.Join(th.Dir, "b/z/denied"))
	futureAtimes(t, th.Dir)
	h := dialSSH(t, th, nil)
	if _, err := h.Remote().ReadDir(bg, "a/denied"); !errors.Is(err, os.ErrPermission) {
		t.Fatalf("READDIR of the denied directory: %v", err)
	}
	var c collect
	if err := h.Remote().(remote.TreeLister).ListTree(bg, "", 5, c.fn); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{"", "a", "a/x", "a/y", "b", "b/z", "c"} {
		ents, ok := c.dirs[d]
		if !ok {
			t.Errorf("%q not reported", d)
			continue
		}
		sftp, err := h.Remote().ReadDir(bg, d)
		must(t, err)
		compareListings(t, d, byName(ents), byName(sftp))
	}
	for _, d := range []string{"a/denied", "b/z/denied"} {
		if ents, ok := c.dirs[d]; ok {
			t.Errorf("unreadable %q reported as %v", d, ents)
		}
	}
	// The listed directory itself unreadable: nothing is reported.
	c = collect{}
	if err := h.Remote().(remote.TreeLister).ListTree(bg, "a/denied", 2, c.fn); err != nil {
		t.Fatal(err)
	}
	if len(c.dirs) != 0 {
		t.Errorf("reported %v", c.order)
	}
}

func TestListTreeUnsupported(t *testing.T) {
	th := testenv.StartHostWith(t, testenv.Options{Addr: "127.0.0.3", SFTPOnly: true})
	h := dialSSH(t, th, nil)
	must(t, os.Mkdir(filepath.Join(th.Dir, "d"), 0o755))
	r := h.Remote().(remote.TreeLister)
	for range 2 {
		err := r.ListTree(bg, "", 2, func(string, []remote.DirEntry) { t.Error("reported a listing") })
		if !errors.Is(err, remote.ErrTreeUnsupported) {
			t.Fatalf("SFTP-only host: %v", err)
		}
	}
	if n := h.Stats().Requests["exec"]; n != 1 {
		t.Errorf("%d execs: the unsupported host was asked again", n)
	}
	if ents, err := h.Remote().ReadDir(bg, ""); err != nil || len(ents) != 1 {
		t.Errorf("SFTP still works: %v %v", ents, err)
	}

	hd, _, _ := dialTest(t, 1, nil)
	if err := hd.Remote().(remote.TreeLister).ListTree(bg, "", 2, nil); !errors.Is(err, remote.ErrTreeUnsupported) {
		t.Errorf("over a Dialer: %v", err)
	}
}

// A server whose find is not GNU find (no -printf).
func TestListTreeWithoutGNUFind(t *testing.T) {
	th := testenv.StartHost(t, "127.0.0.2")
	bin := t.TempDir()
	fake := "#!/bin/sh\necho 'find: unknown primary or operator' >&2\nexit 1\n"
	must(t, os.WriteFile(filepath.Join(bin, "find"), []byte(fake), 0o755))
	h := dialSSH(t, th, nil)
	// The listing command, run with the fake find first in PATH.
	p := newTreeParser("", 1, 10, func(string, []remote.DirEntry) { t.Error("reported a listing") })
	err := h.Exec(bg, "PATH="+shellQuote(bin)+":$PATH; export PATH; "+treeCommand(h.Root(), 1, true), p.read)
	var ee *ExecError
	if !errors.As(err, &ee) || ee.Status != treeNoFind || !p.marked {
		t.Fatalf("got %v (marker %v)", err, p.marked)
	}
}

func TestListTreeCancel(t *testing.T) {
	th := testenv.StartHost(t, "127.0.0.2")
	for i := range 200 {
		d := filepath.Join(th.Dir, fmt.Sprintf("d%03d", i))
		must(t, os.Mkdir(d, 0o755))
		for j := range 100 {
			must(t, os.WriteFile(filepath.Join(d, fmt.Sprintf("a-rather-long-file-name-%05d", j)), nil, 0o644))
		}
	}
	h := dialSSH(t, th, func(o *Options) { o.Conns = 1 })
	before := sshChildren()
	ctx, cancel := context.WithCancel(bg)
	var once sync.Once
	var cancelled time.Time
	err := h.Remote().(remote.TreeLister).ListTree(ctx, "", 3, func(string, []remote.DirEntry) {
		once.Do(func() { cancelled = time.Now(); cancel() })
	})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("got %v %v after the cancel", err, time.Since(cancelled))
	}
	if n := sshChildren(); n != before {
		t.Errorf("%d ssh processes, %d before", n, before)
	}
	deadline := time.Now().Add(3 * time.Second)
	for len(remoteProcs("-printf", th.Dir)) > 0 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if left := remoteProcs("-printf", th.Dir); len(left) > 0 {
		t.Errorf("find still running: %q", left)
	}
	var c collect
	if err := h.Remote().(remote.TreeLister).ListTree(bg, "", 3, c.fn); err != nil || len(c.dirs) != 201 {
		t.Errorf("the next listing: %d directories, %v", len(c.dirs), err)
	}
}

// Unit tests of the parser on hand-made streams.
func TestTreeParser(t *testing.T) {
	rec := func(y, p string) string { return "\x01" + y + " 755 0 1 2 10.5 20.25 2049 77 1 30.5 " + p + "\x00" }
	cases := []struct {
		name   string
		stream string
		depth  int
		max    int
		want   string // reported directories in order, "dir:n" with n entries
		err    error
	}{
		{"empty", treeMarker + "\n", 2, 10, ":0", nil},
		{"pre-order", treeMarker + "\n" + rec("d", "a") + rec("f", "a/1") + rec("d", "a/b") + rec("f", "a/b/2") +
			rec("f", "c"), 2, 10, "a/b:1 a:2 :2", nil},
		{"noise before the marker", "motd\r\nmore\n" + treeMarker + "\n" + rec("f", "x"), 1, 10, ":1", nil},
		{"no marker", "This service allows sftp connections only.\n", 1, 10, "", nil},
		{"below depth", treeMarker + "\n" + rec("d", "a") + rec("d", "a/b") + rec("f", "d"), 1, 10, "a:1 :2", nil},
		{"unreadable", treeMarker + "\n" + rec("d", "a") + "find: './a': Permission denied\n" + rec("d", "b") +
			rec("f", "b/1"), 2, 10, "b:1 :2", nil},
		{"unreadable root", treeMarker + "\n" + "find: '.': Permission denied\n", 2, 10, "", nil},
		{"vanished entry", treeMarker + "\n" + rec("d", "a") + rec("f", "a/1") + "find: './a/2': No such file\n" +
			rec("f", "a/3"), 2, 10, "a:2 :1", nil},
		{"unknown type", treeMarker + "\n" + rec("d", "a") + rec("D", "a/door") + rec("f", "b"), 2, 10, ":2", nil},
		{"names", treeMarker + "\n" + rec("d", "sp ace\nnl") + rec("f", "sp ace\nnl/\x01 x\\"), 2, 10,
			"sp ace\nnl:1 :1", nil},
		{"truncated", treeMarker + "\n" + rec("d", "a") + rec("f", "a/1") + rec("f", "b") + rec("f", "c"), 2, 2,
			"a:1", remote.ErrTreeTruncated},
		{"cut record", treeMarker + "\n" + rec("d", "a") + "\x01f 644 0", 2, 10, "", io.ErrUnexpectedEOF},
		{"out of order", treeMarker + "\n" + rec("f", "a/b"), 2, 10, "", errTreeOrder},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var got []string
			p := newTreeParser("", c.depth, c.max, func(d string, ents []remote.DirEntry) {
				got = append(got, fmt.Sprintf("%s:%d", d, len(ents)))
			})
			err := p.read(strings.NewReader(c.stream))
			if (c.err == nil) != (err == nil) || (c.err != nil && !errors.Is(err, c.err)) {
				t.Fatalf("error %v, want %v", err, c.err)
			}
			if err == nil {
				p.finish()
			}
			if strings.Join(got, " ") != c.want {
				t.Errorf("reported %q, want %q", strings.Join(got, " "), c.want)
			}
		})
	}
}

// A record without its NUL is read no further than the longest record the
// listing can hold: a server sending endless bytes cannot make the parser
// hold them all.
func TestTreeRecordBounded(t *testing.T) {
	const endless = 16 << 20
	long := "\x01f 644 0 0 0 1 1 1 1 1 1 " + strings.Repeat("x/", 40_000) + "x\x00"
	for _, c := range []struct {
		name   string
		stream io.Reader
	}{
		{"no NUL", io.MultiReader(strings.NewReader(treeMarker+"\n\x01"), &zeroFree{n: endless})},
		{"long path", strings.NewReader(treeMarker + "\n" + long)},
	} {
		cr := &countingSource{r: c.stream}
		p := newTreeParser("", 2, 10, func(string, []remote.DirEntry) {})
		err := p.read(cr)
		if !errors.Is(err, errTreeRecord) || cr.n > 1<<20 {
			t.Errorf("%s: %v after reading %d bytes", c.name, err, cr.n)
		}
	}
}

// zeroFree yields n bytes, none of them NUL.
type zeroFree struct{ n int }

func (z *zeroFree) Read(p []byte) (int, error) {
	if z.n == 0 {
		return 0, io.EOF
	}
	k := min(len(p), z.n)
	for i := range p[:k] {
		p[i] = 'a'
	}
	z.n -= k
	return k, nil
}

// countingSource counts the bytes read from r.
type countingSource struct {
	r io.Reader
	n int
}

func (c *countingSource) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += n
	return n, err
}

func TestTreeRecordAttributes(t *testing.T) {
	rel, typ, a, err := parseTreeRecord([]byte("l 777 7 1000 100 -2.5000000000 4294967296.0000000001 2049 5 1 3.0 d/name with spaces "))
	if err != nil || typ != 'l' || rel != "d/name with spaces " {
		t.Fatalf("%q %c %v", rel, typ, err)
	}
	want := remote.Attr{Mode: syscall.S_IFLNK | 0o777, Size: 7, UID: 1000, GID: 100,
		Atime: time.Unix(1<<32-2, 0), Mtime: time.Unix(0, 0)}
	if a.Mode != want.Mode || a.Size != want.Size || a.UID != want.UID || a.GID != want.GID ||
		!a.Atime.Equal(want.Atime) || !a.Mtime.Equal(want.Mtime) {
		t.Errorf("got %+v, want %+v", a, want)
	}
	if _, _, a, _ := parseTreeRecord([]byte("d 7755 4096 0 0 1 1 1 1 1 1 x")); a.Mode != syscall.S_IFDIR|0o7755 {
		t.Errorf("mode %o", a.Mode)
	}
	for _, bad := range []string{"f 644 0 0 0 1 1 1 1 1 1", "f 9 0 0 0 1 1 1 1 1 1 x", "f 644 -1 0 0 1 1 1 1 1 1 x",
		"ff 644 0 0 0 1 1 1 1 1 1 x", "f 644 0 0 0 1.0 x.1 1 1 1 1 x", "f 644 0 4294967296 0 1 1 1 1 1 1 x",
		"f 77777777777 0 0 0 1 1 1 1 1 1 x", "f 644 18446744073709551616 0 0 1 1 1 1 1 1 x", "f 644 0 0 0 - 1 1 1 1 1 x"} {
		if _, _, _, err := parseTreeRecord([]byte(bad)); !errors.Is(err, errTreeRecord) {
			t.Errorf("%q: %v", bad, err)
		}
	}
}

// A tree listing tells what SFTP cannot: each file's device, inode
// number, link count and change time to the nanosecond, as lstat says
// them on the server.
func TestListTreeTellsIdentity(t *testing.T) {
	th := testenv.StartHost(t, "127.0.0.2")
	root := filepath.Join(th.Dir, "ident")
	must(t, os.MkdirAll(filepath.Join(root, "sub"), 0o755))
	must(t, os.WriteFile(filepath.Join(root, "one"), []byte("1"), 0o644))
	must(t, os.Link(filepath.Join(root, "one"), filepath.Join(root, "sub", "other name")))
	must(t, os.Symlink("one", filepath.Join(root, "link")))
	h := dialSSH(t, th, nil)
	var c collect
	if err := h.Remote().(remote.TreeLister).ListTree(bg, "ident", 1, c.fn); err != nil {
		t.Fatal(err)
	}
	for dir, ents := range c.dirs {
		for _, e := range ents {
			var st syscall.Stat_t
			must(t, syscall.Lstat(filepath.Join(th.Dir, dir, e.Name), &st))
			a := e.Attr
			ct := time.Unix(st.Ctim.Sec, st.Ctim.Nsec)
			if a.Dev != st.Dev || a.Ino != st.Ino || a.Nlink != uint64(st.Nlink) || !a.Ctime.Equal(ct) {
				t.Errorf("%s/%s: dev %d ino %d nlink %d ctime %v, lstat says %d %d %d %v",
					dir, e.Name, a.Dev, a.Ino, a.Nlink, a.Ctime, st.Dev, st.Ino, st.Nlink, ct)
			}
		}
	}
	if got := c.dirs["ident"]; len(got) != 3 {
		t.Fatalf("listed %+v", got)
	}
}

func TestTreeRecordIdentity(t *testing.T) {
	for _, c := range []struct {
		rec   string
		ok    bool
		ino   uint64
		ctime time.Time
	}{
		{"f 644 1 0 0 1.5 2.5 2049 1234 2 1700000000.1234567890 a", true, 1234, time.Unix(1700000000, 123456789)},
		{"f 644 1 0 0 1.5 2.5 2049 1234 2 1700000000 a", true, 1234, time.Unix(1700000000, 0)},
		{"f 644 1 0 0 1.5 2.5 2049 1234 2 -2.5 a", true, 1234, time.Unix(-2, 5e8)},
		{"f 644 1 0 0 1.5 2.5 2049 0 2 7.0 a", true, 0, time.Time{}}, // no inode: no identity
		{"f 644 1 0 0 1.5 2.5 2049 1234 2 7.x a", false, 0, time.Time{}},
		{"f 644 1 0 0 1.5 2.5 2049 -1 2 7.0 a", false, 0, time.Time{}},
		{"f 644 1 0 0 1.5 2.5 2049 18446744073709551616 2 7.0 a", false, 0, time.Time{}},
		{"f 644 1 0 0 1.5 2.5 a", false, 0, time.Time{}}, // the records of before
	} {
		_, _, a, err := parseTreeRecord([]byte(c.rec))
		if (err == nil) != c.ok || a.Ino != c.ino || !a.Ctime.Equal(c.ctime) || (c.ino == 0 && a.HasIdentity()) {
			t.Errorf("%q: %+v, %v", c.rec, a, err)
		}
	}
}
