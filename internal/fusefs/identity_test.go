package fusefs

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"sshfsm/internal/testenv"
)

func lstatT(t *testing.T, p string) syscall.Stat_t {
	t.Helper()
	var st syscall.Stat_t
	if err := syscall.Lstat(p, &st); err != nil {
		t.Fatal(err)
	}
	return st
}

// A mount of one host shows the server's inode numbers, change times and
// link counts (git compares them with its index), the names of a hard
// link as one file, and keeps them through the mount's own changes: a
// chmod moves ctime forward, and it stays where it moved.
func TestServerInodesShown(t *testing.T) {
	th := testenv.StartHost(t, "127.0.0.2")
	dir := filepath.Join(th.Dir, "d")
	for _, p := range []string{dir, filepath.Join(dir, "sub")} {
		if err := os.Mkdir(p, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, n := range []string{"a", "b", "sub/c"} {
		if err := os.WriteFile(filepath.Join(dir, n), []byte(n), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Link(filepath.Join(dir, "b"), filepath.Join(dir, "sub", "b2")); err != nil {
		t.Fatal(err)
	}
	o := defaultOpts()
	o.ServerInodes = true
	tm, _ := mountSSH(t, th, o)
	for _, n := range []string{"a", "b", "sub/c", "sub/b2"} {
		srv, got := lstatT(t, filepath.Join(dir, n)), lstatT(t, tm.path("d/"+n))
		if got.Ino != srv.Ino || got.Ctim != srv.Ctim || got.Nlink != srv.Nlink {
			t.Errorf("%s: ino %d ctime %v nlink %d; the server says %d %v %d",
				n, got.Ino, got.Ctim, got.Nlink, srv.Ino, srv.Ctim, srv.Nlink)
		}
	}
	if lstatT(t, tm.path("d/b")).Ino != lstatT(t, tm.path("d/sub/b2")).Ino {
		t.Error("the names of a hard link are two files")
	}

	before := lstatT(t, tm.path("d/a"))
	if err := os.Chmod(tm.path("d/a"), 0o600); err != nil {
		t.Fatal(err)
	}
	after := lstatT(t, tm.path("d/a"))
	moved := time.Unix(after.Ctim.Unix()).After(time.Unix(before.Ctim.Unix()))
	if after.Ino != before.Ino || !moved {
		t.Errorf("after chmod: ino %d ctime %v, before %d %v", after.Ino, after.Ctim, before.Ino, before.Ctim)
	}
	if again := lstatT(t, tm.path("d/a")); again.Ctim != after.Ctim || again.Ino != after.Ino {
		t.Errorf("ctime flipped: %v then %v", after.Ctim, again.Ctim)
	}
}

// Without ServerInodes (several hosts) numbers are hashes of the paths and
// ctime is the mtime, whatever the listings tell.
func TestServerInodesOff(t *testing.T) {
	th := testenv.StartHost(t, "127.0.0.2")
	if err := os.WriteFile(filepath.Join(th.Dir, "a"), []byte("a"), 0o644); err != nil {
		t.Fatal(err)
	}
	tm, _ := mountSSH(t, th, walkOpts())
	st := lstatT(t, tm.path("a"))
	if st.Ino != hashIno("a") || st.Ctim != st.Mtim {
		t.Errorf("ino %d ctime %v mtime %v: want the hash %d and the mtime", st.Ino, st.Ctim, st.Mtim, hashIno("a"))
	}
}

// A mount showing server identities lists each directory by a remote
// command, far dearer than READDIR: a single look lists the level ahead
// with one tree listing, not one command per subdirectory.
func TestServerInodesLookAheadInOneCommand(t *testing.T) {
	th := testenv.StartHost(t, "127.0.0.2")
	walkTree(t, th.Dir, 4, 0)
	o := walkOpts()
	o.ServerInodes = true
	tm, h := mountSSH(t, th, o)
	ents, err := os.ReadDir(tm.mnt)
	if err != nil || len(ents) != 5 {
		t.Fatalf("%d entries, %v", len(ents), err)
	}
	testenv.Eventually(t, "the level ahead listed", func() bool {
		return strings.Contains(tm.logs.String(), `msg="bulk listing" dir="" depth=1`)
	})
	if n := h.Stats().Requests["exec"]; n != 2 {
		t.Errorf("%d commands for a look at a directory of 4 subdirectories; want its listing and one for the level ahead", n)
	}
}

// A file the server replaces (another inode at the same path) is another
// file through the mount too, as on a local disk: the name shows the new
// number, while a descriptor opened before keeps the old file.
func TestServerReplacedFileIsAnotherFile(t *testing.T) {
	th := testenv.StartHost(t, "127.0.0.2")
	srv := filepath.Join(th.Dir, "f")
	if err := os.WriteFile(srv, []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	o := defaultOpts()
	o.ServerInodes = true
	o.AttrTimeout, o.EntryTimeout, o.DirCacheTimeout = 0, 0, 50*time.Millisecond
	tm, _ := mountSSH(t, th, o)
	if _, err := os.ReadDir(tm.mnt); err != nil {
		t.Fatal(err)
	}
	before := lstatT(t, tm.path("f"))
	if before.Ino != lstatT(t, srv).Ino {
		t.Fatalf("ino %d, the server's %d", before.Ino, lstatT(t, srv).Ino)
	}
	f, err := os.Open(tm.path("f"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()

	if err := os.WriteFile(srv+".new", []byte("new!"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(srv+".new", srv); err != nil {
		t.Fatal(err)
	}
	now := lstatT(t, srv).Ino
	testenv.Eventually(t, "the replaced file's number shown", func() bool {
		var st syscall.Stat_t
		return syscall.Lstat(tm.path("f"), &st) == nil && st.Ino == now
	})
	if b, err := os.ReadFile(tm.path("f")); err != nil || string(b) != "new!" {
		t.Errorf("the name reads %q, %v", b, err)
	}
	var st syscall.Stat_t
	if err := syscall.Fstat(int(f.Fd()), &st); err != nil || st.Ino != before.Ino {
		t.Errorf("the descriptor opened before: ino %d, %v; want %d", st.Ino, err, before.Ino)
	}
	b := make([]byte, 8)
	if n, err := f.ReadAt(b, 0); string(b[:n]) != "old" {
		t.Errorf("the descriptor opened before reads %q, %v", b[:n], err)
	}
}
