package fusefs

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"sshfsm/internal/cache"
	"sshfsm/internal/remote"
)

// fakeTree is a namespace of directories, files and links held in memory:
// path → "" for a directory, "file" for a file, "->target" for a link.
type fakeTree struct {
	remote.Remote // nil: only Lstat and Readlink are asked
	ents          map[string]string
}

func (t fakeTree) Lstat(_ context.Context, p string) (remote.Attr, error) {
	e, ok := t.ents[p]
	switch {
	case p == "" || (ok && e == ""):
		return remote.Attr{Mode: syscall.S_IFDIR | 0o755}, nil
	case !ok:
		return remote.Attr{}, fs.ErrNotExist
	case strings.HasPrefix(e, "->"):
		return remote.Attr{Mode: syscall.S_IFLNK | 0o777}, nil
	}
	return remote.Attr{Mode: syscall.S_IFREG | 0o644}, nil
}

func (t fakeTree) Readlink(_ context.Context, p string) (string, error) {
	if target, ok := strings.CutPrefix(t.ents[p], "->"); ok {
		return target, nil
	}
	return "", syscall.EINVAL
}

// hostileTree holds the links a server can make to climb out of the mount
// with a target that looks as if it stayed inside.
var hostileTree = map[string]string{
	"a": "", "a/b": "", "a/b/c": "", "a/b/c/f": "file", "f": "file",
	"dot":       "->.",
	"a/up":      "->..",
	"a/b/dot":   "->.",
	"a/b/loop":  "->loop",
	"a/b/abs":   "->/etc",
	"a/b/deep":  "->c/../../b/dot/dot",
	"a/b/out":   "->../../..",
	"a/b/nul":   "->c\x00",
	"a/b/cf":    "->c/f",
	"a/b/top":   "->../..",
	"a/b/bdot":  "->../b/./dot",
	"a/b/empty": "->",
}

func fakeFilesys(ents map[string]string) *filesys {
	return &filesys{ns: fakeTree{ents: ents}, dirs: cache.New(0, nil), opts: Options{ContainSymlinks: true}}
}

func TestPlainTarget(t *testing.T) {
	cases := []struct {
		depth  int
		target string
		want   bool
	}{
		{0, "x", true},
		{0, "x/y", true},
		{0, "..", false},
		{0, "../x", false},
		{1, "../x", true},
		{1, "../../x", false},
		{2, "../../x/y", true},
		{3, "a/../x", false},
		{3, "dot/../x", false},
		{3, "./x", false},
		{0, ".", true},
		{3, "x/.", false},
		{3, "x//y", false},
		{3, "x/", false},
		{3, "/x", false},
		{3, "//", false},
		{3, "", false},
		{3, "x\x00y", false},
		{3, strings.Repeat("x", 256), false},
		{3, strings.Repeat("x/", 2048) + "x", false},
	}
	for _, c := range cases {
		if got := plainTarget(c.depth, c.target); got != c.want {
			t.Errorf("plainTarget(%d, %q) = %v, want %v", c.depth, c.target, got, c.want)
		}
	}
}

