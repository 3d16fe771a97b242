package contentcache

import (
	"errors"
	"io"
	"math"
	"runtime"
	"testing"
)

// A size chosen by a server is bounded before anything is computed or
// allocated from it: sizes the cache cannot hold are refused with
// ErrTooLarge (the file is then read uncached), and the cache stays
// usable after them.
func TestEntryRefusesSizesItCannotHold(t *testing.T) {
	c := openCache(t, t.TempDir(), nil)
	for _, size := range []int64{-1, math.MinInt64, math.MaxInt64, 1 << 62, MaxFileSize + 1, math.MaxInt64 - testBS + 2} {
		e, err := c.Entry(testKey("hostile", size))
		if !errors.Is(err, ErrTooLarge) {
			if err == nil {
				e.Release()
			}
			t.Errorf("Entry of size %d: %v, want ErrTooLarge", size, err)
		}
	}
	for _, size := range []int64{0, 1, MaxFileSize} {
		e := entry(t, c, testKey("fits", size))
		if e.Complete() != (size == 0) {
			t.Errorf("a new entry of %d bytes: Complete %v", size, e.Complete())
		}
	}
	src := source("after", 3*testBS+5)
	e := entry(t, c, testKey("after", int64(len(src))))
	fillAll(t, e, src)
	if missed := readAll(t, e, src); missed != nil {
		t.Errorf("after refusing hostile sizes, blocks %v of a normal file missed", missed)
	}
}

// An entry of a huge file takes memory for the blocks it stores, not for
// the blocks the file has: an 8 TiB file (two billion blocks here) with a
// few blocks stored, filled, read and loaded again from disk.
func TestEntryMemoryFollowsBlocksStored(t *testing.T) {
	const size = 8 << 40
	c := openCache(t, t.TempDir(), nil)
	k := testKey("huge", size)
	blocks := []int64{0, size / testBS / 2, size/testBS - 1}
	src := source("huge", testBS)

	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	e, err := c.Entry(k)
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range blocks {
		if err := e.Fill(src, b*testBS); err != nil {
			t.Fatalf("fill block %d: %v", b, err)
		}
	}
	e.Release()
	waitJobs(t, c)
	e = entry(t, c, k) // loaded from disk again: the last use was released
	for _, b := range blocks {
		p := make([]byte, testBS)
		if n, ok, err := e.ReadAt(p, b*testBS); !ok || err != nil || n != testBS || string(p) != string(src) {
			t.Errorf("block %d: read %d bytes, ok %v, err %v", b, n, ok, err)
		}
	}
	if got := e.Missing(blocks[1]*testBS-testBS, 3*testBS); len(got) != 2 {
		t.Errorf("around the middle block, missing %v, want the blocks on either side", got)
	}
	runtime.ReadMemStats(&after)
	// The old tables took 4 bytes and 3 bits per block: 9 GiB here.
	if grew := after.TotalAlloc - before.TotalAlloc; grew > 64<<20 {
		t.Errorf("an 8 TiB entry with %d blocks stored allocated %d bytes", len(blocks), grew)
	}
}

// Fill refuses any range that is not whole blocks inside the file,
// whatever the offset, without wrapping around, and stores nothing.
func TestFillRefusesRangesOutsideTheFile(t *testing.T) {
	c := openCache(t, t.TempDir(), nil)
	const size = 3*testBS + 7
	e := entry(t, c, testKey("f", size))
	block := make([]byte, 2*testBS)
	top := int64(math.MaxInt64 - math.MaxInt64%testBS)
	cases := []struct {
		name string
		data []byte
		off  int64
	}{
		{"negative offset", block[:testBS], -testBS},
		{"past the end", block[:testBS], 4 * testBS},
		{"at the end", block[:7], size},
		{"across the end", block, 2 * testBS},
		{"wrapping around", block, top},
		{"near MinInt64", block, math.MinInt64},
		{"misaligned", block[:testBS], 1},
		{"short middle block", block[:testBS-1], testBS},
	}
	for _, tc := range cases {
		if err := e.Fill(tc.data, tc.off); err == nil {
			t.Errorf("%s: Fill of %d bytes at %d accepted", tc.name, len(tc.data), tc.off)
		}
	}
	if got := e.Missing(0, size); len(got) != 1 || got[0] != (Range{0, size}) {
		t.Errorf("after refused fills, missing %v, want all", got)
	}
}

