package fusefs

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hanwen/go-fuse/v2/fuse"

	"sshfsm/internal/cache"
	"sshfsm/internal/contentcache"
	"sshfsm/internal/namespace"
	"sshfsm/internal/remote"
	"sshfsm/internal/testenv"
)

// mountDiskHooked is mountDisk over a remote whose calls hook, set up
// before, may replace.
func mountDiskHooked(t *testing.T, dir, cacheDir string, hook *hookRemote) *diskMount {
	t.Helper()
	return mountDiskAs(t, dir, cacheDir, "test-host", hook, nil)
}

// mountDiskAs is mountDiskHooked with the mount's content ID (the host
// it names in the disk cache) and, with wrap, the branch made of hook.
func mountDiskAs(t *testing.T, dir, cacheDir, id string, hook *hookRemote, wrap func(*hookRemote) remote.Remote) *diskMount {
	t.Helper()
	testenv.RequireFUSE(t)
	c, err := contentcache.Open(contentcache.Options{Dir: cacheDir, MaxSize: 1 << 30})
	if err != nil {
		t.Fatal(err)
	}
	o := defaultOpts()
	o.Mode, o.Content, o.ContentID = cache.Auto, c, id
	tm := &testMount{dir: dir, mnt: t.TempDir(), logs: &testenv.LogBuffer{}}
	o.Logger = slog.New(slog.NewTextHandler(tm.logs, nil))
	var r remote.Remote = hook.wrap(newRemote(t, dir))
	if wrap != nil {
		r = wrap(hook)
	}
	srv, err := Mount(tm.mnt, namespace.Single(r), o, MountOptions{FsName: "test", Subtype: "sshfsm"})
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

// hostileSizes are the sizes a lying server reports for files named
// "lie-<name>": the largest int64, 2^62, -1 and MinInt64 read as
// unsigned, 8 TiB, and the largest sizes the disk cache holds.
var hostileSizes = map[string]uint64{
	"max":    math.MaxInt64,
	"pow62":  1 << 62,
	"minus1": math.MaxUint64,
	"minint": 1 << 63,
	"8tib":   8 << 40,
	// The largest the disk cache holds, and just under it: cached.
	"16tib": contentcache.MaxFileSize,
	"under": contentcache.MaxFileSize - 1,
}

// lieAboutSizes makes hook report hostileSizes for the files named so, in
// listings and stats alike.
func lieAboutSizes(hook *hookRemote) {
	lie := func(name string, a remote.Attr) remote.Attr {
		if size, ok := hostileSizes[strings.TrimPrefix(name, "lie-")]; ok && strings.HasPrefix(name, "lie-") {
			a.Size = size
		}
		return a
	}
	hook.lstat = func(ctx context.Context, p string) (remote.Attr, error) {
		a, err := hook.Remote.Lstat(ctx, p)
		return lie(filepath.Base(p), a), err
	}
	hook.readDir = func(ctx context.Context, p string) ([]remote.DirEntry, error) {
		ents, err := hook.Remote.ReadDir(ctx, p)
		for i := range ents {
			ents[i].Attr = lie(ents[i].Name, ents[i].Attr)
		}
		return ents, err
	}
}

// within runs op and fails the test unless it ends: an operation of the
// mount that never returns is a wedged daemon.
func within(t *testing.T, what string, op func()) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		op()
	}()
	if !testenv.Poll(func() bool {
		select {
		case <-done:
			return true
		default:
			return false
		}
	}) {
		t.Fatalf("%s never returned: the mount is wedged", what)
	}
}

