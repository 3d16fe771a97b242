package contentcache

import (
	"bytes"
	"errors"
	"io"
	"reflect"
	"slices"
	"sync/atomic"
	"testing"

	"golang.org/x/sys/unix"
)

const bs = testBS

func TestFillReadMissing(t *testing.T) {
	type query struct {
		off, n int64
		want   []Range
	}
	cases := []struct {
		name    string
		size    int64
		fill    []int64 // blocks filled
		missing []query
	}{
		{"empty file", 0, nil, []query{{0, 100, nil}}},
		{"one byte, absent", 1, nil, []query{{0, 100, []Range{{0, 1}}}}},
		{"one byte, present", 1, []int64{0}, []query{{0, 100, nil}}},
		{"less than a block", bs - 1, []int64{0}, []query{{0, bs, nil}}},
		{"exactly one block", bs, nil, []query{{0, bs, []Range{{0, bs}}}, {bs - 1, 1, []Range{{0, bs}}}}},
		{"exactly three blocks, middle", 3 * bs, []int64{1}, []query{
			{0, 3 * bs, []Range{{0, bs}, {2 * bs, bs}}},
			{bs, bs, nil},
			{bs - 1, 2, []Range{{0, bs}}},
			{2*bs - 1, 2, []Range{{2 * bs, bs}}},
			{3 * bs, 10, nil},
		}},
		{"exactly three blocks, all", 3 * bs, []int64{0, 1, 2}, []query{{0, 1 << 20, nil}}},
		{"partial last block", 3*bs + 7, []int64{0, 3}, []query{
			{0, 1 << 20, []Range{{bs, 2 * bs}}},
			{3 * bs, 1 << 20, nil},
			{2 * bs, 100, []Range{{2 * bs, bs}}},
		}},
		{"partial last block absent", 3*bs + 7, []int64{0, 1, 2}, []query{
			{0, 1 << 20, []Range{{3 * bs, 7}}},
			{3*bs + 6, 1, []Range{{3 * bs, 7}}},
			{-5, 10, nil},
			{2 * bs, 1<<63 - 1, []Range{{3 * bs, 7}}},
		}},
		{"negative offset", 2 * bs, []int64{1}, []query{
			{-bs, 2 * bs, []Range{{0, bs}}},
			{-bs, bs, nil},
			{-bs - 1, bs + 2, []Range{{0, bs}}},
		}},
		{"coalesced runs", 8 * bs, []int64{2, 5}, []query{
			{0, 8 * bs, []Range{{0, 2 * bs}, {3 * bs, 2 * bs}, {6 * bs, 2 * bs}}},
			{bs + 1, 6 * bs, []Range{{bs, bs}, {3 * bs, 2 * bs}, {6 * bs, 2 * bs}}},
			{0, 0, nil},
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := openCache(t, t.TempDir(), nil)
			k := testKey(tc.name, tc.size)
			src := source(tc.name, tc.size)
			e := entry(t, c, k)
			fillBlocks(t, e, src, tc.fill...)
			for _, q := range tc.missing {
				if got := e.Missing(q.off, q.n); !reflect.DeepEqual(got, q.want) {
					t.Errorf("Missing(%d, %d) = %v, want %v", q.off, q.n, got, q.want)
				}
			}
			present := map[int64]bool{}
			for _, b := range tc.fill {
				present[b] = true
			}
			// Every read at block edges hits exactly when its blocks are present.
			for _, off := range []int64{0, 1, bs - 1, bs, bs + 1, 2*bs - 1, 3 * bs, 3*bs + 6} {
				for _, n := range []int64{1, 2, bs, bs + 2, 2 * bs} {
					if off >= tc.size {
						continue
					}
					wantHit := true
					for b := off / bs; b <= (min(off+n, tc.size)-1)/bs; b++ {
						wantHit = wantHit && present[b]
					}
					if hit := checkRead(t, e, src, off, n); hit != wantHit {
						t.Errorf("ReadAt(%d, %d) hit=%v, want %v", off, n, hit, wantHit)
					}
				}
			}
			wantComplete := int64(len(present)) == (tc.size+bs-1)/bs
			if e.Complete() != wantComplete {
				t.Errorf("Complete() = %v, want %v", e.Complete(), wantComplete)
			}
			// Filling what is missing completes it.
			for _, r := range e.Missing(0, tc.size) {
				if err := e.Fill(src[r.Off:r.Off+r.Len], r.Off); err != nil {
					t.Fatal(err)
				}
			}
			if !e.Complete() || len(readAll(t, e, src)) != 0 || !checkRead(t, e, src, 0, tc.size+5) {
				t.Error("not complete after filling what Missing reported")
			}
			f, ok := e.Verified()
			if !ok {
				t.Fatal("complete entry not Verified")
			}
			defer f.Close()
			if got, err := io.ReadAll(f); err != nil || !bytes.Equal(got, src) {
				t.Errorf("Verified file: %d bytes, %v; want the content", len(got), err)
			}
		})
	}
}

