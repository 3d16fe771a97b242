package fusefs

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"sshfsm/internal/remote"
)

// TestWriteErrorAtClose checks that a failure of a pipelined write is
// reported by a later write, fsync and close.
func TestWriteErrorAtClose(t *testing.T) {
	hook := &hookRemote{writeAt: func(ctx context.Context, p []byte, off int64) (int, error) {
		return 0, fmt.Errorf("disk full: %w", syscall.ENOSPC)
	}}
	tm := mountWith(t, defaultOpts(), hook.wrap)
	f, err := os.Create(tm.path("f"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write([]byte("doomed")); err != nil {
		t.Fatalf("first write should be queued, got %v", err)
	}
	if err := f.Sync(); !isErrno(err, syscall.ENOSPC) {
		t.Errorf("fsync: got %v, want ENOSPC", err)
	}
	if _, err := f.Write([]byte("more")); !isErrno(err, syscall.ENOSPC) {
		t.Errorf("write after failure: got %v, want ENOSPC", err)
	}
	if err := f.Close(); !isErrno(err, syscall.ENOSPC) {
		t.Errorf("close: got %v, want ENOSPC", err)
	}
}

// TestWriteVisibleBeforeClose checks that size and data of queued writes
// are seen by stat and read before the file is closed.
func TestWriteVisibleBeforeClose(t *testing.T) {
	tm := mountWith(t, defaultOpts(), nil)
	f, err := os.Create(tm.path("f"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	chunk := []byte(strings.Repeat("0123456789abcdef", 1<<12)) // 64 KiB
	const n = 64                                               // 4 MiB
	for i := 0; i < n; i++ {
		if _, err := f.Write(chunk); err != nil {
			t.Fatal(err)
		}
	}
	fi, err := os.Stat(tm.path("f"))
	if err != nil || fi.Size() != int64(n*len(chunk)) {
		t.Errorf("stat during writes: %v %v, want %d", fi.Size(), err, n*len(chunk))
	}
	g, err := os.Open(tm.path("f"))
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	buf := make([]byte, len(chunk))
	if _, err := g.ReadAt(buf, int64((n-1)*len(chunk))); err != nil || string(buf) != string(chunk) {
		t.Errorf("read of the last chunk before close: %v", err)
	}
}

// TestInterrupt checks that a signal ends a hanging remote call at once.
func TestInterrupt(t *testing.T) {
	cancelled := make(chan time.Time, 1)
	hook := &hookRemote{}
	hook.lstat = func(ctx context.Context, p string) (remote.Attr, error) {
		if !strings.HasSuffix(p, "hang") {
			return hook.Remote.Lstat(ctx, p)
		}
		<-ctx.Done()
		cancelled <- time.Now()
		return remote.Attr{}, ctx.Err()
	}
	// A directory that cannot be listed: the lookup falls back to a
	// single stat.
	hook.readDir = func(ctx context.Context, p string) ([]remote.DirEntry, error) {
		return nil, syscall.EACCES
	}
	tm := mountWith(t, defaultOpts(), hook.wrap)
	if err := os.Mkdir(filepath.Join(tm.dir, "d"), 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("stat", tm.path("d/hang"))
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond)
	sent := time.Now()
	cmd.Process.Signal(syscall.SIGINT)
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		cmd.Process.Kill()
		t.Fatal("stat did not end after SIGINT")
	}
	select {
	case at := <-cancelled:
		if d := at.Sub(sent); d > time.Second {
			t.Errorf("remote call cancelled %v after the signal", d)
		}
	case <-time.After(5 * time.Second):
		t.Error("the remote call never saw its context cancelled")
	}
}

// TestListingCache checks that lookups in one directory share one
// listing, answer misses from it, and that our own changes show at once.
func TestListingCache(t *testing.T) {
	hook := &hookRemote{}
	tm := mountWith(t, defaultOpts(), hook.wrap)
	const n = 40
	if err := os.Mkdir(filepath.Join(tm.dir, "d"), 0o755); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < n; i++ {
		mustWrite(t, filepath.Join(tm.dir, "d", fmt.Sprint(i)), []byte("x"))
	}
	if _, err := os.Stat(tm.path("d")); err != nil {
		t.Fatal(err)
	}
	dirs0, lstats0 := hook.readDirs.Load(), hook.lstats.Load()
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			if _, err := os.Lstat(tm.path(fmt.Sprintf("d/%d", i))); err != nil {
				t.Error(err)
			}
			if _, err := os.Lstat(tm.path(fmt.Sprintf("d/missing%d", i))); !os.IsNotExist(err) {
				t.Errorf("missing: %v", err)
			}
		}(i)
	}
	wg.Wait()
	if got := hook.readDirs.Load() - dirs0; got != 1 {
		t.Errorf("%d listings for %d lookups, want 1", got, 2*n)
	}
	if got := hook.lstats.Load() - lstats0; got != 0 {
		t.Errorf("%d single stats, want 0", got)
	}
	// Our own changes are visible through the cached listing.
	mustWrite(t, tm.path("d/new"), []byte("abc"))
	if err := os.Remove(tm.path("d/0")); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tm.path("d/1"), tm.path("d/one")); err != nil {
		t.Fatal(err)
	}
	checks := map[string]bool{"d/new": true, "d/0": false, "d/1": false, "d/one": true}
	for p, want := range checks {
		_, err := os.Lstat(tm.path(p))
		if (err == nil) != want {
			t.Errorf("lstat %s: %v, want exists=%v", p, err, want)
		}
	}
	if fi, err := os.Stat(tm.path("d/new")); err != nil || fi.Size() != 3 {
		t.Errorf("size of new file: %v %v", fi, err)
	}
}

