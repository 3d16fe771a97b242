package contentcache

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

func smallFile(c *Cache, k Key) string { return c.smallPath(entryID(k, c.bs)) }

func exists(t *testing.T, path string) bool {
	t.Helper()
	_, err := os.Lstat(path)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	return err == nil
}

// A small entry is one file, shared with others of the same content and
// with the stored copy; its digest is known at Fill; a new process reads
// it back, counts it, and Forget removes it.
func TestSmallLayout(t *testing.T) {
	dir := t.TempDir()
	c := openCache(t, dir, nil)
	const size = bs - 10
	src := source("small", size)
	ka, kb, kc := testKey("a", size), testKey("b", size), testKey("c", size)
	a := entry(t, c, ka)
	fillAll(t, a, src)
	if sum, ok := a.Digest(); !ok || sum != sha256Sum(src) {
		t.Fatal("digest of a small entry not known at Fill")
	}
	if c.jobsLeft.Load() != 0 {
		t.Error("a small entry was queued for hashing")
	}
	st, err := os.Stat(smallFile(c, ka))
	if err != nil || st.Size() != smallHdrLen+size {
		t.Fatalf("small file: %v, %v", st, err)
	}
	if exists(t, filepath.Dir(c.entryDir(entryID(ka, c.bs)))) {
		t.Error("a small entry made an entry directory")
	}
	b := entry(t, c, kb)
	fillAll(t, b, src)
	obj := c.smallObject(testKey("", 0).owner(), sha256Sum(src))
	if ino := inode(t, smallFile(c, ka)); inode(t, smallFile(c, kb)) != ino || inode(t, obj) != ino {
		t.Error("entries of the same small content do not share one file")
	}
	if c.Stats().Shared != 1 {
		t.Errorf("Shared = %d, want 1", c.Stats().Shared)
	}
	if !checkRead(t, b, src, 0, bs) {
		t.Error("shared small entry missed")
	}
	e, ok := c.ByDigest(sha256Sum(src), kc)
	if !ok {
		t.Fatal("ByDigest did not find stored small content")
	}
	defer e.Release()
	if inode(t, smallFile(c, kc)) != inode(t, obj) || len(readAll(t, e, src)) != 0 {
		t.Error("ByDigest entry is not the stored copy")
	}
	f, ok := e.Verified()
	if !ok {
		t.Fatal("complete small entry not Verified")
	}
	got, err := io.ReadAll(f)
	_ = f.Close()
	if err != nil || !bytes.Equal(got, src) {
		t.Errorf("Verified file of a small entry: %d bytes, %v", len(got), err)
	}
	// A second open gets the same checked copy, as a file of its own.
	f2, ok := e.Verified()
	if !ok {
		t.Fatal("small entry not Verified a second time")
	}
	got, err = io.ReadAll(f2)
	_ = f2.Close()
	if err != nil || !bytes.Equal(got, src) {
		t.Errorf("second Verified file of a small entry: %d bytes, %v", len(got), err)
	}

	c2 := openCache(t, dir, nil)
	<-c2.scanned
	if n := c2.Stats().Entries; n != 3 {
		t.Errorf("scan counted %d entries, want 3", n)
	}
	if by := c2.Stats().Bytes; by <= 0 || by > 3*4096 {
		t.Errorf("scan counted %d bytes for one shared small file", by)
	}
	a2 := entry(t, c2, ka)
	if !a2.Complete() || len(readAll(t, a2, src)) != 0 {
		t.Error("small entry not read back by another Cache")
	}
	c2.Forget(ka.Host, ka.Path)
	if exists(t, smallFile(c, ka)) || !exists(t, smallFile(c, kb)) {
		t.Error("Forget did not remove exactly the path's small entry")
	}
	if a2.Complete() || checkRead(t, a2, src, 0, 1) {
		t.Error("forgotten small entry still hits")
	}
}

