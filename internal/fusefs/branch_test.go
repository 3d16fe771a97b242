package fusefs

import (
	"bytes"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"sshfsm/internal/cache"
	"sshfsm/internal/contentcache"
	"sshfsm/internal/namespace"
	"sshfsm/internal/remote"
	"sshfsm/internal/testenv"
)

// downRemote is a branch whose host reads as down when down is set.
type downRemote struct {
	*hookRemote
	down    bool
	up      func() bool // when set, whether the host is up, instead of down
	changed chan struct{}
}

func (d *downRemote) Up() bool {
	if d.up != nil {
		return d.up()
	}
	return !d.down
}
func (d *downRemote) Changed() <-chan struct{} { return d.changed }

// mountUnion mounts the union of dirs, the first the highest, with the
// disk cache in cacheDir; the branches at the indexes in down read as
// hosts that are down.
func mountUnion(t *testing.T, cacheDir string, dirs []string, down ...int) (*testMount, []*hookRemote) {
	t.Helper()
	return mountUnionUp(t, cacheDir, dirs, func(i int) func() bool {
		isDown := slices.Contains(down, i)
		return func() bool { return !isDown }
	})
}

// mountUnionUp is mountUnion with, for each branch i, up(i) telling
// whether its host is up.
func mountUnionUp(t *testing.T, cacheDir string, dirs []string, up func(i int) func() bool) (*testMount, []*hookRemote) {
	t.Helper()
	testenv.RequireFUSE(t)
	c, err := contentcache.Open(contentcache.Options{Dir: cacheDir, MaxSize: 1 << 30})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	var branches []namespace.Branch
	var hooks []*hookRemote
	for i, dir := range dirs {
		h := &hookRemote{}
		d := &downRemote{hookRemote: h, up: up(i), changed: make(chan struct{})}
		h.wrap(newRemote(t, dir))
		branches = append(branches, namespace.Branch{Name: "h" + string(rune('a'+i)) + ":" + dir, Remote: d})
		hooks = append(hooks, h)
	}
	ns, err := namespace.NewUnion(branches, namespace.UnionOptions{})
	if err != nil {
		t.Fatal(err)
	}
	o := defaultOpts()
	o.Mode, o.Content, o.ContentID = cache.Auto, c, "test-union"
	tm := &testMount{mnt: t.TempDir(), logs: &testenv.LogBuffer{}}
	o.Logger = slog.New(slog.NewTextHandler(tm.logs, nil))
	srv, err := Mount(tm.mnt, ns, o, MountOptions{FsName: "test", Subtype: "sshfsm"})
	if err != nil {
		t.Fatalf("Mount: %v", err)
	}
	tm.srv = srv
	t.Cleanup(func() {
		if tm.srv != nil {
			tm.unmount(t)
		}
	})
	return tm, hooks
}

// Two branches of a union hold files of the same name, size and mtime and
// different bytes. Once the first branch is down, the mount shows the
// second's file, and reads its bytes from it, not the first's from the
// disk cache.
func TestDiskCacheKeysContentByBranch(t *testing.T) {
	dirA, dirB, cacheDir := t.TempDir(), t.TempDir(), t.TempDir()
	const size = 2<<20 + 99
	first, second := randomBytes(size, 21), randomBytes(size, 22)
	writeOld(t, filepath.Join(dirA, "f"), first, time.Hour)
	writeOld(t, filepath.Join(dirB, "f"), second, time.Hour)
	mtime := time.Now().Add(-time.Hour).Truncate(time.Second)
	for _, p := range []string{filepath.Join(dirA, "f"), filepath.Join(dirB, "f")} {
		mustChtimes(t, p, mtime)
	}

	m, _ := mountUnion(t, cacheDir, []string{dirA, dirB})
	if got := readAll(t, m.path("f")); !bytes.Equal(got, first) {
		t.Fatal("the first branch's file read wrong")
	}
	m.unmount(t)
	m.srv = nil

	m, hooks := mountUnion(t, cacheDir, []string{dirA, dirB}, 0)
	if got := readAll(t, m.path("f")); !bytes.Equal(got, second) {
		t.Errorf("after failing over, the file read as the other branch's bytes (equal to the first's: %v)", bytes.Equal(got, first))
	}
	if len(hooks[1].readsOf("f")) == 0 {
		t.Error("no READ reached the branch serving the file")
	}
}

// A union whose first branch comes back up after an open learnt which
// branch serves a file, and before it opened the file, reads the first
// branch's file there: those bytes are not stored as the second branch's
// file, whose next open (first branch down again) reads its own bytes.
func TestDiskCacheStoresNoBranchUnderAnother(t *testing.T) {
	dirA, dirB, cacheDir := t.TempDir(), t.TempDir(), t.TempDir()
	const size = 2<<20 + 99
	first, second := randomBytes(size, 31), randomBytes(size, 32)
	writeOld(t, filepath.Join(dirA, "f"), first, time.Hour)
	writeOld(t, filepath.Join(dirB, "f"), second, time.Hour)
	mtime := time.Now().Add(-time.Hour).Truncate(time.Second)
	for _, p := range []string{filepath.Join(dirA, "f"), filepath.Join(dirB, "f")} {
		mustChtimes(t, p, mtime)
	}
	// The first branch is down until armed; then it reads as down once
	// more (the open asking which branch serves the file) and up after.
	var armed, asked atomic.Bool
	m, _ := mountUnionUp(t, cacheDir, []string{dirA, dirB}, func(i int) func() bool {
		if i != 0 {
			return func() bool { return true }
		}
		return func() bool { return armed.Load() && !asked.CompareAndSwap(false, true) }
	})
	if _, err := os.Stat(m.path("f")); err != nil {
		t.Fatal(err)
	}
	armed.Store(true)
	if got := readAll(t, m.path("f")); !bytes.Equal(got, first) && !bytes.Equal(got, second) {
		t.Fatal("the file read as neither branch's bytes")
	}
	m.unmount(t)
	m.srv = nil

	m, _ = mountUnion(t, cacheDir, []string{dirA, dirB}, 0)
	if got := readAll(t, m.path("f")); !bytes.Equal(got, second) {
		t.Errorf("the second branch's file read as other bytes (the first branch's: %v)", bytes.Equal(got, first))
	}
}

func mustChtimes(t *testing.T, p string, mtime time.Time) {
	t.Helper()
	if err := os.Chtimes(p, mtime, mtime); err != nil {
		t.Fatal(err)
	}
}

var _ remote.Health = (*downRemote)(nil)
