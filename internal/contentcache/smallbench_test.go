package contentcache

import (
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// smallTree reads up to n regular files of Go's source tree (or of
// $CONTENTCACHE_TREE) into memory.
func smallTree(b *testing.B, n int) (keys []Key, srcs [][]byte) {
	root := os.Getenv("CONTENTCACHE_TREE")
	if root == "" {
		out, err := exec.Command("go", "env", "GOROOT").Output()
		if err != nil {
			b.Skipf("no go command to find Go's source tree (set CONTENTCACHE_TREE): %v", err)
		}
		root = filepath.Join(strings.TrimSpace(string(out)), "src")
	}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || len(keys) >= n {
			return err
		}
		if !d.Type().IsRegular() {
			return nil
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		keys = append(keys, Key{Host: "u@h:22", Path: p, Size: int64(len(data)), Mtime: time.Unix(1700000000, 0)})
		srcs = append(srcs, data)
		return nil
	})
	if err != nil || len(keys) == 0 {
		b.Skipf("no source tree to read at %s: %v", root, err)
	}
	return keys, srcs
}

// diskUsage is what du counts under dir: the blocks of every inode
// (directories included), hard links once.
func diskUsage(b *testing.B, dir string) int64 {
	seen := map[uint64]bool{}
	var total int64
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		var st unix.Stat_t
		if err := unix.Lstat(p, &st); err != nil {
			return err
		}
		if !seen[st.Ino] {
			seen[st.Ino] = true
			total += st.Blocks * 512
		}
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
	return total
}

// BenchmarkSmallFiles stores up to 10 000 files of Go's source tree with
// the default block size, as a first read of the tree through a mount
// does (Entry, Fill of the whole file, Release, background work done),
// then reads each once in a new process-like Cache (first read, checked)
// and again (a hit). It reports disk use and times per entry.
func BenchmarkSmallFiles(b *testing.B) {
	keys, srcs := smallTree(b, 10000)
	var data int64
	for _, s := range srcs {
		data += int64(len(s))
	}
	n := float64(len(keys))
	for b.Loop() {
		dir := b.TempDir()
		c := openCache(b, dir, func(o *Options) { o.BlockSize = 0 })
		<-c.scanned
		base := diskUsage(b, dir)
		t0 := time.Now()
		for i, k := range keys {
			e, err := c.Entry(k)
			if err != nil {
				b.Fatal(err)
			}
			if len(srcs[i]) > 0 {
				if err := e.Fill(srcs[i], 0); err != nil {
					b.Fatal(err)
				}
			}
			e.Release()
		}
		waitJobs(b, c)
		fill := time.Since(t0)
		_ = c.Close()
		du := diskUsage(b, dir) - base

		c = openCache(b, dir, func(o *Options) { o.BlockSize = 0 })
		buf := make([]byte, 128<<10)
		var first, hit time.Duration
		for i, k := range keys {
			e, err := c.Entry(k)
			if err != nil {
				b.Fatal(err)
			}
			t1 := time.Now()
			if _, ok, _ := e.ReadAt(buf, 0); !ok && len(srcs[i]) > 0 {
				b.Fatalf("%s: miss", k.Path)
			}
			t2 := time.Now()
			if _, ok, _ := e.ReadAt(buf, 0); !ok && len(srcs[i]) > 0 {
				b.Fatalf("%s: miss", k.Path)
			}
			first += t2.Sub(t1)
			hit += time.Since(t2)
			e.Release()
		}
		_ = c.Close()
		b.ReportMetric(n, "entries")
		b.ReportMetric(float64(data)/n, "data-B/entry")
		b.ReportMetric(float64(du)/n, "disk-B/entry")
		b.ReportMetric(float64(du-data)/n, "overhead-B/entry")
		b.ReportMetric(float64(fill.Microseconds())/n, "fill-µs/entry")
		b.ReportMetric(float64(first.Nanoseconds())/n, "first-read-ns/entry")
		b.ReportMetric(float64(hit.Nanoseconds())/n, "hit-ns/entry")
	}
}