// A damaged small file never serves wrong bytes: bad data is dropped at
// its first read and the file removed; a bad header or a torn file reads
// as absent. A refill makes a good file again.
func TestSmallDamage(t *testing.T) {
	const size = 3000
	cases := []struct {
		name   string
		mutate func(t *testing.T, path string)
		loaded bool // still Complete after opening: the damage is in the data
	}{
		{"data byte", func(t *testing.T, p string) { flipAt(t, p, smallHdrLen+1234) }, true},
		{"data zeroed", func(t *testing.T, p string) { zeroAt(t, p, smallHdrLen, size) }, true},
		{"header byte", func(t *testing.T, p string) { flipAt(t, p, smallHdrCRC) }, false},
		{"header zeroed", func(t *testing.T, p string) { zeroAt(t, p, 0, smallHdrLen) }, false},
		{"torn", func(t *testing.T, p string) { truncateTo(t, p, smallHdrLen+size-1) }, false},
		{"empty", func(t *testing.T, p string) { truncateTo(t, p, 0) }, false},
		{"grown", func(t *testing.T, p string) { truncateTo(t, p, smallHdrLen+size+1) }, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			c := openCache(t, dir, nil)
			k := testKey("dmg", size)
			src := source(tc.name, size)
			fillAll(t, entry(t, c, k), src)
			// The stored copy is the same file: damage it through the
			// entry's name, then drop the stored copy's name so that the
			// refill cannot share it (it would be checked and removed).
			tc.mutate(t, smallFile(c, k))

			c2 := openCache(t, dir, nil)
			e := entry(t, c2, k)
			if e.Complete() != tc.loaded {
				t.Fatalf("Complete() = %v after damage, want %v", e.Complete(), tc.loaded)
			}
			if checkRead(t, e, src, 0, size) {
				t.Fatal("damaged small entry hit")
			}
			if _, ok := e.Verified(); ok {
				t.Fatal("damaged small entry Verified")
			}
			if exists(t, smallFile(c2, k)) {
				t.Error("damaged small file not removed")
			}
			if got := e.Missing(0, size); len(got) != 1 || got[0] != (Range{0, size}) {
				t.Errorf("Missing = %v", got)
			}
			fillAll(t, e, src)
			if !checkRead(t, e, src, 0, size) {
				t.Error("refilled small entry missed")
			}
			e3 := entry(t, openCache(t, dir, nil), k)
			if len(readAll(t, e3, src)) != 0 {
				t.Error("refilled small entry not good in a new Cache")
			}
		})
	}
}

// A stored copy whose bytes differ from a Fill's is not shared: it is
// replaced by the new file.
func TestSmallDamagedCopy(t *testing.T) {
	c := openCache(t, t.TempDir(), nil)
	const size = 100
	src := source("copy", size)
	ka, kb := testKey("a", size), testKey("b", size)
	fillAll(t, entry(t, c, ka), src)
	flipAt(t, smallFile(c, ka), smallHdrLen+7) // also the stored copy: one file
	b := entry(t, c, kb)
	fillAll(t, b, src)
	obj := c.smallObject(testKey("", 0).owner(), sha256Sum(src))
	if inode(t, smallFile(c, kb)) == inode(t, smallFile(c, ka)) || inode(t, obj) != inode(t, smallFile(c, kb)) {
		t.Error("a damaged stored copy was shared or not replaced")
	}
	if len(readAll(t, b, src)) != 0 {
		t.Error("entry filled next to a damaged copy misses")
	}
}

// Entries of the layout before small files (a directory with r and d)
// whose content fits in one block are removed by the scan; larger ones
// are kept and read.
func TestSmallMigration(t *testing.T) {
	dir := t.TempDir()
	c := openCache(t, dir, nil)
	<-c.scanned
	small, large := testKey("old-small", 100), testKey("old-large", 3*bs)
	for _, k := range []Key{small, large} {
		if err := c.createPair(c.entryDir(entryID(k, c.bs)), header{size: k.Size, bs: c.bs}, nil); err != nil {
			t.Fatal(err)
		}
	}
	src := source("large", 3*bs)
	fillAll(t, entry(t, c, large), src)
	_ = c.Close()

	c2 := openCache(t, dir, nil)
	<-c2.scanned
	if exists(t, c.entryDir(entryID(small, c.bs))) {
		t.Error("old-layout entry of one block kept")
	}
	if n := c2.Stats().Entries; n != 1 {
		t.Errorf("scan counted %d entries, want 1", n)
	}
	if e := entry(t, c2, large); !e.Complete() || len(readAll(t, e, src)) != 0 {
		t.Error("old-layout entry of several blocks lost")
	}
}

// Eviction removes small entries, least recently used first.
func TestSmallEvict(t *testing.T) {
	dir := t.TempDir()
	const n = 12
	c := openCache(t, dir, func(o *Options) { o.MaxSize = 8 * 4096 })
	<-c.scanned
	for i := range n {
		k := testKey(string(rune('a'+i)), 2000)
		e := entry(t, c, k)
		fillAll(t, e, source(k.Path, k.Size))
		e.Release()
	}
	if got := c.Stats().Evictions; got == 0 {
		t.Fatal("no small entry evicted past MaxSize")
	}
	var files int
	for _, xx := range readNames(filepath.Join(c.root, smallDir)) {
		files += len(readNames(filepath.Join(c.root, smallDir, xx)))
	}
	if files == 0 || files >= n {
		t.Errorf("%d small files left of %d", files, n)
	}
	last := testKey(string(rune('a'+n-1)), 2000)
	if !exists(t, smallFile(c, last)) {
		t.Error("the most recently used small entry was evicted")
	}
}

func flipAt(t *testing.T, path string, off int64) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	b := make([]byte, 1)
	if _, err := f.ReadAt(b, off); err != nil {
		t.Fatal(err)
	}
	b[0] ^= 0x40
	if _, err := f.WriteAt(b, off); err != nil {
		t.Fatal(err)
	}
}

func zeroAt(t *testing.T, path string, off, n int64) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteAt(make([]byte, n), off); err != nil {
		t.Fatal(err)
	}
}

func truncateTo(t *testing.T, path string, n int64) {
	t.Helper()
	if err := unix.Truncate(path, n); err != nil {
		t.Fatal(err)
	}
}