// TestReaddirFromListing checks that listing a directory again within the
// cache time costs no READDIR, and that our own changes show in it.
func TestReaddirFromListing(t *testing.T) {
	hook := &hookRemote{}
	tm := mountWith(t, defaultOpts(), hook.wrap)
	if err := os.Mkdir(filepath.Join(tm.dir, "d"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"b", "a", "c"} {
		mustWrite(t, filepath.Join(tm.dir, "d", n), []byte("x"))
	}
	names := func() string {
		t.Helper()
		ents, err := os.ReadDir(tm.path("d"))
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, e := range ents {
			out = append(out, e.Name())
		}
		return strings.Join(out, ",")
	}
	if got := names(); got != "a,b,c" {
		t.Fatalf("first listing %q", got)
	}
	dirs0 := hook.readDirs.Load()
	if got := names(); got != "a,b,c" {
		t.Errorf("second listing %q", got)
	}
	if err := os.Remove(tm.path("d/b")); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(tm.path("d/e"), 0o755); err != nil {
		t.Fatal(err)
	}
	if got := names(); got != "a,c,e" {
		t.Errorf("listing after unlink and mkdir %q", got)
	}
	if got := hook.readDirs.Load() - dirs0; got != 0 {
		t.Errorf("%d READDIRs within the cache time, want 0", got)
	}
}

// settle waits until no listing has been fetched for a while, so that
// background prefetching is over.
func settle(t *testing.T, hook *hookRemote) {
	t.Helper()
	last, quiet := hook.readDirs.Load(), 0
	for i := 0; i < 400 && quiet < 20; i++ {
		time.Sleep(5 * time.Millisecond)
		if n := hook.readDirs.Load(); n != last {
			last, quiet = n, 0
		} else {
			quiet++
		}
	}
}

// listings returns how many READDIRs of paths reading them costs.
func listings(t *testing.T, tm *testMount, hook *hookRemote, paths ...string) int64 {
	t.Helper()
	count := func() (n int64) {
		for _, p := range paths {
			n += hook.listings(p)
		}
		return n
	}
	before := count()
	for _, p := range paths {
		if _, err := os.ReadDir(tm.path(p)); err != nil {
			t.Fatal(err)
		}
	}
	return count() - before
}

// TestPrefetchSubdirs checks that reading a directory lists its
// subdirectories ahead, so walking into them sends no further READDIR.
func TestPrefetchSubdirs(t *testing.T) {
	hook := &hookRemote{}
	o := defaultOpts()
	o.PrefetchDepth = 1
	tm := mountWith(t, o, hook.wrap)
	for _, s := range []string{"s1", "s2", "s3"} {
		if err := os.MkdirAll(filepath.Join(tm.dir, "d", s, "inner"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if got := listings(t, tm, hook, "d"); got != 1 {
		t.Errorf("reading d cost %d READDIRs, want 1", got)
	}
	settle(t, hook)
	if got := listings(t, tm, hook, "d/s1", "d/s2", "d/s3"); got != 0 {
		t.Errorf("walking into the subdirectories of d cost %d READDIRs, want 0", got)
	}
}

// TestPrefetchOff checks that PrefetchDepth 0 lists nothing ahead.
func TestPrefetchOff(t *testing.T) {
	hook := &hookRemote{}
	tm := mountWith(t, defaultOpts(), hook.wrap) // PrefetchDepth 0
	if err := os.MkdirAll(filepath.Join(tm.dir, "d", "s1"), 0o755); err != nil {
		t.Fatal(err)
	}
	if got := listings(t, tm, hook, "d"); got != 1 {
		t.Errorf("reading d cost %d READDIRs, want 1", got)
	}
	settle(t, hook)
	if got := listings(t, tm, hook, "d/s1"); got != 1 {
		t.Errorf("reading d/s1 cost %d READDIRs, want 1 (nothing listed ahead)", got)
	}
}

// TestPrefetchDepth checks that a single look lists one level ahead, and
// that a walk (a reader using a prefetched listing) lists PrefetchDepth
// levels ahead, and no further.
func TestPrefetchDepth(t *testing.T) {
	hook := &hookRemote{}
	o := defaultOpts()
	o.PrefetchDepth = 2
	tm := mountWith(t, o, hook.wrap)
	if err := os.MkdirAll(filepath.Join(tm.dir, "d", "s1", "a", "b", "c"), 0o755); err != nil {
		t.Fatal(err)
	}
	// A lookup lists the root, which queues d only.
	if _, err := os.Stat(tm.path("d")); err != nil {
		t.Fatal(err)
	}
	settle(t, hook)
	if hook.listings("d") != 1 || hook.listings("d/s1") != 0 {
		t.Errorf("after one lookup: d listed %d times, d/s1 %d times; want 1 and 0",
			hook.listings("d"), hook.listings("d/s1"))
	}
	// Reading the prefetched d is a walk: d/s1 and d/s1/a are queued.
	if got := listings(t, tm, hook, "d"); got != 0 {
		t.Errorf("reading the prefetched d cost %d READDIRs, want 0", got)
	}
	settle(t, hook)
	if got := listings(t, tm, hook, "d/s1"); got != 0 {
		t.Errorf("reading d/s1 cost %d READDIRs, want 0", got)
	}
	// Reading d/s1 queued a and a/b; a/b/c is beyond the depth.
	settle(t, hook)
	if got := listings(t, tm, hook, "d/s1/a/b/c"); got != 1 {
		t.Errorf("reading d/s1/a/b/c cost %d READDIRs, want 1", got)
	}
	if got := listings(t, tm, hook, "d/s1/a", "d/s1/a/b"); got != 0 {
		t.Errorf("reading the prefetched levels cost %d READDIRs, want 0", got)
	}
}

// TestRemoteChangeSeenInListing checks that a name added on the server
// shows in a listing once the cache times have passed, although the
// kernel keeps directory contents across opens.
func TestRemoteChangeSeenInListing(t *testing.T) {
	o := defaultOpts()
	o.AttrTimeout, o.EntryTimeout, o.NegativeTimeout, o.DirCacheTimeout =
		200*time.Millisecond, 200*time.Millisecond, 200*time.Millisecond, 200*time.Millisecond
	tm := mountWith(t, o, nil)
	if err := os.Mkdir(filepath.Join(tm.dir, "d"), 0o755); err != nil {
		t.Fatal(err)
	}
	mustWrite(t, filepath.Join(tm.dir, "d", "a"), []byte("x"))
	list := func() int {
		ents, err := os.ReadDir(tm.path("d"))
		if err != nil {
			t.Fatal(err)
		}
		return len(ents)
	}
	os.Chtimes(filepath.Join(tm.dir, "d"), time.Unix(1e9, 0), time.Unix(1e9, 0))
	if n := list(); n != 1 {
		t.Fatalf("%d names, want 1", n)
	}
	// Within the same second: the directory's mtime (seconds over SFTP)
	// does not change, so only the listing's expiry can show the name.
	mustWrite(t, filepath.Join(tm.dir, "d", "b"), []byte("y"))
	os.Chtimes(filepath.Join(tm.dir, "d"), time.Unix(1e9, 0), time.Unix(1e9, 0))
	if n := list(); n != 1 {
		t.Logf("%d names at once (the listing is cached for 200 ms)", n)
	}
	time.Sleep(400 * time.Millisecond)
	if n := list(); n != 2 {
		t.Errorf("%d names after a remote create and the cache times, want 2", n)
	}
}

// TestKeepCache checks that an unchanged file is read from the page cache
// on its second open. (Its mtime is an hour old: data of a file modified
// within racyWindow is not kept across opens.)
func TestKeepCache(t *testing.T) {
	hook := &hookRemote{}
	tm := mountWith(t, defaultOpts(), hook.wrap)
	writeOld(t, filepath.Join(tm.dir, "f"), []byte(strings.Repeat("z", 100000)), time.Hour)
	for i := 0; i < 3; i++ {
		if b, err := os.ReadFile(tm.path("f")); err != nil || len(b) != 100000 {
			t.Fatalf("read %d: %v", len(b), err)
		}
		if i == 0 {
			hook.reads.Store(0)
		}
	}
	if got := hook.reads.Load(); got != 0 {
		t.Errorf("%d remote reads after the first open, want 0", got)
	}
}

// TestSymlinks checks contain_symlinks and transform_symlinks.
func TestSymlinks(t *testing.T) {
	o := defaultOpts()
	tm := mountWith(t, o, nil)
	links := map[string]string{"abs": "/etc/passwd", "up": "../../x", "in": "sub/../f", "d/ok": "../f", "d/up": "../../f",
		"dot": ".", "esc": "dot/../x"}
	os.Mkdir(filepath.Join(tm.dir, "d"), 0o755)
	os.Mkdir(filepath.Join(tm.dir, "sub"), 0o755)
	for l, target := range links {
		if err := os.Symlink(target, filepath.Join(tm.dir, l)); err != nil {
			t.Fatal(err)
		}
	}
	shown := map[string]string{"in": "f"} // resolved through the mount: sub is a directory
	for l, target := range links {
		got, err := os.Readlink(tm.path(l))
		denied := l == "abs" || l == "up" || l == "d/up" || l == "esc"
		if s, ok := shown[l]; ok {
			target = s
		}
		switch {
		case denied && !isErrno(err, syscall.EACCES):
			t.Errorf("readlink %s: %q %v, want EACCES", l, got, err)
		case !denied && (err != nil || got != target):
			t.Errorf("readlink %s: %q %v, want %q", l, got, err, target)
		}
	}
	os.Readlink(tm.path("abs"))
	if c := strings.Count(tm.logs.String(), "path=abs "); c != 1 {
		t.Errorf("denied link logged %d times, want once:\n%s", c, tm.logs)
	}

	o.TransformSymlinks = true
	tm2 := mountWith(t, o, nil) // MountPrefix: the remote directory
	if err := os.MkdirAll(filepath.Join(tm2.dir, "a/b"), 0o755); err != nil {
		t.Fatal(err)
	}
	for l, target := range map[string]string{"a/b/l": "top", "a/b/m": "a/x", "a/b/n": ""} {
		if err := os.Symlink(filepath.Join(tm2.dir, target), filepath.Join(tm2.dir, l)); err != nil {
			t.Fatal(err)
		}
	}
	want := map[string]string{"a/b/l": "../../top", "a/b/m": "../../a/x", "a/b/n": "../.."}
	for l, w := range want {
		if got, err := os.Readlink(tm2.path(l)); err != nil || got != w {
			t.Errorf("transformed %s: %q %v, want %q", l, got, err, w)
		}
	}
}

// TestLinkedNamesShareAttributes checks that a file given a second name
// through the mount shows, under either name, what was written through the
// other: each name has its own entry in its directory's cached listing, and
// a lookup answered from the entry of the name not written through would
// hand the kernel the old size.
func TestLinkedNamesShareAttributes(t *testing.T) {
	o := defaultOpts()
	o.AttrTimeout, o.EntryTimeout = 0, 0 // every stat looks up and asks again
	tm := mountWith(t, o, nil)
	target, link := tm.path("target"), tm.path("link")
	mustWrite(t, target, []byte("hello"))
	if _, err := os.ReadDir(tm.mnt); err != nil { // the listing answers lookups
		t.Fatal(err)
	}
	if err := os.Link(target, link); err != nil {
		t.Fatal(err)
	}
	want := "changed through the link"
	mustWrite(t, link, []byte(want))
	for _, p := range []string{target, link} {
		if fi, err := os.Stat(p); err != nil || fi.Size() != int64(len(want)) {
			t.Fatalf("stat %s: %v, %v; want size %d", filepath.Base(p), fi, err, len(want))
		}
		if got, err := os.ReadFile(p); err != nil || string(got) != want {
			t.Fatalf("read %s = %q, %v; want %q", filepath.Base(p), got, err, want)
		}
	}
}

// disable_hardlink: link(2) fails with EPERM and the server sees nothing.
func TestDisableHardlink(t *testing.T) {
	o := defaultOpts()
	o.DisableHardlink = true
	tm := mountWith(t, o, nil)
	mustWrite(t, tm.path("target"), []byte("x"))
	if err := os.Link(tm.path("target"), tm.path("link")); !isErrno(err, syscall.EPERM) {
		t.Fatalf("link with disable_hardlink: %v, want EPERM", err)
	}
	if _, err := os.Lstat(filepath.Join(tm.dir, "link")); !os.IsNotExist(err) {
		t.Fatalf("the server has the link: %v", err)
	}
}
