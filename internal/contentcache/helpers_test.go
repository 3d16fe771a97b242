package contentcache

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
	"time"

	"sshfsm/internal/testenv"
)

func TestMain(m *testing.M) {
	if os.Getenv(crashChildEnv) != "" {
		os.Exit(crashChild())
	}
	testenv.Main(m)
}

const testBS = 4096

var (
	bootA = [16]byte{'b', 'o', 'o', 't', 'A'}
	bootB = [16]byte{'b', 'o', 'o', 't', 'B'}
)

// openCache opens a cache in dir with small blocks and a fixed boot id;
// mod adjusts the options. It is closed at the end of the test.
func openCache(t testing.TB, dir string, mod func(*Options)) *Cache {
	t.Helper()
	o := Options{Dir: dir, BlockSize: testBS, MaxSize: 1 << 30, MinFree: 1, boot: bootA}
	if mod != nil {
		mod(&o)
	}
	c, err := Open(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

func testKey(name string, size int64) Key {
	return Key{Host: "u@h:22", Path: "/d/" + name, Size: size, Mtime: time.Unix(1700000000, 0)}
}

// source is the deterministic content named seed.
func source(seed string, size int64) []byte {
	s := sha256.Sum256([]byte(seed))
	b := make([]byte, size)
	_, _ = rand.NewChaCha8(s).Read(b)
	return b
}

func entry(t testing.TB, c *Cache, k Key) *Entry {
	t.Helper()
	e, err := c.Entry(k)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Release)
	return e
}

// fillBlocks fills the given blocks of e from src.
func fillBlocks(t testing.TB, e *Entry, src []byte, blocks ...int64) {
	t.Helper()
	for _, b := range blocks {
		off := b * testBS
		end := min(off+testBS, int64(len(src)))
		if err := e.Fill(src[off:end], off); err != nil {
			t.Fatalf("fill block %d: %v", b, err)
		}
	}
}

func fillAll(t testing.TB, e *Entry, src []byte) {
	t.Helper()
	if len(src) == 0 {
		return
	}
	if err := e.Fill(src, 0); err != nil {
		t.Fatal(err)
	}
}

// checkRead reads [off, off+n) and fails the test on an error or on data
// other than src's; it reports whether the read hit.
func checkRead(t testing.TB, e *Entry, src []byte, off, n int64) bool {
	t.Helper()
	p := make([]byte, n)
	got, ok, err := e.ReadAt(p, off)
	if err != nil && !errors.Is(err, io.EOF) {
		t.Fatalf("ReadAt(%d, %d): %v", off, n, err)
	}
	if !ok {
		if got != 0 {
			t.Fatalf("ReadAt(%d, %d) missed with n=%d", off, n, got)
		}
		return false
	}
	want := src[min(off, int64(len(src))):min(off+n, int64(len(src)))]
	if !bytes.Equal(p[:got], want) {
		t.Fatalf("ReadAt(%d, %d): wrong data (%d bytes)", off, n, got)
	}
	return true
}

// readAll checks every block: each either hits with src's bytes or misses.
// It returns the blocks that missed.
func readAll(t testing.TB, e *Entry, src []byte) []int64 {
	t.Helper()
	var missed []int64
	for off := int64(0); off < int64(len(src)); off += testBS {
		if !checkRead(t, e, src, off, testBS) {
			missed = append(missed, off/testBS)
		}
	}
	return missed
}

func waitJobs(t testing.TB, c *Cache) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); c.jobsLeft.Load() != 0; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("digest jobs still running after 30s")
		}
	}
}

// dataFile and recFile are the files of k's entry in dir.
func dataFile(c *Cache, k Key) string { return filepath.Join(c.entryDir(entryID(k, c.bs)), "d") }
func recFile(c *Cache, k Key) string  { return filepath.Join(c.entryDir(entryID(k, c.bs)), "r") }

func sha256Sum(b []byte) [32]byte { return sha256.Sum256(b) }
