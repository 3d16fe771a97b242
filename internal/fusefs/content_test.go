package fusefs

import (
	"bytes"
	"fmt"
	"io"
	"log/slog"
	"math/rand"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"sshfsm/internal/cache"
	"sshfsm/internal/contentcache"
	"sshfsm/internal/namespace"
	"sshfsm/internal/testenv"
)

// diskMount is one mount of a remote directory with a disk cache, made
// and unmounted by the test, possibly several times over the same
// directories.
type diskMount struct {
	*testMount
	hook  *hookRemote
	cache *contentcache.Cache
}

// mountDisk mounts the remote directory dir with the disk cache in
// cacheDir (opened afresh: what a new daemon finds there).
func mountDisk(t *testing.T, dir, cacheDir string, mode cache.Mode) *diskMount {
	t.Helper()
	return mountDiskMax(t, dir, cacheDir, mode, 1<<30)
}

func mountDiskMax(t *testing.T, dir, cacheDir string, mode cache.Mode, maxSize int64) *diskMount {
	t.Helper()
	return mountDiskWith(t, dir, cacheDir, mode, maxSize, nil)
}

// mountDiskWith is mountDiskMax with tweak applied to the options.
func mountDiskWith(t *testing.T, dir, cacheDir string, mode cache.Mode, maxSize int64, tweak func(*Options)) *diskMount {
	t.Helper()
	testenv.RequireFUSE(t)
	c, err := contentcache.Open(contentcache.Options{Dir: cacheDir, MaxSize: maxSize})
	if err != nil {
		t.Fatal(err)
	}
	o := defaultOpts()
	o.Mode, o.Content, o.ContentID = mode, c, "test-host"
	if tweak != nil {
		tweak(&o)
	}
	tm := &testMount{dir: dir, mnt: t.TempDir(), logs: &testenv.LogBuffer{}}
	o.Logger = slog.New(slog.NewTextHandler(tm.logs, nil))
	hook := &hookRemote{}
	srv, err := Mount(tm.mnt, namespace.Single(hook.wrap(newRemote(t, dir))), o, MountOptions{FsName: "test", Subtype: "sshfsm"})
	if err != nil {
		c.Close()
		t.Fatalf("Mount: %v", err)
	}
	tm.srv = srv
	m := &diskMount{testMount: tm, hook: hook, cache: c}
	t.Cleanup(func() {
		if m.srv != nil {
			m.close(t)
		}
	})
	return m
}

func (m *diskMount) close(t *testing.T) {
	t.Helper()
	m.unmount(t)
	m.srv = nil
	if err := m.cache.Close(); err != nil {
		t.Errorf("closing the disk cache: %v", err)
	}
	if t.Failed() {
		t.Logf("filesystem log:\n%s", m.logs)
	}
}

// writeOld writes a file on the server with an mtime an hour ago, older
// than any racy window.
func writeOld(t *testing.T, p string, data []byte, age time.Duration) {
	t.Helper()
	mustWrite(t, p, data)
	old := time.Now().Add(-age)
	if err := os.Chtimes(p, old, old); err != nil {
		t.Fatal(err)
	}
}

func randomBytes(n int, seed int64) []byte {
	b := make([]byte, n)
	rand.New(rand.NewSource(seed)).Read(b)
	return b
}