func TestReadAtEOF(t *testing.T) {
	c := openCache(t, t.TempDir(), nil)
	src := source("eof", bs+10)
	e := entry(t, c, testKey("eof", int64(len(src))))
	fillAll(t, e, src)
	p := make([]byte, 100)
	for _, tc := range []struct {
		off   int64
		n     int
		ok    bool
		isEOF bool
	}{
		{bs + 10, 0, true, true},
		{bs + 50, 0, true, true},
		{bs, 10, true, true},
		{bs - 90, 100, true, false},
	} {
		n, ok, err := e.ReadAt(p, tc.off)
		if n != tc.n || ok != tc.ok || errors.Is(err, io.EOF) != tc.isEOF {
			t.Errorf("ReadAt(100 bytes at %d) = %d, %v, %v; want %d, %v, EOF %v", tc.off, n, ok, err, tc.n, tc.ok, tc.isEOF)
		}
	}
	if n, ok, err := e.ReadAt(p, -1); err == nil || ok || n != 0 {
		t.Errorf("ReadAt at -1 = %d, %v, %v; want an error", n, ok, err)
	}
}

func TestFillRejects(t *testing.T) {
	c := openCache(t, t.TempDir(), nil)
	size := int64(3*bs + 7)
	src := source("rej", size)
	e := entry(t, c, testKey("rej", size))
	for _, tc := range []struct {
		name     string
		off, end int64
	}{
		{"unaligned offset", 1, bs + 1},
		{"partial block inside", 0, bs + 1},
		{"past the end", 3 * bs, 3*bs + 8},
		{"short last block", 3 * bs, 3*bs + 6},
		{"negative", -bs, 0},
	} {
		data := make([]byte, tc.end-tc.off)
		if err := e.Fill(data, tc.off); err == nil {
			t.Errorf("%s: Fill accepted [%d, %d)", tc.name, tc.off, tc.end)
		}
	}
	if e.Missing(0, size) == nil || len(e.Missing(0, size)) != 1 {
		t.Fatalf("a rejected Fill stored something: missing %v", e.Missing(0, size))
	}
	// Blocks already present are left as they are.
	fillBlocks(t, e, src, 1)
	if err := e.Fill(make([]byte, 2*bs), 0); err != nil {
		t.Fatal(err)
	}
	if !checkRead(t, e, src, bs, bs) {
		t.Fatal("block 1 missing")
	}
}

func TestSparse(t *testing.T) {
	c := openCache(t, t.TempDir(), func(o *Options) { o.BlockSize = 1 << 20 })
	const size = 10<<30 + 12345
	k := testKey("big", size)
	e := entry(t, c, k)
	mb := int64(1 << 20)
	blocks := map[int64][]byte{}
	for _, off := range []int64{0, 5 << 30, 10 << 30, 7*mb + 3<<30} {
		data := source("big"+string(rune(off)), min(mb, size-off))
		if err := e.Fill(data, off); err != nil {
			t.Fatal(err)
		}
		blocks[off] = data
	}
	for off, data := range blocks {
		p := make([]byte, len(data))
		if n, ok, err := e.ReadAt(p, off); !ok || n != len(data) || string(p) != string(data) {
			t.Fatalf("ReadAt(%d) = %d, %v, %v", off, n, ok, err)
		}
	}
	// The gaps between the four blocks; the last block is present.
	if n := len(e.Missing(0, size)); n != 3 {
		t.Errorf("Missing has %d ranges, want 3", n)
	}
	var d, r unix.Stat_t
	if err := unix.Stat(dataFile(c, k), &d); err != nil {
		t.Fatal(err)
	}
	if err := unix.Stat(recFile(c, k), &r); err != nil {
		t.Fatal(err)
	}
	if d.Size != size {
		t.Errorf("data file is %d bytes, want %d", d.Size, size)
	}
	// Four blocks of data; a few pages of record.
	if used := d.Blocks * 512; used > 4*mb+64<<10 {
		t.Errorf("data file uses %d bytes on disk for 4 MiB of blocks", used)
	}
	if used := r.Blocks * 512; used > 64<<10 {
		t.Errorf("record uses %d bytes on disk", used)
	}
}