// TestContainTarget: the target shown for a link the server made, or why
// none is.
func TestContainTarget(t *testing.T) {
	f := fakeFilesys(hostileTree)
	cases := []struct {
		link, target string
		want         string // shown
		err          error
	}{
		{"esc", "dot/../OUTSIDE", "", errOutside},
		{"esc", "dot/dot/dot/../../../etc/hostname", "", errOutside},
		{"a/b/l", "dot/dot/dot/../../../etc/hostname", "", errOutside},
		{"a/b/l", "dot/../x", "../x", nil},
		{"a/b/l", "dot/dot/../../x", "../../x", nil},
		{"a/b/l", "../../x", "../../x", nil}, // plain: as stored
		{"a/b/l", "../../../x", "", errOutside},
		{"a/l", "up/../x", "", errOutside},
		{"a/b/l", "../up/x", "../up/x", nil},    // plain; a/up is checked where the kernel meets it
		{"a/b/l", "../up/../x", "", errOutside}, // a/up leads to the root
		{"a/b/l", "c/../f", "f", nil},
		{"a/b/l", "c/f/..", "", syscall.ENOTDIR},
		{"a/b/l", "cf/..", "", syscall.ENOTDIR},
		{"a/b/l", "missing/../x", "", fs.ErrNotExist},
		{"a/b/l", "loop/../x", "", syscall.ELOOP},
		{"a/b/l", "abs/../x", "", errOutside},
		{"a/b/l", "nul/../x", "", errOutside},
		{"a/b/l", "empty/../x", "", errOutside},
		{"a/b/l", "deep/../x", "../x", nil},
		{"a/b/l", "out/../x", "", errOutside},
		{"a/b/l", "top/a/../f", "../../f", nil},
		{"a/b/l", "bdot/..", "..", nil},
		{"a/b/l", ".", ".", nil},
		{"a/b/l", "./x", "x", nil},
		{"a/b/l", "x//y/", "x/y", nil},
		{"a/b/l", "..", "..", nil},
		{"l", ".", ".", nil},
		{"l", "..", "", errOutside},
		{"l", "/etc/passwd", "", errOutside},
		{"l", "/", "", errOutside},
		{"l", "//", "", errOutside},
		{"l", "", "", errOutside},
		{"l", "x\x00/../y", "", errOutside},
	}
	for _, c := range cases {
		got, err := f.containTarget(context.Background(), c.link, c.target)
		if got != c.want || !errors.Is(err, c.err) || (c.err == nil && err != nil) {
			t.Errorf("%s -> %q: shown %q, %v; want %q, %v", c.link, c.target, got, err, c.want, c.err)
		}
		if err == nil && !plainTarget(strings.Count(c.link, "/"), got) {
			t.Errorf("%s -> %q: shown %q is not plain", c.link, c.target, got)
		}
	}
}

// FuzzSymlinkResolution checks, for any target of a link in hostileTree,
// that the target shown is plain and that the kernel, following it through
// the mount (each link it meets shown as Readlink would), never climbs
// above the root; and that where the server's own targets lead somewhere
// inside, the shown one leads to the same place.
func FuzzSymlinkResolution(f *testing.F) {
	f.Add(uint8(0), "dot/../OUTSIDE")
	f.Add(uint8(2), "deep/../x")
	f.Fuzz(func(t *testing.T, at uint8, target string) {
		dirs := []string{"", "a", "a/b", "a/b/c"}
		dir := dirs[int(at)%len(dirs)]
		fsys := fakeFilesys(hostileTree)
		shown, err := fsys.containTarget(context.Background(), join(dir, "l"), target)
		if err != nil {
			return
		}
		if !plainTarget(len(components(dir)), shown) {
			t.Fatalf("%q from %q: shown %q is not plain", target, dir, shown)
		}
		got, escaped, err := modelWalk(fsys, components(dir), shown, true, new(int))
		if escaped {
			t.Fatalf("%q from %q: shown %q climbs out of the mount", target, dir, shown)
		}
		want, rawEscaped, rawErr := modelWalk(fsys, components(dir), target, false, new(int))
		if err == nil && rawErr == nil && !rawEscaped && strings.Join(got, "/") != strings.Join(want, "/") {
			t.Fatalf("%q from %q: shown %q leads to %q, the target to %q", target, dir, shown, got, want)
		}
	})
}

