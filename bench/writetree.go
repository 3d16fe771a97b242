package main

import (
	"archive/tar"
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"io/fs"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// The source tree of the writes group is generated, not taken from the
// Go installation: the same seed gives the same names, sizes and bytes on
// every machine and every Go version, so a figure from one run compares
// with a figure from another. Its shape is that of a source tree: mostly
// small text files (log-normal sizes, median a few KiB), a long tail of
// larger ones, a few incompressible files (test data), some executable
// scripts, spread over nested directories.

// treeSpec describes a generated tree.
type treeSpec struct {
	files int
	bytes int64 // total size aimed at; the result is within a few percent
	seed  uint64
}

// writesTree is the reference workload of the writes group: the size of
// the source tree untarred in sshfsm issue 20 (2,164 files, 31 MB).
const (
	writesTreeFiles = 2164
	writesTreeBytes = 31_000_000
	writesTreeSeed  = 20
)

// specFor returns the tree of n files with the reference tree's mean size.
func specFor(n int) treeSpec {
	return treeSpec{files: n, bytes: writesTreeBytes * int64(n) / writesTreeFiles, seed: writesTreeSeed}
}

// treeFile is one generated file.
type treeFile struct {
	rel    string
	size   int64
	exec   bool
	binary bool
}

// treeInfo sums up a generated tree.
type treeInfo struct {
	files, dirs int
	bytes       int64
}

func (ti treeInfo) String() string {
	return fmt.Sprintf("%d files in %d directories, %.1f MB", ti.files, ti.dirs, float64(ti.bytes)/1e6)
}

var treeWords = strings.Fields(`func return if else for range type struct interface map
	chan select case default package import var const nil err error string int byte
	context buffer reader writer file path dir name size offset length count index value
	key node tree list cache mount host server client request reply handle open close
	read write sync flush rename remove create lookup attr stat mode time status`)

var treeExts = []string{".go", ".go", ".go", ".go", ".go", ".c", ".h", ".s", ".txt", ".md", ".json", ".yaml"}

// layout plans the directories and files of s, in a fixed order.
func (s treeSpec) layout() (dirs []string, files []treeFile) {
	rng := rand.New(rand.NewPCG(s.seed, 0x5ee7))
	nDirs := max(1, s.files/14)
	dirs = []string{"."}
	depth := map[string]int{".": 0}
	for i := 0; len(dirs) < nDirs; i++ {
		parent := dirs[rng.IntN(len(dirs))]
		if depth[parent] >= 6 {
			continue
		}
		d := filepath.Join(parent, fmt.Sprintf("%s%d", treeWords[rng.IntN(len(treeWords))], i))
		depth[d] = depth[parent] + 1
		dirs = append(dirs, d)
	}
	// Log-normal sizes around a few KiB, scaled to the total asked for.
	raw := make([]float64, s.files)
	var sum float64
	for i := range raw {
		raw[i] = math.Exp(8.2 + 1.3*rng.NormFloat64())
		sum += raw[i]
	}
	scale := float64(s.bytes) / sum
	for i := range raw {
		// One file in each directory first: no directory is empty, as
		// none is in a git checkout.
		d := dirs[rng.IntN(len(dirs))]
		if i < len(dirs) {
			d = dirs[i]
		}
		name := fmt.Sprintf("%s_%d", treeWords[rng.IntN(len(treeWords))], i)
		f := treeFile{size: max(1, int64(raw[i]*scale))}
		switch x := rng.IntN(100); {
		case x < 2:
			name += ".sh"
			f.exec = true
		case x < 5:
			name += ".bin"
			f.binary = true
		default:
			name += treeExts[rng.IntN(len(treeExts))]
		}
		f.rel = filepath.Join(d, name)
		files = append(files, f)
	}
	return dirs, files
}

// genTree writes the tree of s below dir, which must not exist yet.
func genTree(dir string, s treeSpec) (treeInfo, error) {
	dirs, files := s.layout()
	for _, d := range dirs {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			return treeInfo{}, err
		}
	}
	ti := treeInfo{files: len(files), dirs: len(dirs) - 1}
	buf := make([]byte, 0, 1<<20)
	for i, f := range files {
		rng := rand.New(rand.NewPCG(s.seed, uint64(i)+1))
		buf = fileContent(buf[:0], rng, f)
		mode := os.FileMode(0o644)
		if f.exec {
			mode = 0o755
		}
		if err := os.WriteFile(filepath.Join(dir, f.rel), buf, mode); err != nil {
			return treeInfo{}, err
		}
		// WriteFile's mode is filtered by the umask.
		if err := os.Chmod(filepath.Join(dir, f.rel), mode); err != nil {
			return treeInfo{}, err
		}
		ti.bytes += f.size
	}
	return ti, nil
}

