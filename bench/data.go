package main

import (
	"bufio"
	"context"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
)

// Data sets below the served directory.
const (
	fioDir   = "fio"   // files for fio
	treeDir  = "tree"  // Go's src/ as a git repository
	smallDir = "small" // a subset of it, used at high latency
	manyDir  = "many"  // the wide tree walked for the memory workload
)

// prepareData creates every data set server-side, directly on disk.
func prepareData(ctx context.Context, e *env) error {
	c := e.c
	if c.groups["fio"] || c.groups["rtt"] {
		files := map[string]int64{}
		if c.groups["fio"] {
			files["seq.dat"] = c.seqMiB
			files["randr.dat"] = c.randMiB
			files["randw.dat"] = c.randMiB
		}
		if c.groups["rtt"] {
			files["rtt.dat"] = c.rttMiB
		}
		for name, mib := range files {
			if err := randomFile(filepath.Join(e.dir(fioDir), name), mib<<20); err != nil {
				return err
			}
		}
		e.note("fio files: seq %d MiB, rand %d MiB, high-latency read %d MiB; fio time limit %v",
			c.seqMiB, c.randMiB, c.rttMiB, c.runtime)
	}
	out, err := exec.CommandContext(ctx, "go", "env", "GOROOT").Output()
	if err != nil {
		return fmt.Errorf("go env GOROOT: %w", err)
	}
	src := filepath.Join(strings.TrimSpace(string(out)), "src")
	e.src = src
	if c.groups["meta"] || c.groups["git"] {
		n, err := copyTree(src, e.dir(treeDir), 0)
		if err != nil {
			return err
		}
		if err := gitInit(ctx, e.dir(treeDir)); err != nil {
			return err
		}
		e.note("metadata tree: %s copied (%d files) and committed to git server-side", src, n)
	}
	if c.groups["rtt"] || c.groups["git"] {
		n, err := copyTree(src, e.dir(smallDir), c.smallFiles)
		if err != nil {
			return err
		}
		if err := gitInit(ctx, e.dir(smallDir)); err != nil {
			return err
		}
		e.note("high-latency tree: first %d files of %s, committed to git; RTT %v added by internal/netproxy", n, src, c.rtt)
	}
	if c.groups["cache"] || c.groups["union"] {
		e.floor = e.newFloorTool(ctx)
	}
	if c.groups["cache"] {
		e.cFloor = e.newCFloorTool(ctx)
		if err := prepareCacheData(ctx, e, src); err != nil {
			return err
		}
	}
	if c.groups["rss"] {
		if err := wideTree(e.dir(manyDir), c.entries); err != nil {
			return err
		}
		e.note("memory walk tree: %d empty files in directories of 1000", c.entries)
	}
	return nil
}

// randomFile writes size bytes of incompressible data to path.
func randomFile(path string, size int64) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := bufio.NewWriterSize(f, 1<<20)
	r := rand.NewChaCha8([32]byte{byte(size), byte(size >> 20)})
	buf := make([]byte, 1<<20)
	for left := size; left > 0; left -= int64(len(buf)) {
		r.Read(buf)
		if _, err := w.Write(buf[:min(left, int64(len(buf)))]); err != nil {
			f.Close()
			return err
		}
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// copyTree copies the regular files and directories of src to dst in
// lexical order, at most limit files (0 = all), and returns the file count.
func copyTree(src, dst string, limit int) (int, error) {
	n := 0
	stop := fmt.Errorf("limit")
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		to := filepath.Join(dst, rel)
		switch {
		case d.IsDir():
			return os.MkdirAll(to, 0o755)
		case !d.Type().IsRegular():
			return nil
		case limit > 0 && n >= limit:
			return stop
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		n++
		return os.WriteFile(to, b, info.Mode().Perm()|0o200)
	})
	if err == stop {
		err = nil
	}
	return n, err
}

// gitInit makes dir a git repository with everything committed and packed,
// and saves its index for restoreIndex.
func gitInit(ctx context.Context, dir string) error {
	for _, args := range [][]string{
		{"init", "-q"},
		{"add", "-A"},
		{"commit", "-q", "-m", "bench data"},
		{"gc", "-q"},
	} {
		cmd := exec.CommandContext(ctx, "git", append([]string{
			"-c", "user.name=bench", "-c", "user.email=bench@localhost",
			"-c", "init.defaultBranch=main", "-c", "gc.auto=0"}, args...)...)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("git %v in %s: %v: %s", args, dir, err, out)
		}
	}
	b, err := os.ReadFile(filepath.Join(dir, ".git", "index"))
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, ".git", "index.bench"), b, 0o644)
}

// restoreIndex puts back the index as written server-side by gitInit.
func restoreIndex(dir string) error {
	b, err := os.ReadFile(filepath.Join(dir, ".git", "index.bench"))
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, ".git", "index"), b, 0o644)
}

// wideTree creates n empty files in directories of 1000.
func wideTree(dir string, n int) error {
	names := make([]string, 0, n)
	for i := 0; i < n; i++ {
		names = append(names, filepath.Join(dir, fmt.Sprintf("d%04d", i/1000), fmt.Sprintf("file-%06d", i)))
	}
	sort.Strings(names)
	for i, p := range names {
		if i%1000 == 0 {
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				return err
			}
		}
		f, err := os.Create(p)
		if err != nil {
			return err
		}
		f.Close()
	}
	return nil
}
