package fusefs

import (
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"sshfsm/internal/remote"
)

// dropPages makes the kernel forget the cached data of the file at p.
func dropPages(t *testing.T, p string) {
	t.Helper()
	f, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := unix.Fadvise(int(f.Fd()), 0, 0, unix.FADV_DONTNEED); err != nil {
		t.Fatal(err)
	}
}

// TestLazyOpen checks that a first open is eager; that a read-only open
// of a file whose cached data the kernel keeps sends no OPEN until a read
// reaches the server, and concurrent such reads share one; and that a
// warm re-read of an unchanged file sends no OPEN at all.
func TestLazyOpen(t *testing.T) {
	hook := &hookRemote{}
	tm := mountWith(t, defaultOpts(), hook.wrap)
	data := bytes.Repeat([]byte("0123456789abcdef"), 1<<18)  // 4 MiB
	writeOld(t, filepath.Join(tm.dir, "f"), data, time.Hour) // not racy: kept
	if _, err := os.Stat(tm.path("f")); err != nil {
		t.Fatal(err)
	}
	opens0 := hook.opens.Load()
	if b, err := os.ReadFile(tm.path("f")); err != nil || !bytes.Equal(b, data) {
		t.Fatalf("first read: %v", err)
	}
	if got := hook.opens.Load() - opens0; got != 1 {
		t.Errorf("first open sent %d OPENs, want 1", got)
	}

	dropPages(t, tm.path("f"))
	opens0 = hook.opens.Load()
	f, err := os.Open(tm.path("f"))
	if err != nil {
		t.Fatal(err)
	}
	if got := hook.opens.Load() - opens0; got != 0 {
		t.Errorf("open(2) sent %d OPENs, want 0 before the first read", got)
	}
	var wg sync.WaitGroup
	for i := 0; i < 4; i++ {
		wg.Add(1)
		go func(off int64) {
			defer wg.Done()
			buf := make([]byte, 4096)
			if _, err := f.ReadAt(buf, off); err != nil || !bytes.Equal(buf, data[off:off+4096]) {
				t.Errorf("read at %d: %v", off, err)
			}
		}(int64(i) << 20)
	}
	wg.Wait()
	f.Close()
	if got := hook.opens.Load() - opens0; got != 1 {
		t.Errorf("concurrent first reads sent %d OPENs, want 1", got)
	}

	if b, err := os.ReadFile(tm.path("f")); err != nil || !bytes.Equal(b, data) {
		t.Fatalf("full read: %v", err)
	}
	// Warm re-reads come from the page cache, which every open keeps. The
	// kernel may still reclaim a page at any moment: this machine's runs
	// proactive reclaim (DAMON's pageout of memory it samples as cold),
	// which took single 4 KiB pages of this file between two reads. Such
	// a page is read again, with the lazy OPEN before it; an open that
	// dropped the cache would read all 4 MiB again.
	opens0, before := hook.opens.Load(), len(hook.readsOf("f"))
	for i := 0; i < 3; i++ {
		if b, err := os.ReadFile(tm.path("f")); err != nil || !bytes.Equal(b, data) {
			t.Fatalf("warm read %d: %v", i, err)
		}
	}
	again := hook.readsOf("f")[before:]
	reread := 0
	for _, r := range again {
		reread += r.size
	}
	if reread > maxReclaimed {
		t.Errorf("warm re-reads read %d bytes again (%+v), want at most %d: pages the kernel reclaimed", reread, again, maxReclaimed)
	}
	if got := hook.opens.Load() - opens0; got > int64(len(again)) {
		t.Errorf("warm re-reads sent %d OPENs for %d READs", got, len(again))
	}
}

// maxReclaimed bounds what a test may see read again of a file the page
// cache should hold: a few pages the kernel reclaimed meanwhile.
const maxReclaimed = 64 << 10

// TestLazyOpenRemoved checks that a file removed on the server after its
// lookup, whose data the kernel keeps, fails at open(2) with ENOENT (the
// open's check with the server), not with a wrong success, and that the
// next lookup asks again.
func TestLazyOpenRemoved(t *testing.T) {
	tm := mountWith(t, defaultOpts(), nil)
	writeOld(t, filepath.Join(tm.dir, "f"), []byte("soon gone"), time.Hour)
	if b, err := os.ReadFile(tm.path("f")); err != nil || string(b) != "soon gone" {
		t.Fatalf("first read: %q %v", b, err)
	}
	dropPages(t, tm.path("f"))
	if err := os.Remove(filepath.Join(tm.dir, "f")); err != nil {
		t.Fatal(err)
	}
	if f, err := os.Open(tm.path("f")); !isErrno(err, syscall.ENOENT) {
		t.Errorf("open of a removed file: %v, want ENOENT", err)
		if err == nil {
			f.Close()
		}
	}
	if _, err := os.Stat(tm.path("f")); err == nil {
		t.Errorf("stat after the failed open still finds the file")
	}
}