// modelWalk follows target from the directory cur of hostileTree as the
// kernel does: names are looked up one by one, links followed (their
// targets as Readlink shows them when checked, as stored otherwise) and
// ".." is the parent of where the walk is. escaped reports a ".." above
// the root or an absolute target.
func modelWalk(f *filesys, cur []string, target string, checked bool, hops *int) (_ []string, escaped bool, err error) {
	if strings.HasPrefix(target, "/") {
		return nil, true, nil
	}
	for _, c := range strings.Split(target, "/") {
		if e := hostileTree[strings.Join(cur, "/")]; len(cur) > 0 && e != "" {
			return nil, false, syscall.ENOTDIR
		}
		switch c {
		case "", ".":
			continue
		case "..":
			if len(cur) == 0 {
				return nil, true, nil
			}
			cur = cur[:len(cur)-1]
			continue
		}
		p := join(strings.Join(cur, "/"), c)
		e, ok := hostileTree[p]
		if !ok {
			return nil, false, syscall.ENOENT
		}
		raw, isLink := strings.CutPrefix(e, "->")
		if !isLink {
			cur = append(cur[:len(cur):len(cur)], c)
			continue
		}
		if *hops++; *hops > maxHops {
			return nil, false, syscall.ELOOP
		}
		next := raw
		if checked {
			if next, err = f.containTarget(context.Background(), p, raw); err != nil {
				return nil, false, err
			}
		}
		if cur, escaped, err = modelWalk(f, cur, next, checked, hops); escaped || err != nil {
			return nil, escaped, err
		}
	}
	return cur, false, nil
}

