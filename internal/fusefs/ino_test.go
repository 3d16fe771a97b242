package fusefs

import (
	"hash/fnv"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"sshfsm/internal/remote"
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

// The server's inode numbers are shown where they keep the mount's
// numbers unique: a number another file holds, whatever the server
// claims, gets the path a number of its own; names of one hard-linked
// file share theirs; a path numbered before keeps its number.
func TestServerInosStayUnique(t *testing.T) {
	it := newInoTable(func(p string) uint64 {
		if p == "hash-is-7000" {
			return 7000
		}
		return hashIno(p)
	})
	reg := func(dev, ino, nlink uint64) remote.Attr {
		return remote.Attr{Mode: syscall.S_IFREG | 0o644, Dev: dev, Ino: ino, Nlink: nlink}
	}
	dir := remote.Attr{Mode: syscall.S_IFDIR | 0o755, Dev: 1, Ino: 5000, Nlink: 2}
	if v := it.serverIno("a", reg(1, 1000, 1)); v != 1000 || it.serverIno("a", reg(1, 9, 1)) != 1000 || it.get("a") != 1000 {
		t.Fatalf("a got %d, then %d: want the server's 1000 both times", v, it.serverIno("a", reg(1, 9, 1)))
	}
	hashed := it.get("hashed")
	if v := it.serverIno("hashed", reg(1, 1001, 1)); v != hashed {
		t.Errorf("a path numbered by its hash got %d, want it to keep %d", v, hashed)
	}
	distinct := map[string]uint64{"a": 1000, "hashed": hashed}
	for _, c := range []struct {
		p string
		a remote.Attr
	}{
		{"same number, one link", reg(1, 1000, 1)},
		{"same number, other device", reg(2, 1000, 2)},
		{"a directory", dir},
		{"the same number as a directory", reg(1, 5000, 2)},
		{"another path's hash", reg(1, hashed, 1)},
		{"zero", reg(1, 0, 1)},
		{"the root's", reg(1, rootIno, 1)},
		{"go-fuse's", reg(1, ^uint64(0), 1)},
		{"hash-is-7000", reg(1, 8000, 1)},
	} {
		distinct[c.p] = it.serverIno(c.p, c.a)
	}
	// A path whose hash is a server's number another path holds.
	it.serverIno("server-7000", reg(1, 7000, 1))
	distinct["server-7000"] = 7000
	distinct["hash-is-7000 again"] = it.get("hash-is-7000")
	if distinct["hash-is-7000"] != 8000 || distinct["a directory"] != 5000 {
		t.Errorf("free server numbers not taken: %v", distinct)
	}
	seen := map[uint64]string{}
	for p, v := range distinct {
		if p == "hash-is-7000 again" {
			continue
		}
		if q, dup := seen[v]; dup || v <= rootIno || v == ^uint64(0) {
			t.Errorf("%q and %q share %d", p, q, v)
		}
		seen[v] = p
	}

	l1, l2 := it.serverIno("x/one", reg(1, 2000, 2)), it.serverIno("y/two", reg(1, 2000, 2))
	if l1 != 2000 || l2 != 2000 || !it.hardLinked("x/one", 0) || !it.hardLinked("y/two", 0) {
		t.Errorf("hard links got %d and %d (linked %v): want one number asking the server",
			l1, l2, it.hardLinked("y/two", 0))
	}

	// A number freed and taken by a hash is no longer the server's file.
	v := it.serverIno("gone", reg(1, 3000, 2))
	it.detach("gone", v)
	it.release(v)
	it.hash = func(string) uint64 { return 3000 }
	if got := it.get("by-hash"); got != 3000 {
		t.Fatalf("by-hash got %d", got)
	}
	if got := it.serverIno("reused", reg(1, 3000, 2)); got == 3000 {
		t.Errorf("a server's stale claim made two files share %d", got)
	}
}
