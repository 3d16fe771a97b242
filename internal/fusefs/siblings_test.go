package fusefs

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"sshfsm/internal/cache"
)

// waitFill waits until the disk cache has stored want bytes in all.
func waitFill(t *testing.T, m *diskMount, want int64) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for m.cache.Stats().FillBytes < want {
		if time.Now().After(deadline) {
			t.Fatalf("disk cache stored %d bytes, want %d", m.cache.Stats().FillBytes, want)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// fileChecks returns a check that name reads through m as files holds it,
// and the total size of names in files.
func fileChecks(t *testing.T, m *diskMount, files map[string][]byte) (check func(string), total func(...string) int64) {
	check = func(name string) {
		t.Helper()
		if got := readAll(t, m.path(name)); !bytes.Equal(got, files[name]) {
			t.Fatalf("%s differs", name)
		}
	}
	total = func(names ...string) (n int64) {
		for _, name := range names {
			n += int64(len(files[name]))
		}
		return n
	}
	return check, total
}

// Reading two small files of a directory from the server fetches its
// other small files into the disk cache: the reader's next files are
// opened and read without asking the server. Files too large or modified
// within the racy window are left alone. A walk going down fetches a
// subdirectory's files after the first file read there; a lone file read
// in a directory fetches nothing else.
func TestSiblingsFetchedAhead(t *testing.T) {
	dir, cacheDir := t.TempDir(), t.TempDir()
	for _, d := range []string{"d/sub", "e", "h"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	files := map[string][]byte{}
	var dFiles, subFiles []string
	for i := range 12 {
		name := fmt.Sprintf("d/f%02d", i)
		files[name] = randomBytes(1000+i*500, int64(i))
		dFiles = append(dFiles, name)
	}
	for i := range 4 {
		name := fmt.Sprintf("d/sub/s%d", i)
		files[name] = randomBytes(3000+i, int64(100+i))
		subFiles = append(subFiles, name)
	}
	var hFiles []string
	for i := range 3 {
		files[fmt.Sprintf("e/g%d", i)] = randomBytes(2000, int64(200+i))
		name := fmt.Sprintf("h/x%d", i)
		files[name] = randomBytes(2500, int64(300+i))
		hFiles = append(hFiles, name)
	}
	for name, b := range files {
		writeOld(t, filepath.Join(dir, name), b, time.Hour)
	}
	writeOld(t, filepath.Join(dir, "d/big"), randomBytes(siblingMax+1, 7), time.Hour)
	mustWrite(t, filepath.Join(dir, "d/new"), []byte("just written"))
	m := mountDisk(t, dir, cacheDir, cache.Auto)
	check, total := fileChecks(t, m, files)

	// local reads names, which must all come from the disk cache.
	local := func(what string, names []string) {
		t.Helper()
		opens, reads := m.hook.opens.Load(), m.hook.reads.Load()
		for _, name := range names {
			check(name)
		}
		if o, r := m.hook.opens.Load()-opens, m.hook.reads.Load()-reads; o != 0 || r != 0 {
			t.Errorf("the rest of %s sent %d OPENs and %d READs, want none", what, o, r)
		}
	}

	check("e/g0")
	check(dFiles[0])
	check(dFiles[1])
	waitFill(t, m, total(append([]string{"e/g0"}, dFiles...)...))
	local("d", dFiles[2:])
	for _, name := range []string{"d/big", "d/new", "e/g1", "e/g2"} {
		if n := len(m.hook.readsOf(name)); n != 0 {
			t.Errorf("%s was read %d times, want none", name, n)
		}
	}

	// The walk goes down into d/sub: its first file fetches the others.
	filled := m.cache.Stats().FillBytes
	check(subFiles[0])
	waitFill(t, m, filled+total(subFiles...))
	local("d/sub", subFiles[1:])

	// A directory read (readdir) and then one file of it: the others.
	if _, err := os.ReadDir(m.path("h")); err != nil {
		t.Fatal(err)
	}
	filled = m.cache.Stats().FillBytes
	check(hFiles[0])
	waitFill(t, m, filled+total(hFiles...))
	local("h", hFiles[1:])
}

// A file whose length is not the one its directory's listing gave is not
// stored by the fetch of its siblings; the reader of it gets its current
// bytes.
func TestSiblingsSkipChangedFile(t *testing.T) {
	dir, cacheDir := t.TempDir(), t.TempDir()
	for i := range 3 {
		writeOld(t, filepath.Join(dir, fmt.Sprintf("f%d", i)), randomBytes(4000, int64(i)), time.Hour)
	}
	m := mountDisk(t, dir, cacheDir, cache.Auto)
	readAll(t, m.path("f0")) // lists the directory
	// Grown on the server, with its old mtime: the listing still says
	// 4000 bytes.
	grown := randomBytes(5000, 9)
	writeOld(t, filepath.Join(dir, "f2"), grown, time.Hour)
	readAll(t, m.path("f1"))
	deadline := time.Now().Add(10 * time.Second)
	for len(m.hook.readsOf("f2")) == 0 {
		if time.Now().After(deadline) {
			t.Fatal("f2 was never fetched with its siblings")
		}
		time.Sleep(10 * time.Millisecond)
	}
	time.Sleep(100 * time.Millisecond) // what a store would have taken
	if got := m.cache.Stats().FillBytes; got != 8000 {
		t.Errorf("disk cache stored %d bytes, want the 8000 of f0 and f1", got)
	}
}

// filesRead counts the names among names the server was asked to read.
func filesRead(m *diskMount, names []string) int {
	n := 0
	for _, name := range names {
		if len(m.hook.readsOf(name)) > 0 {
			n++
		}
	}
	return n
}

// waitSettled waits until the disk cache has stored nothing more for a
// while, and returns the number of names read from the server.
func waitSettled(t *testing.T, m *diskMount, names []string) int {
	t.Helper()
	last, since := int64(-1), time.Now()
	for time.Since(since) < 300*time.Millisecond {
		if f := m.cache.Stats().FillBytes; f != last {
			last, since = f, time.Now()
		}
		time.Sleep(10 * time.Millisecond)
	}
	return filesRead(m, names)
}

// The fetch of a large directory's files keeps siblingWindow files ahead
// of the files its readers opened, in the order of its listing.
func TestSiblingsWindow(t *testing.T) {
	dir, cacheDir := t.TempDir(), t.TempDir()
	for i := range 3 * siblingWindow {
		writeOld(t, filepath.Join(dir, fmt.Sprintf("f%03d", i)), randomBytes(500, int64(i)), time.Hour)
	}
	m := mountDisk(t, dir, cacheDir, cache.Auto)
	d, err := os.Open(m.mnt)
	if err != nil {
		t.Fatal(err)
	}
	names, err := d.Readdirnames(-1) // in the order readers get
	d.Close()
	if err != nil || len(names) != 3*siblingWindow {
		t.Fatalf("readdir: %d names, %v", len(names), err)
	}
	// A file of a directory just listed.
	readAll(t, m.path(names[0]))
	if n := waitSettled(t, m, names); n != 1+siblingWindow {
		t.Fatalf("after reading 1 file, %d were read from the server, want %d", n, 1+siblingWindow)
	}
	const more = 10
	for _, name := range names[1 : 1+more] {
		readAll(t, m.path(name))
	}
	if n := waitSettled(t, m, names); n != 1+siblingWindow+more {
		t.Fatalf("after reading %d more, %d files were read from the server, want %d", more, n, 1+siblingWindow+more)
	}
}

// Once a directory's files are under way, the files of its
// subdirectories whose listings are cached come next: a walker finds them
// fetched when it gets there. A subdirectory fetched so has its own
// subdirectories fetched once a reader opens a file in it.
func TestSiblingsAheadOfWalk(t *testing.T) {
	dir, cacheDir := t.TempDir(), t.TempDir()
	files := map[string][]byte{}
	for i, name := range []string{"a/f0", "a/f1", "a/b/g0", "a/b/g1", "a/c/h0", "a/b/d/k0", "a/b/d/k1"} {
		if err := os.MkdirAll(filepath.Join(dir, filepath.Dir(name)), 0o755); err != nil {
			t.Fatal(err)
		}
		files[name] = randomBytes(1500+10*i, int64(i))
		writeOld(t, filepath.Join(dir, name), files[name], time.Hour)
	}
	m := mountDisk(t, dir, cacheDir, cache.Auto)
	check, total := fileChecks(t, m, files)
	// Lookups list the directories, as a walk's listings ahead would.
	for _, name := range []string{"a/b/g0", "a/c/h0", "a/b/d/k0"} {
		if _, err := os.Stat(m.path(name)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := os.ReadDir(m.path("a")); err != nil {
		t.Fatal(err)
	}
	check("a/f0")
	waitFill(t, m, total("a/f0", "a/f1", "a/b/g0", "a/b/g1", "a/c/h0"))
	if n := len(m.hook.readsOf("a/b/d/k0")); n != 0 {
		t.Errorf("a/b/d fetched before a reader was in a/b (%d reads)", n)
	}
	// local reads names, fetched once each, from the disk cache; other
	// files may be fetched meanwhile.
	local := func(names ...string) {
		t.Helper()
		for _, name := range names {
			check(name)
			if o, r := m.hook.opensOf(name), len(m.hook.readsOf(name)); o != 1 || r != 1 {
				t.Errorf("%s: %d OPENs and %d READs in all, want the fetch's one", name, o, r)
			}
		}
	}
	filled := m.cache.Stats().FillBytes
	local("a/b/g0", "a/b/g1", "a/c/h0")
	waitFill(t, m, filled+total("a/b/d/k0", "a/b/d/k1"))
	local("a/b/d/k0", "a/b/d/k1")
}

// A reader that opens a file whose fetch with its siblings is under way
// sends no OPEN of its own: its read waits for that fetch and is answered
// from the disk cache.
func TestSiblingsOpenDuringFetch(t *testing.T) {
	dir, cacheDir := t.TempDir(), t.TempDir()
	files := map[string][]byte{}
	for i := range 3 {
		name := fmt.Sprintf("f%d", i)
		files[name] = randomBytes(3000, int64(i))
		writeOld(t, filepath.Join(dir, name), files[name], time.Hour)
	}
	m := mountDisk(t, dir, cacheDir, cache.Auto)
	held, release := make(chan struct{}), make(chan struct{})
	hold := func(p string) {
		if p == "f1" {
			close(held)
			<-release
		}
	}
	m.hook.beforeRead.Store(&hold)
	if _, err := os.ReadDir(m.mnt); err != nil {
		t.Fatal(err)
	}
	readAll(t, m.path("f0")) // starts the fetch of f1 and f2
	select {
	case <-held:
	case <-time.After(10 * time.Second):
		t.Fatal("f1 was not fetched")
	}
	f, err := os.Open(m.path("f1"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if n := m.hook.opensOf("f1"); n != 1 {
		t.Errorf("f1 was opened %d times on the server, want the fetch's one", n)
	}
	time.AfterFunc(100*time.Millisecond, func() { close(release) })
	got, err := io.ReadAll(f)
	if err != nil || !bytes.Equal(got, files["f1"]) {
		t.Fatalf("read of f1: %d bytes, %v", len(got), err)
	}
	if o, r := m.hook.opensOf("f1"), len(m.hook.readsOf("f1")); o != 1 || r != 1 {
		t.Errorf("f1: %d OPENs and %d READs, want the fetch's one", o, r)
	}
}