// TestLinkMovedOrLinkedIsCheckedAgain: the kernel keeps a link's target
// with its inode; a link checked one directory deep, then moved or given
// a second name at the root through the mount, must not be followed from
// there with the target checked for its old place.
func TestLinkMovedOrLinkedIsCheckedAgain(t *testing.T) {
	tm := mountWith(t, defaultOpts(), nil)
	if err := os.MkdirAll(filepath.Join(tm.dir, "a"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, l := range []string{"a/moved", "a/linked"} {
		if err := os.Symlink("../x", filepath.Join(tm.dir, l)); err != nil {
			t.Fatal(err)
		}
	}
	for _, l := range []string{"a/moved", "a/linked"} {
		if got, err := os.Readlink(tm.path(l)); got != "../x" || err != nil {
			t.Fatalf("readlink %s: %q, %v", l, got, err)
		}
	}
	if err := os.Rename(tm.path("a/moved"), tm.path("moved")); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(tm.path("a/linked"), tm.path("linked")); err != nil {
		t.Fatal(err)
	}
	for _, l := range []string{"moved", "linked"} {
		if got, err := os.Readlink(tm.path(l)); !isErrno(err, syscall.EACCES) {
			t.Errorf("readlink %s at the root: %q, %v; want EACCES", l, got, err)
		}
	}
}

// outsideFile makes a file next to the mount, in a directory of the
// test's own, and returns its path and its path from the mountpoint's
// parent (for targets that climb out of the mount).
func outsideFile(t *testing.T, tm *testMount) (abs, fromParent string) {
	t.Helper()
	dir := t.TempDir()
	if filepath.Dir(dir) != filepath.Dir(tm.mnt) {
		t.Fatalf("%s and %s have different parents", dir, tm.mnt)
	}
	abs = filepath.Join(dir, "secret")
	mustWrite(t, abs, []byte("client file\n"))
	return abs, filepath.Base(dir) + "/secret"
}

// assertNotReached fails when reading or appending through the mount's
// link reached the client's file abs.
func assertNotReached(t *testing.T, tm *testMount, link, abs string) {
	t.Helper()
	if b, err := os.ReadFile(tm.path(link)); err == nil || strings.Contains(string(b), "client file") {
		t.Errorf("read %s: %q, %v; want an error", link, b, err)
	}
	if f, err := os.OpenFile(tm.path(link), os.O_WRONLY|os.O_APPEND, 0); err == nil {
		_, _ = f.WriteString("appended through the mount\n")
		f.Close()
	}
	if b, err := os.ReadFile(abs); err != nil || string(b) != "client file\n" {
		t.Errorf("client file %s now holds %q, %v", abs, b, err)
	}
}

// TestLinksInMovedDirectoryAreCheckedAgain: the kernel keeps each link's
// target with its inode; links inside a directory moved higher through
// the mount must not be followed from there with targets checked for the
// directory's old depth.
func TestLinksInMovedDirectoryAreCheckedAgain(t *testing.T) {
	tm := mountWith(t, defaultOpts(), nil)
	abs, rel := outsideFile(t, tm)
	if err := os.MkdirAll(filepath.Join(tm.dir, "a/b/d/e"), 0o755); err != nil {
		t.Fatal(err)
	}
	// Plain at their depths: they climb to the mount root, no further.
	// All are made on the server before the mount looks at any: a listing
	// the mount holds would not show a name the server gained later.
	links := map[string]string{"a/b/d/l": "../../../" + rel, "a/b/d/e/l": "../../../../" + rel}
	for l, target := range links {
		if err := os.Symlink(target, filepath.Join(tm.dir, l)); err != nil {
			t.Fatal(err)
		}
	}
	for l, target := range links {
		if got, err := os.Readlink(tm.path(l)); got != target || err != nil {
			t.Fatalf("readlink %s: %q, %v", l, got, err)
		}
	}
	if err := os.Rename(tm.path("a/b/d"), tm.path("a/d")); err != nil {
		t.Fatal(err)
	}
	for _, l := range []string{"a/d/l", "a/d/e/l"} {
		if got, err := os.Readlink(tm.path(l)); !isErrno(err, syscall.EACCES) {
			t.Errorf("readlink %s after the move: %q, %v; want EACCES", l, got, err)
		}
		assertNotReached(t, tm, l, abs)
	}
}

// TestHardLinkedNamesMadeLinksOrDirsKeepApart: two names of a file linked
// through the mount share an inode number; when the server makes each
// name a symlink, or a directory holding one, the two must not share one
// node either, or the kernel would follow, from one place, a target
// checked for the other's directory.
func TestHardLinkedNamesMadeLinksOrDirsKeepApart(t *testing.T) {
	for _, asDir := range []bool{false, true} {
		t.Run(map[bool]string{false: "links", true: "dirs"}[asDir], func(t *testing.T) {
			o := defaultOpts()
			o.EntryTimeout, o.AttrTimeout, o.DirCacheTimeout = 0, 0, 0
			tm := mountWith(t, o, nil)
			abs, rel := outsideFile(t, tm)
			if err := os.MkdirAll(filepath.Join(tm.dir, "a"), 0o755); err != nil {
				t.Fatal(err)
			}
			mustWrite(t, filepath.Join(tm.dir, "a/f"), []byte("x"))
			if err := os.Link(tm.path("a/f"), tm.path("g")); err != nil {
				t.Fatal(err)
			}
			// Plain one level deeper than the root: out of the mount
			// when followed from there.
			deeper, shallower, target := "a/f", "g", "../"+rel
			if asDir {
				deeper, shallower, target = "a/f/l", "g/l", "../../"+rel
			}
			for _, name := range []string{"a/f", "g"} {
				l := filepath.Join(tm.dir, name)
				if err := os.Remove(l); err != nil {
					t.Fatal(err)
				}
				if asDir {
					if err := os.Mkdir(l, 0o755); err != nil {
						t.Fatal(err)
					}
					l = filepath.Join(l, "l")
				}
				if err := os.Symlink(target, l); err != nil {
					t.Fatal(err)
				}
			}
			// The shallower name is looked up first, the deeper one
			// last: a shared node's path would be the deeper one.
			for _, l := range []string{shallower, deeper} {
				if _, err := os.Lstat(tm.path(l)); err != nil {
					t.Fatal(err)
				}
			}
			if got, err := os.Readlink(tm.path(deeper)); got != target || err != nil {
				t.Fatalf("readlink %s: %q, %v", deeper, got, err)
			}
			if got, err := os.Readlink(tm.path(shallower)); !isErrno(err, syscall.EACCES) {
				t.Errorf("readlink %s: %q, %v; want EACCES", shallower, got, err)
			}
			assertNotReached(t, tm, shallower, abs)
		})
	}
}