// Any size and any range a server or a caller may produce: the entry is
// refused (ErrTooLarge) or made, and Fill, Missing and ReadAt neither
// panic nor allocate beyond the data given, nor store outside the file.
func FuzzEntrySizesAndOffsets(f *testing.F) {
	f.Add(int64(3*testBS+7), int64(testBS), int64(testBS))
	f.Add(int64(math.MaxInt64), int64(0), int64(testBS))
	f.Add(int64(1<<62), int64(1<<61), int64(testBS))
	f.Add(int64(-1), int64(0), int64(1))
	f.Add(int64(MaxFileSize), int64(MaxFileSize-testBS), int64(testBS))
	f.Add(int64(2*testBS), int64(math.MaxInt64-math.MaxInt64%testBS), int64(2*testBS))
	c := openCache(f, f.TempDir(), nil)
	data := make([]byte, 4*testBS)
	f.Fuzz(func(t *testing.T, size, off, n int64) {
		e, err := c.Entry(testKey("fuzz", size))
		if err != nil {
			if size >= 0 && size <= MaxFileSize || !errors.Is(err, ErrTooLarge) {
				t.Fatalf("Entry of size %d: %v", size, err)
			}
			return
		}
		defer e.Release()
		k := min(max(n, 0), int64(len(data)))
		if err := e.Fill(data[:k], off); err == nil && k > 0 && (off < 0 || off > size || k > size-off) {
			t.Fatalf("Fill of %d bytes at %d accepted in a %d-byte file", k, off, size)
		}
		asked := min(n, 8*testBS)
		for _, r := range e.Missing(off, asked) {
			if r.Off < 0 || r.Len <= 0 || r.Len > size-r.Off || !coversAsked(r, off, asked) {
				t.Fatalf("Missing(%d, %d) of a %d-byte file: %v", off, asked, size, r)
			}
		}
		if _, _, err := e.ReadAt(data[:k], off); err != nil && off >= 0 && !errors.Is(err, io.EOF) {
			t.Fatalf("ReadAt(%d bytes, %d): %v", k, off, err)
		}
	})
}

// coversAsked reports whether r lies within the blocks that hold some of
// the length bytes at off.
func coversAsked(r Range, off, length int64) bool {
	lo := max(off, 0) / testBS * testBS
	if off < 0 {
		return length > -off && r.Off >= lo && r.Off+r.Len-1 < (off+length-1)/testBS*testBS+testBS
	}
	return r.Off >= lo && (r.Off+r.Len-1)/testBS <= (off+min(length, math.MaxInt64-off)-1)/testBS
}

// Missing names only blocks of the range asked, whatever its offset: a
// negative one (a caller's bug) does not make it name the whole file,
// which the caller would then fetch in one buffer.
func TestMissingStaysWithinTheRangeAsked(t *testing.T) {
	c := openCache(t, t.TempDir(), nil)
	e := entry(t, c, testKey("huge", MaxFileSize))
	for _, tc := range []struct{ off, length int64 }{
		{math.MinInt64, testBS}, {math.MinInt64 + 1, math.MaxInt64}, {-testBS, 2 * testBS}, {-1, 1}, {0, testBS},
	} {
		for _, r := range e.Missing(tc.off, tc.length) {
			if !coversAsked(r, tc.off, tc.length) {
				t.Errorf("Missing(%d, %d) names %v", tc.off, tc.length, r)
			}
		}
	}
}

// Stored content is shared by digest only among one host's files: another
// host claiming that digest for its file gets nothing from the store,
// small content and large alike, while the same host still shares it.
func TestByDigestStaysWithinOneHost(t *testing.T) {
	c := openCache(t, t.TempDir(), nil)
	for _, size := range []int64{100, 3*testBS + 5} {
		src := source("shared", size)
		a := testKey("a", size)
		fillAll(t, entry(t, c, a), src)
		waitJobs(t, c)
		for _, other := range []Key{
			{Host: "v@elsewhere:22", Path: a.Path, Size: size, Mtime: a.Mtime},
			{Host: a.Host, Branch: "1 other:/dir", Path: a.Path, Size: size, Mtime: a.Mtime},
		} {
			if e, ok := c.ByDigest(sha256Sum(src), other); ok {
				e.Release()
				t.Errorf("%d bytes: a file of %s, branch %q, was given this host's content by its digest", size, other.Host, other.Branch)
			}
		}
		same := testKey("b", size)
		e, ok := c.ByDigest(sha256Sum(src), same)
		if !ok {
			t.Errorf("%d bytes: the same host's copy was not found by its digest", size)
			continue
		}
		if missed := readAll(t, e, src); missed != nil {
			t.Errorf("%d bytes: shared entry missed blocks %v", size, missed)
		}
		e.Release()
	}
}

// The space an entry of a huge file takes is counted by the blocks it
// stores: a file a server claims is 8 TiB, of which only the last block
// was read (its data file is then 8 TiB long, sparse), must
// not count as the 32 GiB its full record would take (and have the rest
// of the cache evicted for it).
func TestScanCountsHugeEntryByBlocksStored(t *testing.T) {
	const size = 8 << 40
	c := openCache(t, t.TempDir(), nil)
	e := entry(t, c, testKey("huge", size))
	if err := e.Fill(source("huge", testBS), size-testBS); err != nil {
		t.Fatal(err)
	}
	if total := c.scan().total; total > 1<<20 {
		t.Errorf("an 8 TiB entry holding one block counted as %d bytes", total)
	}
}