// A server that lies about file sizes (2^63-1, 2^62, -1, MinInt64, 8 TiB)
// neither wedges the mount nor kills the daemon: stat, open and read of
// those files return (their real bytes, or an error), and a normal file
// opened afterwards is read, and then served from the disk cache.
func TestHostileSizesNeitherWedgeNorKill(t *testing.T) {
	dir, cacheDir := t.TempDir(), t.TempDir()
	content := []byte("ten bytes\n")
	for name := range hostileSizes {
		writeOld(t, filepath.Join(dir, "lie-"+name), content, time.Hour)
	}
	normal := randomBytes(2<<20+4321, 7)
	writeOld(t, filepath.Join(dir, "normal"), normal, time.Hour)
	hook := &hookRemote{}
	lieAboutSizes(hook)
	m := mountDiskHooked(t, dir, cacheDir, hook)

	for name, size := range hostileSizes {
		p := m.path("lie-" + name)
		within(t, "stat of lie-"+name, func() {
			fi, err := os.Stat(p)
			if err != nil {
				t.Logf("stat lie-%s: %v", name, err)
				return
			}
			if fi.Size() < 0 || uint64(fi.Size()) != min(size, math.MaxInt64) {
				t.Errorf("stat lie-%s: size %d, want the server's %d within int64", name, fi.Size(), size)
			}
		})
		within(t, "read of lie-"+name, func() {
			f, err := os.Open(p)
			if err != nil {
				t.Logf("open lie-%s: %v", name, err)
				return
			}
			defer f.Close()
			got, err := io.ReadAll(io.LimitReader(f, 1<<20))
			if err == nil && !bytes.Equal(got, content) {
				t.Errorf("read lie-%s: %q, want the server's bytes %q", name, got, content)
			}
		})
	}
	for range 2 {
		within(t, "read of a normal file", func() {
			if got := readAll(t, m.path("normal")); !bytes.Equal(got, normal) {
				t.Errorf("a normal file read after the hostile ones: %d bytes, not its content", len(got))
			}
		})
	}
	if hits := m.cache.Stats().HitBytes; hits == 0 {
		t.Errorf("the normal file was never served from the disk cache after the hostile ones")
	}
}

// Every attribute a server may send reaches the kernel as a size it keeps
// as a signed number, with a block count that matches it.
func FuzzFillAttr(f *testing.F) {
	for _, size := range []uint64{0, 1, 511, 512, math.MaxInt64, 1 << 63, math.MaxUint64, 1 << 62} {
		f.Add(size, uint32(0o100644))
	}
	u := uint32(0o22)
	fsys := &filesys{opts: Options{Umask: &u, IDMap: fakeMap{}}}
	f.Fuzz(func(t *testing.T, size uint64, mode uint32) {
		var out fuse.Attr
		fsys.fillAttr(&out, remote.Attr{Size: size, Mode: mode})
		if out.Size > math.MaxInt64 || out.Size != min(size, math.MaxInt64) {
			t.Errorf("size %d reported as %d", size, out.Size)
		}
		if out.Blocks*512 < out.Size || out.Blocks*512-out.Size >= 512 {
			t.Errorf("size %d: %d blocks", out.Size, out.Blocks)
		}
	})
}

// A file replaced on the server while the mount's attributes of it are
// still fresh is read with the old version's key: its bytes are not
// stored under that version, whose file, restored later with its size
// and mtime (a backup put back), reads as itself and not as the bytes of
// the file that replaced it for a while.
func TestDiskCacheStoresOnlyTheVersionOpened(t *testing.T) {
	dir, cacheDir := t.TempDir(), t.TempDir()
	const size = 2<<20 + 99
	original, replacement := randomBytes(size, 41), randomBytes(size, 42)
	p := filepath.Join(dir, "f")
	writeOld(t, p, original, time.Hour)
	fi, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	m := mountDiskHooked(t, dir, cacheDir, &hookRemote{})
	if _, err := os.Stat(m.path("f")); err != nil {
		t.Fatal(err)
	}
	writeOld(t, p, replacement, 2*time.Hour) // same size, another mtime
	if got := readAll(t, m.path("f")); !bytes.Equal(got, replacement) && !bytes.Equal(got, original) {
		t.Fatal("the file read as neither version")
	}
	m.close(t)

	mustWrite(t, p, original)
	mustChtimes(t, p, fi.ModTime())
	m = mountDiskHooked(t, dir, cacheDir, &hookRemote{})
	if got := readAll(t, m.path("f")); !bytes.Equal(got, original) {
		t.Errorf("the restored file read as other bytes (the replacement's: %v)", bytes.Equal(got, replacement))
	}
}
