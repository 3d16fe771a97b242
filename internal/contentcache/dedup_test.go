package contentcache

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

func inode(t *testing.T, path string) uint64 {
	t.Helper()
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		t.Fatal(err)
	}
	return st.Ino
}

func TestDedup(t *testing.T) {
	dir := t.TempDir()
	size := int64(5*bs + 100)
	src := source("same", size)
	sum := sha256Sum(src)
	ka, kb, kc := testKey("a", size), testKey("b", size), testKey("c", size)
	c := openCache(t, dir, nil)

	a := entry(t, c, ka)
	fillAll(t, a, src)
	waitJobs(t, c)
	if got, ok := a.Digest(); !ok || got != sum {
		t.Fatal("no digest computed for a complete entry")
	}
	b := entry(t, c, kb)
	fillBlocks(t, b, src, 0, 1, 2)
	fillBlocks(t, b, src, 3, 4, 5)
	waitJobs(t, c)
	if inode(t, dataFile(c, ka)) != inode(t, dataFile(c, kb)) {
		t.Fatal("two entries of the same content keep two copies")
	}
	if inode(t, recFile(c, ka)) != inode(t, recFile(c, kb)) {
		t.Fatal("two entries of the same content keep two records")
	}
	if got := c.Stats().Shared; got != 1 {
		t.Errorf("Stats.Shared = %d, want 1", got)
	}
	a.Release()
	b.Release()
	if n := len(c.scan().groups); n != 1 {
		t.Errorf("%d stored copies of one content", n)
	}

	// A third Key whose remote digest is known gets the stored copy.
	e, ok := c.ByDigest(sum, kc)
	if !ok {
		t.Fatal("ByDigest did not find the stored content")
	}
	defer e.Release()
	if !e.Complete() || len(readAll(t, e, src)) != 0 {
		t.Fatal("ByDigest entry not complete")
	}
	if _, ok := e.Verified(); !ok {
		t.Error("ByDigest entry of content verified during this boot is not Verified")
	}
	if inode(t, dataFile(c, kc)) != inode(t, dataFile(c, ka)) {
		t.Error("ByDigest made a copy")
	}
	if _, ok := c.ByDigest(sha256Sum([]byte("x")), testKey("d", size)); ok {
		t.Error("ByDigest found content never stored")
	}
	if _, ok := c.ByDigest(sum, testKey("e", size+1)); ok {
		t.Error("ByDigest gave content of another size")
	}

	// The remote says b has other content: b goes, a stays.
	b = entry(t, c, kb)
	b.SetDigest(sha256Sum([]byte("other")))
	if b.Complete() || len(b.Missing(0, size)) != 1 {
		t.Error("entry kept after SetDigest contradicted its content")
	}
	if got, ok := b.Digest(); !ok || got != sha256Sum([]byte("other")) {
		t.Error("SetDigest not recorded")
	}
	a = entry(t, c, ka)
	if !a.Complete() || len(readAll(t, a, src)) != 0 {
		t.Error("SetDigest on one entry damaged another sharing its content")
	}
}

func TestDigestMismatchAtCompletion(t *testing.T) {
	c := openCache(t, t.TempDir(), nil)
	size := int64(2*bs + 1)
	src := source("claimed", size)
	good, bad := testKey("good", size), testKey("bad", size)

	e := entry(t, c, good)
	e.SetDigest(sha256Sum(src))
	fillAll(t, e, src)
	waitJobs(t, c)
	if !e.Complete() {
		t.Fatal("content matching its remote digest dropped")
	}

	e = entry(t, c, bad)
	e.SetDigest(sha256Sum([]byte("something else")))
	fillAll(t, e, src)
	waitJobs(t, c)
	if e.Complete() {
		t.Fatal("content not matching its remote digest kept")
	}
	if _, err := os.Stat(dataFile(c, bad)); !os.IsNotExist(err) {
		t.Errorf("entry of mismatching content left on disk: %v", err)
	}
}

// A stored copy damaged in a "power cut" is not shared: the next entry of
// that content replaces it.
func TestDedupDamagedCopy(t *testing.T) {
	dir := t.TempDir()
	size := int64(4 * bs)
	src := source("dmg", size)
	ka, kb, kc := testKey("a", size), testKey("b", size), testKey("c", size)
	c := openCache(t, dir, nil)
	a := entry(t, c, ka)
	fillAll(t, a, src)
	waitJobs(t, c)
	a.Release()
	_ = c.Close()
	zero(0, 2*bs, 100)(t, dataFile(c, ka), recFile(c, ka))

	c = openCache(t, dir, func(o *Options) { o.boot = bootB })
	b := entry(t, c, kb)
	fillAll(t, b, src)
	waitJobs(t, c)
	if inode(t, dataFile(c, ka)) == inode(t, dataFile(c, kb)) {
		t.Fatal("an entry was linked to a damaged copy")
	}
	e, ok := c.ByDigest(sha256Sum(src), kc)
	if !ok {
		t.Fatal("no stored copy after replacing the damaged one")
	}
	defer e.Release()
	if len(readAll(t, e, src)) != 0 {
		t.Fatal("stored copy incomplete")
	}
	a = entry(t, c, ka)
	if m := readAll(t, a, src); len(m) != 1 || m[0] != 2 {
		t.Errorf("damaged entry missed %v, want [2]", m)
	}
}