// fileContent appends f's bytes to buf: random bytes for a binary file,
// lines of words otherwise.
func fileContent(buf []byte, rng *rand.Rand, f treeFile) []byte {
	if f.binary {
		for int64(len(buf)) < f.size {
			buf = append(buf, byte(rng.Uint32()))
		}
		return buf
	}
	line := 0
	for int64(len(buf)) < f.size {
		if line == 0 {
			buf = append(buf, "\t\t\t\t"[:rng.IntN(4)]...)
		}
		w := treeWords[rng.IntN(len(treeWords))]
		buf = append(buf, w...)
		line += len(w) + 1
		if line > 40+rng.IntN(40) {
			buf = append(buf, '\n')
			line = 0
		} else {
			buf = append(buf, ' ')
		}
	}
	buf = buf[:f.size]
	buf[len(buf)-1] = '\n'
	return buf
}

// treeModTime is the modification time of every entry of the tarball.
var treeModTime = time.Date(2024, 1, 2, 3, 4, 5, 0, time.UTC)

// writeTar archives the tree at dir into the file tarPath, entries in
// lexical order with fixed owners and times: the same tree gives the
// same bytes.
func writeTar(dir, tarPath string) error {
	f, err := os.Create(tarPath)
	if err != nil {
		return err
	}
	bw := bufio.NewWriterSize(f, 1<<20)
	tw := tar.NewWriter(bw)
	err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == dir {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		h := &tar.Header{Name: filepath.ToSlash(rel), Mode: int64(info.Mode().Perm()), ModTime: treeModTime,
			Uname: "bench", Gname: "bench", Uid: 1000, Gid: 1000, Format: tar.FormatUSTAR}
		switch {
		case d.IsDir():
			h.Typeflag, h.Name = tar.TypeDir, h.Name+"/"
			return tw.WriteHeader(h)
		case !info.Mode().IsRegular():
			return fmt.Errorf("%s: not a regular file", p)
		}
		h.Typeflag, h.Size = tar.TypeReg, info.Size()
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
		src, err := os.Open(p)
		if err != nil {
			return err
		}
		defer src.Close()
		_, err = io.Copy(tw, src)
		return err
	})
	for _, step := range []func() error{tw.Close, bw.Flush} {
		if err == nil {
			err = step()
		}
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// repoCommits is how many commits make the repository cloned by the
// writes group: the tree's files in as many lexical slices.
const repoCommits = 3

// makeRepo makes a git repository at repo holding the tree at dir in
// repoCommits commits with fixed authors and dates, packed as a
// repository that has been used for a while is.
func makeRepo(ctx context.Context, dir, repo string) error {
	if _, err := copyTree(dir, repo, 0); err != nil {
		return err
	}
	var rels []string
	if err := filepath.WalkDir(repo, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			rel, _ := filepath.Rel(repo, p)
			rels = append(rels, rel)
		}
		return err
	}); err != nil {
		return err
	}
	sort.Strings(rels)
	git := func(stdin string, args ...string) error {
		cmd := exec.CommandContext(ctx, "git", append([]string{
			"-c", "user.name=bench", "-c", "user.email=bench@localhost",
			"-c", "init.defaultBranch=main", "-c", "gc.auto=0"}, args...)...)
		cmd.Dir = repo
		cmd.Stdin = strings.NewReader(stdin)
		date := treeModTime.Format(time.RFC3339)
		cmd.Env = append(os.Environ(), "GIT_AUTHOR_DATE="+date, "GIT_COMMITTER_DATE="+date)
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("git %v in %s: %v: %s", args, repo, err, firstLine(string(out)))
		}
		return nil
	}
	if err := git("", "init", "-q"); err != nil {
		return err
	}
	for i := 0; i < repoCommits; i++ {
		part := rels[i*len(rels)/repoCommits : (i+1)*len(rels)/repoCommits]
		if err := git(strings.Join(part, "\x00"), "add", "--pathspec-from-file=-", "--pathspec-file-nul"); err != nil {
			return err
		}
		if err := git("", "commit", "-q", "-m", fmt.Sprintf("part %d of %d", i+1, repoCommits)); err != nil {
			return err
		}
	}
	return git("", "gc", "-q")
}

