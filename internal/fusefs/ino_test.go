package fusefs

import (
	"hash/fnv"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// Inode numbers are FNV-1a of the path: every mount, and every version,
// must give a path the number it gave before (git compares them).
func TestHashInoIsFNV1a(t *testing.T) {
	for _, p := range []string{"a", "src/cmd/go", "non-utf8-\xff/\x00x", "sp ace/new\nline", "日本語"} {
		h := fnv.New64a()
		h.Write([]byte(p))
		if got, want := hashIno(p), fixIno(h.Sum64()); got != want {
			t.Errorf("hashIno(%q) = %d, want %d", p, got, want)
		}
	}
}

// Two paths whose hashes collide never share a number, whichever is asked
// first, and each keeps its own.
func TestInoCollisionsGetOtherNumbers(t *testing.T) {
	it := newInoTable(func(string) uint64 { return 42 })
	a, b := it.get("a"), it.get("d/b")
	if a != 42 || b == a || it.get("a") != a || it.get("d/b") != b {
		t.Fatalf("a %d, d/b %d (then %d, %d): want 42 and another", a, b, it.get("a"), it.get("d/b"))
	}
	it.move("a", "c", a)
	if n := it.get("a"); n == a || n == b {
		t.Errorf("new file at a got %d, held by c or d/b", n)
	}
	it.detach("d/b", b)
	if n := it.get("d/b"); n == a || n == b {
		t.Errorf("new file at d/b got %d, held by c or the detached file", n)
	}
	it.link("c", "e", a)
	if it.get("c") != a || it.get("e") != a {
		t.Errorf("hard link: c %d, e %d, want both %d", it.get("c"), it.get("e"), a)
	}
	if n := it.get("f"); n == a || n == b {
		t.Errorf("f got %d, already held", n)
	}
}

// TestCollidingLinksKeepTheirTargets: a server can choose names whose
// hashes collide; the kernel must not take the link at the root for the
// one a level below, whose target it caches and would follow from the
// root to a file next to the mountpoint.
func TestCollidingLinksKeepTheirTargets(t *testing.T) {
	o := defaultOpts()
	o.inoHash = func(p string) uint64 {
		if p == "l" || p == "a/l" {
			return 4242
		}
		return hashIno(p)
	}
	tm := mountWith(t, o, nil)
	outside := filepath.Join(filepath.Dir(tm.mnt), "OUTSIDE")
	mustWrite(t, outside, []byte("client file"))
	mustWrite(t, filepath.Join(tm.dir, "x"), []byte("inside"))
	if err := os.Mkdir(filepath.Join(tm.dir, "a"), 0o755); err != nil {
		t.Fatal(err)
	}
	for l, target := range map[string]string{"l": "x", "a/l": "../OUTSIDE"} {
		if err := os.Symlink(target, filepath.Join(tm.dir, l)); err != nil {
			t.Fatal(err)
		}
	}
	if got, err := os.Readlink(tm.path("a/l")); got != "../OUTSIDE" || err != nil {
		t.Fatalf("readlink a/l: %q, %v", got, err)
	}
	if got, err := os.ReadFile(tm.path("l")); string(got) != "inside" {
		t.Errorf("read l: %q, %v; want x's content", got, err)
	}
	var a, l syscall.Stat_t
	if err := syscall.Lstat(tm.path("a/l"), &a); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Lstat(tm.path("l"), &l); err != nil || l.Ino == a.Ino {
		t.Errorf("l and a/l share inode %d (%v)", l.Ino, err)
	}
}