func TestForget(t *testing.T) {
	c := openCache(t, t.TempDir(), nil)
	size := int64(3 * bs)
	src := source("f", size)
	k1 := testKey("f", size)
	k2 := k1
	k2.Size = 2 * bs
	k2.Mtime = k2.Mtime.Add(1e9)
	other := testKey("g", size)
	e1, e2, eo := entry(t, c, k1), entry(t, c, k2), entry(t, c, other)
	fillAll(t, e1, src)
	fillAll(t, e2, src[:2*bs])
	fillAll(t, eo, src)
	waitJobs(t, c)

	c.Forget(k1.Host, k1.Path)
	if ok := checkRead(t, e1, src, 0, bs); ok {
		t.Error("a held entry hits after Forget")
	}
	if err := e1.Fill(src, 0); err != nil {
		t.Fatal(err)
	}
	if e1.Complete() || checkRead(t, e1, src, 0, bs) {
		t.Error("Fill after Forget stored something")
	}
	if _, err := os.Stat(c.pathDir(hostPathID(k1.Host, k1.Path))); !os.IsNotExist(err) {
		t.Errorf("path's entries left on disk: %v", err)
	}
	for _, k := range []Key{k1, k2} {
		if e := entry(t, c, k); e.Complete() || len(e.Missing(0, k.Size)) != 1 {
			t.Errorf("version of size %d survives Forget", k.Size)
		}
	}
	if e := entry(t, c, other); !e.Complete() || len(readAll(t, e, src)) != 0 {
		t.Error("Forget dropped another path")
	}
	c.Forget("u@h:22", "/never/cached")
}

// A remote file rewritten with the same size and mtime keeps its Key. A
// refilled block that differs from the one it replaces shows it: the entry
// starts afresh instead of mixing versions, and entries sharing the old
// content keep it.
func TestChangedUnderSameKey(t *testing.T) {
	c := openCache(t, t.TempDir(), nil)
	size := int64(4 * bs)
	v1, v2 := source("v1", size), source("v2", size)
	ka, kb := testKey("a", size), testKey("b", size)
	for _, k := range []Key{ka, kb} {
		e, err := c.Entry(k)
		if err != nil {
			t.Fatal(err)
		}
		fillAll(t, e, v1)
		waitJobs(t, c)
		e.Release()
	}
	shared := inode(t, dataFile(c, ka))
	if inode(t, dataFile(c, kb)) != shared {
		t.Fatal("entries of the same content not shared")
	}
	zero(0, 2*bs, 10)(t, dataFile(c, kb), recFile(c, kb))

	b := entry(t, c, kb)
	if m := readAll(t, b, v1); len(m) != 1 || m[0] != 2 {
		t.Fatalf("missed %v, want [2]", m)
	}
	fillBlocks(t, b, v2, 2)
	if inode(t, dataFile(c, kb)) == shared {
		t.Fatal("other content written into shared files")
	}
	if m := readAll(t, b, v2); len(m) != 3 || !checkRead(t, b, v2, 2*bs, bs) {
		t.Fatalf("after the change: missed %v, want all blocks but 2", m)
	}

	a := entry(t, c, ka)
	if m := readAll(t, a, v1); len(m) != 1 || m[0] != 2 {
		t.Fatalf("sharer missed %v, want [2]", m)
	}
	fillBlocks(t, a, v1, 2)
	if !a.Complete() || len(readAll(t, a, v1)) != 0 || inode(t, dataFile(c, ka)) != shared {
		t.Fatal("refilling the same content did not repair the shared files in place")
	}

	// The same for an entry of its own, partly filled.
	kp := testKey("p", size)
	p := entry(t, c, kp)
	fillBlocks(t, p, v1, 0, 1)
	p.Release()
	zero(0, bs, 10)(t, dataFile(c, kp), recFile(c, kp))
	p = entry(t, c, kp)
	if checkRead(t, p, v1, bs, bs) {
		t.Fatal("damaged block hit")
	}
	fillBlocks(t, p, v2, 1)
	if checkRead(t, p, v1, 0, bs) {
		t.Fatal("a block of the old version kept next to one of the new")
	}
	if !checkRead(t, p, v2, bs, bs) {
		t.Fatal("new block missing")
	}
}

// A stored copy named without an owner tag (the layout before them) is
// removed by the scan: no key finds it, and it would count as a size
// some owner stores. A tagged one stays.
func TestScanRemovesUntaggedStoredCopies(t *testing.T) {
	dir := t.TempDir()
	old := filepath.Join(dir, "content", objectsDir, "ab", strings.Repeat("ab", 32)+"-12")
	tagged := filepath.Join(dir, "content", objectsDir, "cd", strings.Repeat("cd", 32)+"-12-"+ownerTag("h\x00"))
	for _, d := range []string{old, tagged} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(d, "d"), make([]byte, 3*testBS), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	c := openCache(t, dir, nil)
	<-c.scanned
	if _, err := os.Stat(old); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("an untagged stored copy was kept: %v", err)
	}
	if _, err := os.Stat(tagged); err != nil {
		t.Errorf("a tagged stored copy was removed: %v", err)
	}
	if !c.MayHold(Key{Host: "h", Size: 3 * testBS}) || c.MayHold(Key{Host: "other", Size: 3 * testBS}) {
		t.Error("the tagged copy's size is not counted for its owner alone")
	}
}