// treeEntry is what compareTrees checks of one entry.
type treeEntry struct {
	typ  fs.FileMode
	perm fs.FileMode
	size int64
}

// scanTree lists every entry below dir by relative path; skip names
// subtrees left out (a clone's .git).
func scanTree(dir string, skip map[string]bool) (map[string]treeEntry, error) {
	out := map[string]treeEntry{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == dir {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		if skip[rel] {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		e := treeEntry{typ: info.Mode().Type(), perm: info.Mode().Perm()}
		if info.Mode().IsRegular() {
			e.size = info.Size()
		}
		out[rel] = e
		return nil
	})
	return out, err
}

// compareTrees checks that got holds exactly the entries of want (names,
// types, permission bits, sizes) with the same bytes in every file,
// reading both directly, and describes the first differences.
func compareTrees(want, got string, skip map[string]bool) error {
	w, err := scanTree(want, nil)
	if err != nil {
		return err
	}
	g, err := scanTree(got, skip)
	if err != nil {
		return err
	}
	var diffs []string
	var rels []string
	for rel := range w {
		rels = append(rels, rel)
	}
	sort.Strings(rels)
	for _, rel := range rels {
		we := w[rel]
		ge, ok := g[rel]
		delete(g, rel)
		switch {
		case !ok:
			diffs = append(diffs, rel+" missing")
		case ge.typ != we.typ:
			diffs = append(diffs, fmt.Sprintf("%s: type %v, want %v", rel, ge.typ, we.typ))
		case ge.perm != we.perm && we.typ.IsRegular():
			diffs = append(diffs, fmt.Sprintf("%s: mode %v, want %v", rel, ge.perm, we.perm))
		case ge.size != we.size:
			diffs = append(diffs, fmt.Sprintf("%s: %d bytes, want %d", rel, ge.size, we.size))
		case we.typ.IsRegular():
			if same, err := sameContent(filepath.Join(want, rel), filepath.Join(got, rel)); err != nil {
				diffs = append(diffs, fmt.Sprintf("%s: %v", rel, err))
			} else if !same {
				diffs = append(diffs, rel+": contents differ")
			}
		}
	}
	var extra []string
	for rel := range g {
		extra = append(extra, rel)
	}
	sort.Strings(extra)
	for _, rel := range extra {
		diffs = append(diffs, rel+" not in the source")
	}
	if len(diffs) == 0 {
		return nil
	}
	return fmt.Errorf("%s differs from %s in %d entries: %s", got, want, len(diffs),
		strings.Join(diffs[:min(len(diffs), 5)], "; "))
}

// sameContent compares two files byte by byte.
func sameContent(a, b string) (bool, error) {
	fa, err := os.Open(a)
	if err != nil {
		return false, err
	}
	defer fa.Close()
	fb, err := os.Open(b)
	if err != nil {
		return false, err
	}
	defer fb.Close()
	ra, rb := bufio.NewReaderSize(fa, 1<<20), bufio.NewReaderSize(fb, 1<<20)
	ba, bb := make([]byte, 1<<16), make([]byte, 1<<16)
	for {
		na, erra := io.ReadFull(ra, ba)
		nb, errb := io.ReadFull(rb, bb)
		if na != nb || !bytes.Equal(ba[:na], bb[:nb]) {
			return false, nil
		}
		if erra == io.EOF || erra == io.ErrUnexpectedEOF {
			return errb == io.EOF || errb == io.ErrUnexpectedEOF, nil
		}
		if erra != nil {
			return false, erra
		}
		if errb != nil {
			return false, errb
		}
	}
}