// Another is a use of its own: the entry's files stay open and fillable
// after the first use is released, and a fill after Close (work that
// outlived the mount) stores nothing.
func TestAnotherOutlivesItsSource(t *testing.T) {
	dir := t.TempDir()
	c := openCache(t, dir, nil)
	k := testKey("f", 4*testBS)
	src := source("f", 4*testBS)
	e, err := c.Entry(k)
	if err != nil {
		t.Fatal(err)
	}
	a := e.Another()
	fillBlocks(t, e, src, 0)
	e.Release()
	fillBlocks(t, a, src, 1)
	if !checkRead(t, a, src, 0, 2*testBS) {
		t.Fatal("blocks filled through both uses do not read back through the second")
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if err := a.Fill(src[2*testBS:3*testBS], 2*testBS); err != nil {
		t.Fatalf("fill after Close: %v, want nothing stored and no error", err)
	}
	a.Release()

	c2 := openCache(t, dir, nil)
	got := entry(t, c2, k).Missing(0, 4*testBS)
	want := []Range{{2 * testBS, 2 * testBS}}
	if !slices.Equal(got, want) {
		t.Fatalf("after reopening, missing %v, want %v: blocks 0 and 1 stored, nothing after Close", got, want)
	}
}

// FillAsync stores on a goroutine of its own and then calls done; Close
// waits for the fills under way, so the next cache finds them stored; a
// closed cache, or one with maxPendingFills under way, refuses more.
func TestFillAsync(t *testing.T) {
	dir := t.TempDir()
	c := openCache(t, dir, nil)
	small, large := testKey("small", 100), testKey("large", 3*testBS)
	srcS, srcL := source("small", 100), source("large", 3*testBS)

	e := entry(t, c, small)
	done := make(chan error, 1)
	if !e.FillAsync(srcS, 0, func(err error) { done <- err }) {
		t.Fatal("FillAsync refused on an idle cache")
	}
	if err := <-done; err != nil {
		t.Fatalf("FillAsync: %v", err)
	}
	if !checkRead(t, e, srcS, 0, 100) {
		t.Fatal("small content not read back after done")
	}

	// Every fill waits for the storing lock: maxPendingFills are taken,
	// the next is refused.
	el := entry(t, c, large)
	c.storing.Lock()
	var calls atomic.Int32
	for i := range maxPendingFills {
		off := int64(i%3) * testBS
		if !el.FillAsync(srcL[off:off+testBS], off, func(error) { calls.Add(1) }) {
			c.storing.Unlock()
			t.Fatalf("fill %d refused, want %d taken", i, maxPendingFills)
		}
	}
	if el.FillAsync(srcL[:testBS], 0, func(error) { t.Error("done of a refused fill called") }) {
		t.Error("a fill past maxPendingFills was taken")
	}
	c.storing.Unlock()
	el.Release()
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if n := calls.Load(); n != maxPendingFills {
		t.Fatalf("Close returned with %d of %d fills done", n, maxPendingFills)
	}
	if e.FillAsync(srcS, 0, func(error) { t.Error("done called after Close") }) {
		t.Error("FillAsync taken after Close")
	}

	c2 := openCache(t, dir, nil)
	if m := entry(t, c2, large).Missing(0, 3*testBS); len(m) != 0 {
		t.Fatalf("after reopening, large misses %v: the fills under way at Close were not stored", m)
	}
	if !checkRead(t, entry(t, c2, small), srcS, 0, 100) {
		t.Fatal("after reopening, small content missing")
	}
}
