package fusefs

import (
	"bytes"
	"errors"
	"io/fs"
	"log"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"sshfsm/internal/cache"
	"sshfsm/internal/contentcache"
	"sshfsm/internal/namespace"
	"sshfsm/internal/testenv"
)

// ptMount is a disk-cached mount whose go-fuse debug log shows the
// requests that reach the daemon and the opens given a backing file.
type ptMount struct {
	*diskMount
	fsys  *filesys
	debug *testenv.LogBuffer
}

// mountPT mounts dir with the disk cache in cacheDir as Mount does, with
// go-fuse's debug log kept. With wantPT it skips when the kernel refuses
// this process passthrough.
func mountPT(t *testing.T, dir, cacheDir string, mode cache.Mode, directIO, wantPT bool) *ptMount {
	t.Helper()
	testenv.RequireFUSE(t)
	c, err := contentcache.Open(contentcache.Options{Dir: cacheDir, MaxSize: 1 << 30})
	if err != nil {
		t.Fatal(err)
	}
	o := defaultOpts()
	o.Mode, o.Content, o.ContentID, o.DirectIO = mode, c, "test-host", directIO
	tm := &testMount{dir: dir, mnt: t.TempDir(), logs: &testenv.LogBuffer{}}
	o.Logger = slog.New(slog.NewTextHandler(tm.logs, nil))
	hook := &hookRemote{}
	fsys := newFilesys(namespace.Single(hook.wrap(newRemote(t, dir))), o)
	fo := fsys.fsOptions(MountOptions{FsName: "test", Subtype: "sshfsm", Debug: true})
	debug := &testenv.LogBuffer{}
	fo.MountOptions.Logger = log.New(debug, "", 0)
	srv, err := mountWithReaders(tm.mnt, fsys.rawFS(fo), &fo.MountOptions)
	if err != nil {
		c.Close()
		t.Fatalf("mount: %v", err)
	}
	fsys.pt.probe(srv, o)
	tm.srv = srv
	m := &ptMount{diskMount: &diskMount{testMount: tm, hook: hook, cache: c}, fsys: fsys, debug: debug}
	t.Cleanup(func() {
		if t.Failed() {
			// The kernel fails an open whose I/O mode or backing file
			// conflicts with EIO, and says no more: the requests and
			// replies tell what the daemon answered.
			lines := strings.Split(strings.TrimSpace(debug.String()), "\n")
			t.Logf("last FUSE requests and replies:\n%s", strings.Join(lines[max(0, len(lines)-40):], "\n"))
		}
		if m.srv != nil {
			m.close(t)
		}
	})
	if wantPT && !fsys.pt.on.Load() {
		m.close(t)
		t.Skip("the kernel refuses FUSE passthrough to this process (RegisterBackingFd failed: needs CAP_SYS_ADMIN and CONFIG_FUSE_PASSTHROUGH)")
	}
	return m
}

// reads and backed count the READ requests that reached the daemon and
// the opens answered with a backing file (passthrough).
func (m *ptMount) reads() int  { return m.debug.Count(": READ ") }
func (m *ptMount) backed() int { return m.debug.Count(" backing=") }

// cachedFile writes a file on the server and has a first mount read it
// whole into cacheDir. It returns the content.
func cachedFile(t *testing.T, dir, cacheDir, name string, size int) []byte {
	t.Helper()
	want := randomBytes(size, int64(size))
	writeOld(t, filepath.Join(dir, name), want, time.Hour)
	m := mountDisk(t, dir, cacheDir, cache.Immutable)
	if got := readAll(t, m.path(name)); !bytes.Equal(got, want) {
		t.Fatal("first read differs from the server's file")
	}
	m.close(t)
	return want
}

// A file complete and verified in the disk cache is read by the kernel
// from the cache's data file: no READ reaches the daemon, read(2) and
// mmap see the server's bytes, and release closes the data file.
func TestPassthroughServesVerified(t *testing.T) {
	dir, cacheDir := t.TempDir(), t.TempDir()
	want := cachedFile(t, dir, cacheDir, "f", 3<<20+12345)
	m := mountPT(t, dir, cacheDir, cache.Immutable, false, true)
	testenv.HoldGC(t) // a fault not passed through would reach this process
	fds := openFDs(t)

	if got := readAll(t, m.path("f")); !bytes.Equal(got, want) {
		t.Fatal("read through passthrough differs from the server's file")
	}
	f, err := os.Open(m.path("f"))
	if err != nil {
		t.Fatal(err)
	}
	data, err := unix.Mmap(int(f.Fd()), 0, len(want), unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		t.Fatalf("mmap of a passthrough file: %v", err)
	}
	if !bytes.Equal(data, want) {
		t.Error("mmap of a passthrough file differs from the server's file")
	}
	_ = unix.Munmap(data)
	f.Close()

	if r := m.reads(); r != 0 {
		t.Errorf("%d READ requests reached the daemon, want 0", r)
	}
	if b := m.backed(); b != 2 {
		t.Errorf("%d opens were given a backing file, want 2", b)
	}
	if o, r := m.hook.opens.Load(), m.hook.reads.Load(); o != 0 || r != 0 {
		t.Errorf("%d opens and %d reads reached the server, want none", o, r)
	}
	waitFDs(t, fds)
}