// TestEagerOpenUnreadable checks that a file the remote user may not be
// able to read is opened at open(2), which reports EACCES, while a file
// anyone may read is opened lazily.
func TestEagerOpenUnreadable(t *testing.T) {
	hook := &hookRemote{}
	var denied atomic.Bool
	hook.fail = func(op, p string) error {
		if op == "open" && p == "secret" && denied.Load() {
			return fmt.Errorf("open inprocess:%s: %w", p, fs.ErrPermission)
		}
		return nil
	}
	o := defaultOpts()
	uid, gid := uint32(os.Getuid()), uint32(os.Getgid())
	o.RemoteUID, o.RemoteGID, o.RemoteIDsKnown = uid+1, gid+1, true
	tm := mountWith(t, o, hook.wrap)
	files := map[string]os.FileMode{"secret": 0o600, "public": 0o644}
	for name, mode := range files {
		writeOld(t, filepath.Join(tm.dir, name), []byte(name), time.Hour)
		if err := os.Chmod(filepath.Join(tm.dir, name), mode); err != nil {
			t.Fatal(err)
		}
	}
	for name := range files {
		if _, err := os.ReadFile(tm.path(name)); err != nil {
			t.Fatal(err)
		}
	}
	// The server now refuses what the mode bits said it might.
	denied.Store(true)
	opens0 := hook.opens.Load()
	if f, err := os.Open(tm.path("secret")); !isErrno(err, syscall.EACCES) {
		t.Errorf("open of an unreadable file: %v, want EACCES", err)
		if err == nil {
			f.Close()
		}
	}
	if got := hook.opens.Load() - opens0; got != 1 {
		t.Errorf("open of an unreadable file sent %d OPENs, want 1", got)
	}
	opens0 = hook.opens.Load()
	f, err := os.Open(tm.path("public"))
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	if got := hook.opens.Load() - opens0; got != 0 {
		t.Errorf("open of a public file sent %d OPENs, want 0", got)
	}
}

// TestLazyOpenReplaced checks that a lazy handle keeps reading the file
// it opened after the name is unlinked or renamed over through the mount.
func TestLazyOpenReplaced(t *testing.T) {
	hook := &hookRemote{}
	tm := mountWith(t, defaultOpts(), hook.wrap)
	for _, name := range []string{"a", "b", "c"} {
		writeOld(t, filepath.Join(tm.dir, name), []byte("old "+name), time.Hour)
	}
	open := func(name string) *os.File {
		t.Helper()
		if _, err := os.ReadFile(tm.path(name)); err != nil {
			t.Fatal(err)
		}
		dropPages(t, tm.path(name))
		opens0 := hook.opens.Load()
		f, err := os.Open(tm.path(name))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { f.Close() })
		if got := hook.opens.Load() - opens0; got != 0 {
			t.Fatalf("open of %s sent %d OPENs, want a lazy open", name, got)
		}
		return f
	}
	fa, fc := open("a"), open("c")
	if err := os.Rename(tm.path("b"), tm.path("a")); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(tm.path("c")); err != nil {
		t.Fatal(err)
	}
	for want, f := range map[string]*os.File{"old a": fa, "old c": fc} {
		buf := make([]byte, 64)
		if n, err := f.ReadAt(buf, 0); string(buf[:n]) != want {
			t.Errorf("read after the name went: %q %v, want %q", buf[:n], err, want)
		}
	}
}

func TestMayRead(t *testing.T) {
	known := Options{RemoteUID: 10, RemoteGID: 20, RemoteIDsKnown: true}
	root := Options{RemoteUID: 0, RemoteGID: 0, RemoteIDsKnown: true}
	cases := []struct {
		o    Options
		mode uint32
		uid  uint32
		gid  uint32
		want bool
	}{
		{Options{}, 0o644, 1, 1, true},
		{Options{}, 0o600, 10, 20, false},
		{known, 0o600, 10, 1, true},
		{known, 0o044, 10, 20, false}, // owner bits apply to the owner
		{known, 0o640, 1, 20, true},
		{known, 0o604, 1, 20, false}, // group bits apply to the group
		{known, 0o644, 1, 1, true},
		{known, 0o604, 1, 1, false}, // maybe in the group by another membership
		{known, 0o000, 10, 20, false},
		{root, 0o000, 1, 1, true},
	}
	for _, c := range cases {
		f := &filesys{opts: c.o}
		a := remote.Attr{Mode: syscall.S_IFREG | c.mode, UID: c.uid, GID: c.gid}
		if got := f.mayRead(a); got != c.want {
			t.Errorf("mayRead(%o %d:%d, ids %d:%d known %v) = %v, want %v",
				c.mode, c.uid, c.gid, c.o.RemoteUID, c.o.RemoteGID, c.o.RemoteIDsKnown, got, c.want)
		}
	}
}
