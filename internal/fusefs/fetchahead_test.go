package fusefs

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"sshfsm/internal/cache"
)

// blockReads counts the reads of p sent to the server by the block they
// start in.
func blockReads(m *diskMount, p string, bs int64) map[int64]int {
	n := map[int64]int{}
	for _, r := range m.hook.readsOf(p) {
		n[r.off/bs]++
	}
	return n
}

// directBuffer is page-aligned memory for O_DIRECT reads.
func directBuffer(t *testing.T, size int) []byte {
	t.Helper()
	b, err := unix.Mmap(-1, 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_ANON|unix.MAP_PRIVATE)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Munmap(b) })
	return b
}

// A reader going through a large file in order has the blocks ahead of it
// fetched before it gets there, each block once however the reader's and
// the background fetches meet; a reader of a file's first bytes (head)
// fetches nothing ahead; the bytes read are the server's.
func TestDiskCacheReadsAhead(t *testing.T) {
	dir, cacheDir := t.TempDir(), t.TempDir()
	m := mountDisk(t, dir, cacheDir, cache.Auto)
	bs := m.cache.BlockSize()
	const blocks = 8
	want := randomBytes(blocks*int(bs), 11)
	writeOld(t, filepath.Join(dir, "big"), want, time.Hour)
	writeOld(t, filepath.Join(dir, "head"), randomBytes(blocks*int(bs), 12), time.Hour)

	h, err := os.Open(m.path("head"))
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	if _, err := h.Read(make([]byte, 32<<10)); err != nil {
		t.Fatal(err)
	}

	// O_DIRECT: every read reaches the mount as asked, without the
	// kernel's own readahead.
	f, err := os.OpenFile(m.path("big"), os.O_RDONLY|unix.O_DIRECT, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	buf := directBuffer(t, 128<<10)
	check := func(off int64) {
		t.Helper()
		n, err := f.ReadAt(buf, off)
		if err != nil || n != len(buf) {
			t.Fatalf("read at %d: %d bytes, %v", off, n, err)
		}
		if !bytes.Equal(buf, want[off:off+int64(n)]) {
			t.Fatalf("read at %d: not the server's bytes", off)
		}
	}
	var off int64
	for ; off < readAheadAfter; off += int64(len(buf)) {
		check(off)
	}
	// The reader is in block 0; blocks 1 to readAheadBlocks come on
	// their own.
	deadline := time.Now().Add(10 * time.Second)
	for {
		got := blockReads(m, "big", bs)
		missing := ""
		for b := int64(1); b <= readAheadBlocks; b++ {
			if got[b] == 0 {
				missing += fmt.Sprintf(" %d", b)
			}
		}
		if missing == "" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("blocks%s not fetched ahead of a reader at %d; reads by block: %v", missing, off, got)
		}
		time.Sleep(5 * time.Millisecond)
	}
	for ; off < int64(len(want)); off += int64(len(buf)) {
		check(off)
	}
	for b, n := range blockReads(m, "big", bs) {
		if n != 1 {
			t.Errorf("block %d of big fetched %d times, want once", b, n)
		}
	}
	if got := blockReads(m, "big", bs); len(got) != blocks {
		t.Errorf("blocks of big fetched: %v, want each of %d", got, blocks)
	}

	for b := range blockReads(m, "head", bs) {
		if b != 0 {
			t.Errorf("reading the first 32 KiB of head fetched its block %d", b)
		}
	}
}