func readAll(t *testing.T, p string) []byte {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// A file read once is read from local disk by the next mount: no open, no
// read reaches the server. That holds for a small file too, whose first
// read is answered before its bytes are stored.
func TestDiskCacheServesNextMount(t *testing.T) {
	dir, cacheDir := t.TempDir(), t.TempDir()
	want := randomBytes(3<<20+12345, 1) // several blocks and a partial one
	small := randomBytes(5000, 2)
	writeOld(t, filepath.Join(dir, "f"), want, time.Hour)
	writeOld(t, filepath.Join(dir, "small"), small, time.Hour)
	writeOld(t, filepath.Join(dir, "empty"), nil, time.Hour)

	m := mountDisk(t, dir, cacheDir, cache.Auto)
	if got := readAll(t, m.path("f")); !bytes.Equal(got, want) {
		t.Fatal("first read differs from the server's file")
	}
	if got := readAll(t, m.path("small")); !bytes.Equal(got, small) {
		t.Fatal("first read of the small file differs from the server's")
	}
	readAll(t, m.path("empty"))
	m.close(t)

	m = mountDisk(t, dir, cacheDir, cache.Auto)
	if got := readAll(t, m.path("f")); !bytes.Equal(got, want) {
		t.Fatal("read from the disk cache differs from the server's file")
	}
	if got := readAll(t, m.path("small")); !bytes.Equal(got, small) {
		t.Fatal("small file read from the disk cache differs from the server's")
	}
	if got := readAll(t, m.path("empty")); len(got) != 0 {
		t.Fatalf("empty file read %d bytes", len(got))
	}
	if o, r := m.hook.opens.Load(), m.hook.reads.Load(); o != 0 || r != 0 {
		t.Errorf("second mount: %d opens and %d reads reached the server, want none", o, r)
	}
}

// A new version on the server (another mtime) is read from the server,
// even with the same size.
func TestDiskCacheReadsNewVersion(t *testing.T) {
	dir, cacheDir := t.TempDir(), t.TempDir()
	p := filepath.Join(dir, "f")
	writeOld(t, p, []byte("version one"), time.Hour)
	m := mountDisk(t, dir, cacheDir, cache.Auto)
	readAll(t, m.path("f"))
	m.close(t)

	writeOld(t, p, []byte("version two"), 30*time.Minute)
	m = mountDisk(t, dir, cacheDir, cache.Auto)
	if got := string(readAll(t, m.path("f"))); got != "version two" {
		t.Fatalf("read %q, want the server's new version", got)
	}
	if m.hook.reads.Load() == 0 {
		t.Error("the new version was not read from the server")
	}
}

// Files modified within the racy window are neither stored nor served:
// another write in the same second, keeping the size, would keep the
// version.
func TestDiskCacheSkipsRacyFiles(t *testing.T) {
	dir, cacheDir := t.TempDir(), t.TempDir()
	mustWrite(t, filepath.Join(dir, "f"), []byte("fresh"))
	m := mountDisk(t, dir, cacheDir, cache.Auto)
	readAll(t, m.path("f"))
	m.close(t)

	m = mountDisk(t, dir, cacheDir, cache.Auto)
	readAll(t, m.path("f"))
	if m.hook.reads.Load() == 0 {
		t.Error("a file modified just now was served from the disk cache")
	}
}

// What the mount writes drops the cached versions of the path, even when
// the new content ends with the size and mtime of a cached version.
func TestDiskCacheForgetsWrites(t *testing.T) {
	dir, cacheDir := t.TempDir(), t.TempDir()
	p := filepath.Join(dir, "f")
	writeOld(t, p, []byte("old content"), time.Hour)
	st, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	m := mountDisk(t, dir, cacheDir, cache.Auto)
	readAll(t, m.path("f"))
	if err := os.WriteFile(m.path("f"), []byte("new content"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(m.path("f"), st.ModTime(), st.ModTime()); err != nil {
		t.Fatal(err)
	}
	m.close(t)

	m = mountDisk(t, dir, cacheDir, cache.Auto)
	if got := string(readAll(t, m.path("f"))); got != "new content" {
		t.Fatalf("read %q after the mount rewrote the file, want %q", got, "new content")
	}
}

// A file that shrinks on the server while open is read as the server has
// it: blocks beyond its new end are not stored for the old version.
func TestDiskCacheFileShrinksWhileOpen(t *testing.T) {
	dir, cacheDir := t.TempDir(), t.TempDir()
	p := filepath.Join(dir, "f")
	data := randomBytes(3<<20, 2)
	writeOld(t, p, data, time.Hour)
	m := mountDisk(t, dir, cacheDir, cache.Auto)
	f, err := os.Open(m.path("f"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := os.Truncate(p, 1<<20); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 1<<20)
	n, err := f.ReadAt(buf, 2<<20)
	if n != 0 || err != io.EOF {
		t.Errorf("read past the server's new end: %d bytes, %v; want 0, EOF", n, err)
	}
	n, err = f.ReadAt(buf, 0)
	if err != nil || !bytes.Equal(buf[:n], data[:1<<20]) {
		t.Errorf("read of the remaining part: %d bytes, %v", n, err)
	}
}

// Coherence modes at open: strict and auto ask the server for every open
// (close-to-open consistency); immutable trusts what it knows.
func TestDiskCacheModesAtOpen(t *testing.T) {
	for _, c := range []struct {
		mode  cache.Mode
		extra bool // each open costs a stat
	}{{cache.Auto, true}, {cache.Strict, true}, {cache.Immutable, false}} {
		t.Run(c.mode.String(), func(t *testing.T) {
			dir := t.TempDir()
			writeOld(t, filepath.Join(dir, "f"), []byte("content"), time.Hour)
			m := mountDisk(t, dir, t.TempDir(), c.mode)
			readAll(t, m.path("f"))
			before := m.hook.lstats.Load() + m.hook.stats.Load()
			const opens = 5
			for range opens {
				readAll(t, m.path("f"))
			}
			got := m.hook.lstats.Load() + m.hook.stats.Load() - before
			if c.extra && got < opens || !c.extra && got != 0 {
				t.Errorf("%d opens asked for attributes %d times", opens, got)
			}
		})
	}
}

// A change pushed from the server (the watcher) reaches opens served
// from the disk cache: the first open after the change was applied reads
// the new contents of a file rewritten on the server with the same size,
// in every mode, although the attributes the mount holds are within their
// timeout (immutable: kept for the life of the mount). Nothing else asks
// for the file's attributes in between (a stat would refresh them).
func TestDiskCacheFollowsPushedChanges(t *testing.T) {
	kinds := map[string]namespace.ChangeKind{"data": namespace.ChangeData, "created": namespace.ChangeCreated, "attr": namespace.ChangeAttr}
	for kindName, kind := range kinds {
		for _, mode := range []cache.Mode{cache.Auto, cache.Strict, cache.Immutable} {
			t.Run(mode.String()+"/"+kindName, func(t *testing.T) {
				dir := t.TempDir()
				p := filepath.Join(dir, "f")
				writeOld(t, p, []byte("old contents"), time.Hour)
				changes := make(chan []namespace.Change) // unbuffered: a send is taken once the batch before it is applied
				m := mountDiskWith(t, dir, t.TempDir(), mode, 1<<30, func(o *Options) { o.Changes = changes })
				f, err := os.Open(m.path("f"))
				if err != nil {
					t.Fatal(err)
				}
				b, err := io.ReadAll(f) // no fstat: ReadFile's would ask for attributes
				f.Close()
				if err != nil || string(b) != "old contents" {
					t.Fatalf("first read: %q, %v", b, err)
				}
				writeOld(t, p, []byte("new contents"), 30*time.Minute) // not racy: cacheable too
				changes <- []namespace.Change{{Path: "f", Kind: kind}}
				changes <- nil // taken once the change above is applied
				if f, err = os.Open(m.path("f")); err != nil {
					t.Fatal(err)
				}
				b, err = io.ReadAll(f)
				f.Close()
				if err != nil || string(b) != "new contents" {
					t.Fatalf("first open after the pushed change reads %q, %v", b, err)
				}
			})
		}
	}
}

// Concurrent readers of a file not cached yet all read the right bytes,
// and each block is fetched from the server about once.
func TestDiskCacheConcurrentReaders(t *testing.T) {
	dir, cacheDir := t.TempDir(), t.TempDir()
	want := randomBytes(8<<20, 3)
	writeOld(t, filepath.Join(dir, "f"), want, time.Hour)
	m := mountDisk(t, dir, cacheDir, cache.Auto)
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			f, err := os.Open(m.path("f"))
			if err != nil {
				errs <- err
				return
			}
			defer f.Close()
			r := rand.New(rand.NewSource(int64(i)))
			buf := make([]byte, 256<<10)
			for range 40 {
				off := r.Int63n(int64(len(want)))
				n, err := f.ReadAt(buf, off)
				if err != nil && err != io.EOF {
					errs <- err
					return
				}
				if !bytes.Equal(buf[:n], want[off:off+int64(n)]) {
					errs <- io.ErrUnexpectedEOF
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("concurrent reader: %v", err)
	}
	m.close(t)
	m = mountDisk(t, dir, cacheDir, cache.Auto)
	if got := readAll(t, m.path("f")); !bytes.Equal(got, want) {
		t.Fatal("content differs after concurrent fills")
	}
}

// A disk cache much smaller than what is read keeps evicting; every read
// still returns the server's bytes, and the cache stays near its limit.
func TestDiskCacheEvictionKeepsCorrectness(t *testing.T) {
	dir, cacheDir := t.TempDir(), t.TempDir()
	const files, size, limit = 24, 512 << 10, 2 << 20
	want := make([][]byte, files)
	for i := range files {
		want[i] = randomBytes(size, int64(100+i))
		writeOld(t, filepath.Join(dir, fmt.Sprint("f", i)), want[i], time.Hour)
	}
	for round := range 3 {
		m := mountDiskMax(t, dir, cacheDir, cache.Auto, limit)
		for i := range files {
			if got := readAll(t, m.path(fmt.Sprint("f", i))); !bytes.Equal(got, want[i]) {
				t.Fatalf("round %d: f%d differs from the server's file", round, i)
			}
		}
		// Eviction runs beside the fills: give it a moment to catch up.
		deadline := time.Now().Add(5 * time.Second)
		for m.cache.Stats().Bytes > 2*limit && time.Now().Before(deadline) {
			time.Sleep(20 * time.Millisecond)
		}
		if b := m.cache.Stats().Bytes; b > 2*limit {
			t.Errorf("round %d: the cache holds %d bytes, limit %d", round, b, limit)
		}
		m.close(t)
	}
}

// A file the disk cache lacks whose content it stores under another path
// (a copy in another revision directory) is served from the stored
// content: the open asks the server for its digest, since content of
// that exact size is stored, and sends no read. A file of the same size
// and other content is fetched as usual; files of other sizes cost no
// digest.
func TestDiskCacheFindsCopyByDigest(t *testing.T) {
	dir := t.TempDir()
	big, other := randomBytes(3<<20+123, 7), randomBytes(3<<20+123, 8)
	for _, d := range []string{"rev1", "rev2"} {
		if err := os.Mkdir(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	writeOld(t, filepath.Join(dir, "rev1", "big"), big, time.Hour)
	writeOld(t, filepath.Join(dir, "rev2", "big"), big, time.Hour)
	writeOld(t, filepath.Join(dir, "rev2", "other"), other, time.Hour)
	writeOld(t, filepath.Join(dir, "rev2", "longer"), randomBytes(3<<20+124, 9), time.Hour)
	writeOld(t, filepath.Join(dir, "rev2", "partly"), randomBytes(3<<20+123, 10), time.Hour)
	m, sr := mountXattr(t, dir, t.TempDir(), cache.Auto, true)
	if !bytes.Equal(readAll(t, m.path("rev1/big")), big) {
		t.Fatal("rev1/big differs")
	}
	// The stored copy is made in the background once the entry is complete.
	for deadline := time.Now().Add(5 * time.Second); !m.cache.MayHold(contentcache.Key{Host: "test-host", Size: int64(len(big))}); {
		if time.Now().After(deadline) {
			t.Fatal("5 s after rev1/big was read, the cache holds no content of its size")
		}
		time.Sleep(10 * time.Millisecond)
	}
	reads := m.hook.reads.Load()
	if !bytes.Equal(readAll(t, m.path("rev2/big")), big) {
		t.Fatal("rev2/big differs")
	}
	if r := m.hook.reads.Load() - reads; r != 0 {
		t.Errorf("a copy of stored content sent %d reads", r)
	}
	if n := sr.sums.Load(); n != 1 {
		t.Errorf("%d digests asked of the server for one copy", n)
	}
	if !bytes.Equal(readAll(t, m.path("rev2/other")), other) {
		t.Fatal("rev2/other (same size, other content) differs")
	}
	if m.hook.reads.Load() == reads {
		t.Error("rev2/other was not read from the server")
	}
	sums := sr.sums.Load()
	readAll(t, m.path("rev2/longer"))
	if n := sr.sums.Load() - sums; n != 0 {
		t.Errorf("a file of a size the cache does not store asked for %d digests", n)
	}
	// A file of that size read in part, opened again: its digest was
	// asked once.
	sums = sr.sums.Load()
	for range 2 {
		f, err := os.Open(m.path("rev2/partly"))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.Read(make([]byte, 10)); err != nil {
			t.Fatal(err)
		}
		f.Close()
	}
	if n := sr.sums.Load() - sums; n != 1 {
		t.Errorf("a file read in part and opened twice asked for %d digests, want 1", n)
	}
}

// Damage to the disk cache between mounts (a byte flipped in the stored
// data of a large and of a small file) is detected: the next mount reads
// the server's bytes, fetching again what the damage touched.
func TestDiskCacheDamagedBetweenMounts(t *testing.T) {
	dir, cacheDir := t.TempDir(), t.TempDir()
	files := map[string][]byte{"big": randomBytes(3<<20+12345, 21), "small": randomBytes(5000, 22)}
	for name, b := range files {
		writeOld(t, filepath.Join(dir, name), b, time.Hour)
	}
	m := mountDisk(t, dir, cacheDir, cache.Auto)
	for name := range files {
		readAll(t, m.path(name))
	}
	m.close(t)
	if n := damageCache(t, cacheDir); n < 2 {
		t.Fatalf("damaged %d stored files, want the big and the small one", n)
	}
	m = mountDisk(t, dir, cacheDir, cache.Auto)
	for name, want := range files {
		reads := m.hook.reads.Load()
		if !bytes.Equal(readAll(t, m.path(name)), want) {
			t.Errorf("%s: read after the disk cache was damaged differs from the server's file", name)
		}
		if m.hook.reads.Load() == reads {
			t.Errorf("%s: nothing was fetched again: the damaged cache was trusted", name)
		}
	}
}

// damageCache flips one byte of the data of every file the disk cache in
// cacheDir stores (once per inode: stored copies share them): in the
// second block of a large entry's data file, after the header of a small
// entry. It returns how many it damaged.
func damageCache(t *testing.T, cacheDir string) int {
	t.Helper()
	seen := map[uint64]bool{}
	err := filepath.WalkDir(filepath.Join(cacheDir, "content"), func(p string, d os.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		var st syscall.Stat_t
		if err := syscall.Stat(p, &st); err != nil || seen[st.Ino] {
			return err
		}
		var off int64
		switch {
		case d.Name() == "d" && st.Size > 1<<20+17:
			off = 1<<20 + 17
		case strings.Contains(p, "/s/") && st.Size > 64+17:
			off = 64 + 17
		default:
			return nil
		}
		seen[st.Ino] = true
		f, err := os.OpenFile(p, os.O_RDWR, 0)
		if err != nil {
			return err
		}
		defer f.Close()
		b := make([]byte, 1)
		if _, err := f.ReadAt(b, off); err != nil {
			return err
		}
		b[0] ^= 0xff
		_, err = f.WriteAt(b, off)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return len(seen)
}

// A read-only open of a file whose data the kernel keeps asks neither the
// server nor the disk cache; when the kernel has dropped the data since,
// the first read finds it in the disk cache, and a name renamed over
// through the mount in between keeps the handle on the old file.
func TestDiskCacheKeptOpens(t *testing.T) {
	dir, cacheDir := t.TempDir(), t.TempDir()
	small, big := randomBytes(70_000, 2), randomBytes(2<<20+999, 3)
	writeOld(t, filepath.Join(dir, "small"), small, time.Hour)
	writeOld(t, filepath.Join(dir, "big"), big, time.Hour)
	writeOld(t, filepath.Join(dir, "other"), []byte("the new one"), time.Hour)
	m := mountDisk(t, dir, cacheDir, cache.Auto)
	for name, want := range map[string][]byte{"small": small, "big": big, "other": []byte("the new one")} {
		if got := readAll(t, m.path(name)); !bytes.Equal(got, want) {
			t.Fatalf("first read of %s differs", name)
		}
	}
	loads, opens := m.cache.Stats().Loads, m.hook.opens.Load()
	for range 3 {
		for name, want := range map[string][]byte{"small": small, "big": big} {
			if got := readAll(t, m.path(name)); !bytes.Equal(got, want) {
				t.Fatalf("re-read of %s differs", name)
			}
		}
	}
	if l, o := m.cache.Stats().Loads-loads, m.hook.opens.Load()-opens; l != 0 || o != 0 {
		t.Errorf("re-reads of kept files loaded %d disk cache entries and sent %d OPENs, want none", l, o)
	}

	hits := m.cache.Stats().HitBytes
	for name, want := range map[string][]byte{"small": small, "big": big} {
		f, err := os.Open(m.path(name))
		if err != nil {
			t.Fatal(err)
		}
		dropPages(t, m.path(name))
		got, err := io.ReadAll(f)
		f.Close()
		if err != nil || !bytes.Equal(got, want) {
			t.Fatalf("read of %s after its pages were dropped: %v", name, err)
		}
	}
	if got, want := m.cache.Stats().HitBytes-hits, int64(len(small)+len(big)); got != want {
		t.Errorf("dropped pages: %d bytes read from the disk cache, want %d", got, want)
	}
	if o, r := m.hook.opens.Load()-opens, m.hook.reads.Load(); o != 0 {
		t.Errorf("dropped pages: %d OPENs (%d reads in all) reached the server, want none", o, r)
	}

	f, err := os.Open(m.path("small"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := os.Rename(m.path("other"), m.path("small")); err != nil {
		t.Fatal(err)
	}
	if err := unix.Fadvise(int(f.Fd()), 0, 0, unix.FADV_DONTNEED); err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(f)
	if err != nil || !bytes.Equal(got, small) {
		t.Fatalf("handle opened before a rename over its name read %d bytes (%v), want the old file", len(got), err)
	}
}

// A kept open reads the version it was opened at, whole, from the disk
// cache, even when the server's file changed before its first read and the
// mount has learned of it: it never mixes the kernel's pages of one
// version with bytes of another (what an eager open of that version did).
func TestDiskCacheKeptOpenKeepsItsVersion(t *testing.T) {
	dir, cacheDir := t.TempDir(), t.TempDir()
	v0, v1 := randomBytes(3<<20, 4), randomBytes(3<<20, 5)
	p := filepath.Join(dir, "f")
	writeOld(t, p, v0, time.Hour)
	const ttl = 200 * time.Millisecond
	m := mountDiskWith(t, dir, cacheDir, cache.Auto, 1<<30, func(o *Options) {
		o.AttrTimeout, o.EntryTimeout, o.DirCacheTimeout = ttl, ttl, ttl
	})
	if got := readAll(t, m.path("f")); !bytes.Equal(got, v0) {
		t.Fatal("first read differs")
	}
	time.Sleep(ttl + 50*time.Millisecond)
	if _, err := os.Stat(m.path("f")); err != nil { // fresh attributes: a kept open
		t.Fatal(err)
	}
	opens := m.hook.opens.Load()
	f, err := os.Open(m.path("f"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if n := m.hook.opens.Load() - opens; n != 0 {
		t.Fatalf("open sent %d OPENs: not a kept open", n)
	}
	writeOld(t, p, v1, 2*time.Hour)
	time.Sleep(ttl + 50*time.Millisecond)
	// v0 is an hour old, v1 two hours.
	if fi, err := os.Stat(m.path("f")); err != nil || !fi.ModTime().Before(time.Now().Add(-90*time.Minute)) {
		t.Fatalf("the mount did not learn the new version: %v", err)
	}
	if err := unix.Fadvise(int(f.Fd()), 1<<20, 1<<20, unix.FADV_DONTNEED); err != nil {
		t.Fatal(err)
	}
	got := make([]byte, len(v0))
	if _, err := f.ReadAt(got, 0); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, v0) {
		same0, same1 := 0, 0
		for i := range got {
			if got[i] == v0[i] {
				same0++
			}
			if got[i] == v1[i] {
				same1++
			}
		}
		t.Fatalf("read %d bytes of the version opened and %d of the new one, want all of the one opened", same0, same1)
	}
}