// openFDs counts this process's descriptors.
func openFDs(t *testing.T) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	return len(ents)
}

// waitFDs waits (release is asynchronous to close(2)) until this process
// holds no more descriptors than want.
func waitFDs(t *testing.T, want int) {
	t.Helper()
	var got int
	for range 100 {
		if got = openFDs(t); got <= want {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Errorf("%d descriptors open after release, %d before: the data file leaked", got, want)
}

// While a descriptor is in passthrough, a writable open fails with
// ETXTBSY before reaching the server; once it is closed, the writer
// opens and its writes reach the server.
func TestPassthroughWriterWhilePassedThrough(t *testing.T) {
	dir, cacheDir := t.TempDir(), t.TempDir()
	want := cachedFile(t, dir, cacheDir, "f", 1<<20)
	m := mountPT(t, dir, cacheDir, cache.Immutable, false, true)
	r, err := os.Open(m.path("f"))
	if err != nil {
		t.Fatal(err)
	}
	if m.backed() != 1 {
		t.Fatalf("the read-only open was not passed through")
	}
	opens := m.hook.opens.Load()
	_, err = os.OpenFile(m.path("f"), os.O_WRONLY, 0)
	if !errors.Is(err, syscall.ETXTBSY) {
		t.Errorf("writable open while in passthrough: %v, want ETXTBSY", err)
	}
	if m.hook.opens.Load() != opens {
		t.Error("the refused writable open reached the server")
	}
	// Another reader shares the passthrough.
	if got := readAll(t, m.path("f")); !bytes.Equal(got, want) {
		t.Error("second reader differs from the server's file")
	}
	r.Close()
	if m.reads() != 0 {
		t.Errorf("%d READ requests reached the daemon, want 0", m.reads())
	}
	waitClosed(t, m, func() error {
		return os.WriteFile(m.path("f"), []byte("new"), 0o644)
	})
	if got, _ := os.ReadFile(filepath.Join(dir, "f")); string(got) != "new" {
		t.Errorf("server has %q after the write, want %q", got, "new")
	}
}

// waitClosed retries op while the kernel has not released the passthrough
// descriptors yet (release follows close(2) asynchronously).
func waitClosed(t *testing.T, m *ptMount, op func() error) {
	t.Helper()
	var err error
	for range 100 {
		if err = op(); !errors.Is(err, syscall.ETXTBSY) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err != nil {
		t.Fatalf("after the passthrough descriptors closed: %v", err)
	}
}

// A reader opened before the file was all in the cache is in the
// page-cache mode; later readers are not passed through while it is open
// (the kernel would fail their open), and are once it is closed. A
// writer's open does not fail while only page-cache readers are open, nor
// a reader's while a writer is.
func TestPassthroughAfterCachedDescriptors(t *testing.T) {
	dir, cacheDir := t.TempDir(), t.TempDir()
	want := randomBytes(2<<20, 7)
	writeOld(t, filepath.Join(dir, "f"), want, time.Hour)
	m := mountPT(t, dir, cacheDir, cache.Immutable, false, true)

	a, err := os.Open(m.path("f")) // nothing cached yet
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, len(want))
	if _, err := a.ReadAt(buf, 0); err != nil || !bytes.Equal(buf, want) {
		t.Fatalf("first reader: %v", err)
	}
	b, err := os.Open(m.path("f")) // complete, verified, but a is cached
	if err != nil {
		t.Fatalf("reader opened while another reader is in page-cache mode: %v", err)
	}
	if _, err := b.ReadAt(buf, 0); err != nil || !bytes.Equal(buf, want) {
		t.Fatalf("second reader: %v", err)
	}
	if m.backed() != 0 {
		t.Errorf("%d opens passed through while a page-cache reader was open", m.backed())
	}
	a.Close()
	b.Close()
	waitReleased(t, m)

	reads := m.reads()
	if got := readAll(t, m.path("f")); !bytes.Equal(got, want) {
		t.Error("passthrough read differs from the server's file")
	}
	if m.backed() != 1 || m.reads() != reads {
		t.Errorf("once they closed: %d backing files, %d new READs; want 1 and 0", m.backed(), m.reads()-reads)
	}
	waitReleased(t, m)

	r, err := os.Open(m.path("f")) // passed through again
	if err != nil {
		t.Fatal(err)
	}
	r.Close()
	waitReleased(t, m)
	w, err := os.OpenFile(m.path("f"), os.O_WRONLY, 0)
	if err != nil {
		t.Fatalf("writer: %v", err)
	}
	c, err := os.Open(m.path("f"))
	if err != nil {
		t.Fatalf("reader opened while a writer is open: %v", err)
	}
	if _, err := c.ReadAt(buf, 0); err != nil || !bytes.Equal(buf, want) {
		t.Fatalf("reader while a writer is open: %v", err)
	}
	c.Close()
	w.Close()
}

// waitReleased waits until the kernel released every handle counted for
// passthrough (release follows close(2) asynchronously).
func waitReleased(t *testing.T, m *ptMount) {
	t.Helper()
	for range 100 {
		m.fsys.pt.mu.Lock()
		n := len(m.fsys.pt.nodes)
		m.fsys.pt.mu.Unlock()
		if n == 0 {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatal("handles still counted long after their close")
}

// An entry complete but not verified during this boot (its marker is
// gone, as after a reboot) is not passed through; it is verified in the
// background, and the next open is.
func TestPassthroughVerifiesInBackground(t *testing.T) {
	dir, cacheDir := t.TempDir(), t.TempDir()
	const size = 8 << 20
	want := cachedFile(t, dir, cacheDir, "f", size)
	clearMarkers(t, cacheDir)
	m := mountPT(t, dir, cacheDir, cache.Immutable, false, true)

	f, err := os.Open(m.path("f"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Read(make([]byte, 1)); err != nil {
		t.Fatal(err)
	}
	f.Close()
	// The kernel releases a handle once its readahead is answered: from
	// then on, no READ of it is still to come.
	for i := 0; m.debug.Count(": RELEASE ") == 0; i++ {
		if i == 500 {
			t.Fatal("the first handle was not released 5 s after its close")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if m.backed() != 0 || m.reads() == 0 {
		t.Fatalf("unverified entry: %d backing files, %d READs; want 0 and some", m.backed(), m.reads())
	}
	e, err := m.cache.Entry(contentcache.Key{Host: "test-host", Path: "f", Size: size, Mtime: mtimeOf(t, dir, "f")})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Release()
	verified := false
	for range 200 {
		if vf, ok := e.Verified(); ok {
			vf.Close()
			verified = true
			break
		}
		time.Sleep(25 * time.Millisecond)
	}
	if !verified {
		t.Fatal("the entry was not verified in the background")
	}
	reads := m.reads()
	waitClosed(t, m, func() error {
		got, err := os.ReadFile(m.path("f"))
		if err == nil && !bytes.Equal(got, want) {
			t.Error("passthrough read differs from the server's file")
		}
		return err
	})
	if m.backed() != 1 || m.reads() != reads {
		t.Errorf("after verification: %d backing files, %d new READs; want 1 and 0", m.backed(), m.reads()-reads)
	}
}

func mtimeOf(t *testing.T, dir, name string) time.Time {
	t.Helper()
	st, err := os.Stat(filepath.Join(dir, name))
	if err != nil {
		t.Fatal(err)
	}
	return st.ModTime().Truncate(time.Second) // as SFTP reports it
}

// clearMarkers zeroes the "verified during this boot" marker of every
// record in cacheDir: what a new boot finds.
func clearMarkers(t *testing.T, cacheDir string) {
	t.Helper()
	n := 0
	err := filepath.WalkDir(filepath.Join(cacheDir, "content"), func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.Name() != "r" || !d.Type().IsRegular() {
			return err
		}
		f, err := os.OpenFile(p, os.O_WRONLY, 0)
		if err != nil {
			return err
		}
		defer f.Close()
		n++
		_, err = f.WriteAt(make([]byte, 128), 128)
		return err
	})
	if err != nil || n == 0 {
		t.Fatalf("clearing markers: %d records, %v", n, err)
	}
}

// Coherence modes that may see a file change (auto, strict) and direct_io
// never pass through: reads reach the daemon.
func TestPassthroughOnlyImmutable(t *testing.T) {
	for _, c := range []struct {
		mode     cache.Mode
		directIO bool
	}{{cache.Auto, false}, {cache.Strict, false}, {cache.Immutable, true}} {
		t.Run(c.mode.String()+"/direct_io="+strconv.FormatBool(c.directIO), func(t *testing.T) {
			dir, cacheDir := t.TempDir(), t.TempDir()
			want := cachedFile(t, dir, cacheDir, "f", 1<<20)
			m := mountPT(t, dir, cacheDir, c.mode, c.directIO, false)
			if got := readAll(t, m.path("f")); !bytes.Equal(got, want) {
				t.Fatal("read differs from the server's file")
			}
			if m.backed() != 0 || m.reads() == 0 {
				t.Errorf("%d backing files, %d READs; want none and some", m.backed(), m.reads())
			}
			w, err := os.OpenFile(m.path("f"), os.O_WRONLY, 0)
			if err != nil {
				t.Fatalf("writable open: %v", err)
			}
			w.Close()
		})
	}
}
