package main

import (
	"bytes"
	"context"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestGenTreeDeterministic: the same spec gives the same tree, byte for
// byte, with the files, size and shape asked for.
func TestGenTreeDeterministic(t *testing.T) {
	spec := specFor(300)
	a, b := filepath.Join(t.TempDir(), "a"), filepath.Join(t.TempDir(), "b")
	ia, err := genTree(a, spec)
	if err != nil {
		t.Fatal(err)
	}
	ib, err := genTree(b, spec)
	if err != nil {
		t.Fatal(err)
	}
	if ia != ib {
		t.Fatalf("two trees of one spec: %v and %v", ia, ib)
	}
	if err := compareTrees(a, b, nil); err != nil {
		t.Fatal(err)
	}
	ents, err := scanTree(a, nil)
	if err != nil {
		t.Fatal(err)
	}
	files, dirs, execs, nested := 0, 0, 0, false
	var total int64
	for rel, e := range ents {
		switch {
		case e.typ.IsDir():
			dirs++
		case e.typ.IsRegular():
			files++
			total += e.size
			if e.perm&0o100 != 0 {
				execs++
			}
		}
		if strings.Count(rel, "/") >= 2 {
			nested = true
		}
	}
	if files != spec.files || files != ia.files || dirs != ia.dirs || total != ia.bytes {
		t.Errorf("tree holds %d files, %d dirs, %d bytes; generator says %v", files, dirs, total, ia)
	}
	if math.Abs(float64(total-spec.bytes)) > 0.05*float64(spec.bytes) {
		t.Errorf("tree of %d bytes, asked for %d", total, spec.bytes)
	}
	if dirs < 10 || !nested || execs == 0 {
		t.Errorf("tree not shaped like a source tree: %d dirs, nested %v, %d executables", dirs, nested, execs)
	}
	c := filepath.Join(t.TempDir(), "c")
	if _, err := genTree(c, treeSpec{files: spec.files, bytes: spec.bytes, seed: spec.seed + 1}); err != nil {
		t.Fatal(err)
	}
	if compareTrees(a, c, nil) == nil {
		t.Error("another seed gave the same tree")
	}
}

// TestReferenceTreeSize: the default tree is the reference workload's
// size.
func TestReferenceTreeSize(t *testing.T) {
	_, files := specFor(writesTreeFiles).layout()
	var total int64
	for _, f := range files {
		total += f.size
	}
	sizes := make([]float64, len(files))
	for i, f := range files {
		sizes[i] = float64(f.size)
	}
	st, _ := summarize(sizes)
	t.Logf("reference tree: %d files, %d bytes, sizes median %.0f, min %.0f, max %.0f", len(files), total, st.med, st.min, st.max)
	if len(files) != writesTreeFiles || math.Abs(float64(total)-writesTreeBytes) > 0.05*writesTreeBytes {
		t.Errorf("reference tree: %d files, %d bytes", len(files), total)
	}
}

// TestCompareTrees: every kind of difference is found.
func TestCompareTrees(t *testing.T) {
	src := filepath.Join(t.TempDir(), "src")
	if _, err := genTree(src, specFor(40)); err != nil {
		t.Fatal(err)
	}
	var some string
	ents, _ := scanTree(src, nil)
	for rel, e := range ents {
		if e.typ.IsRegular() && e.perm&0o100 == 0 && (some == "" || rel < some) {
			some = rel
		}
	}
	for _, tc := range []struct {
		name  string
		spoil func(dir string) error
		want  string
	}{
		{"a byte changed", func(dir string) error {
			b, err := os.ReadFile(filepath.Join(dir, some))
			if err != nil {
				return err
			}
			b[len(b)/2] ^= 1
			return os.WriteFile(filepath.Join(dir, some), b, 0o644)
		}, "contents differ"},
		{"a file missing", func(dir string) error { return os.Remove(filepath.Join(dir, some)) }, "missing"},
		{"a file more", func(dir string) error {
			return os.WriteFile(filepath.Join(dir, "extra.txt"), nil, 0o644)
		}, "not in the source"},
		{"truncated", func(dir string) error { return os.Truncate(filepath.Join(dir, some), 0) }, "bytes, want"},
		{"mode", func(dir string) error { return os.Chmod(filepath.Join(dir, some), 0o600) }, "mode"},
	} {
		dst := filepath.Join(t.TempDir(), "dst")
		if _, err := copyTree(src, dst, 0); err != nil {
			t.Fatal(err)
		}
		if err := compareTrees(src, dst, nil); err != nil {
			t.Fatalf("%s: copy differs before spoiling: %v", tc.name, err)
		}
		if err := tc.spoil(dst); err != nil {
			t.Fatal(err)
		}
		if err := compareTrees(src, dst, nil); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error saying %q", tc.name, err, tc.want)
		}
	}
}

// TestTarAndRepo: the tarball is the same bytes each time and unpacks to
// the tree; a clone of the repository checks out the tree.
func TestTarAndRepo(t *testing.T) {
	for _, tool := range []string{"tar", "git"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s not installed", tool)
		}
	}
	tmp := t.TempDir()
	src := filepath.Join(tmp, "src")
	if _, err := genTree(src, specFor(60)); err != nil {
		t.Fatal(err)
	}
	t1, t2 := filepath.Join(tmp, "1.tar"), filepath.Join(tmp, "2.tar")
	for _, p := range []string{t1, t2} {
		if err := writeTar(src, p); err != nil {
			t.Fatal(err)
		}
	}
	b1, _ := os.ReadFile(t1)
	b2, _ := os.ReadFile(t2)
	if !bytes.Equal(b1, b2) {
		t.Error("two tarballs of one tree differ")
	}
	ws := &writesEnv{src: src, tarball: t1, repo: filepath.Join(tmp, "repo")}
	un := filepath.Join(tmp, "untar")
	if err := os.Mkdir(un, 0o755); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := ws.untar(ctx, un); err != nil {
		t.Fatal(err)
	}
	if err := ws.verifyUntar(ctx, un); err != nil {
		t.Fatal(err)
	}
	if err := makeRepo(ctx, src, ws.repo); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("git", "-C", ws.repo, "rev-list", "--count", "HEAD").Output()
	if err != nil || strings.TrimSpace(string(out)) != "3" {
		t.Fatalf("repository has %q commits (%v), want %d", out, err, repoCommits)
	}
	head, _ := exec.Command("git", "-C", ws.repo, "rev-parse", "HEAD").Output()
	ws.head = strings.TrimSpace(string(head))
	cl := filepath.Join(tmp, "cl")
	if err := os.Mkdir(cl, 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := ws.clone(ctx, cl); err != nil {
		t.Fatal(err)
	}
	if err := ws.verifyClone(ctx, cl); err != nil {
		t.Fatal(err)
	}
	if n := countFiles(ws, filepath.Join(cl, cloneName)); n <= 60 {
		t.Errorf("clone holds %d files, want the tree's 60 and git's own", n)
	}
	if err := os.Remove(filepath.Join(cl, cloneName, firstFile(t, src))); err != nil {
		t.Fatal(err)
	}
	if err := ws.verifyClone(ctx, cl); err == nil {
		t.Error("a clone missing a file passed")
	}
}

// firstFile returns the first regular file of a tree.
func firstFile(t *testing.T, dir string) string {
	ents, err := scanTree(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	first := ""
	for rel, e := range ents {
		if e.typ.IsRegular() && (first == "" || rel < first) {
			first = rel
		}
	}
	return first
}

// TestEditorSaves: the saves leave the last text and no temporary file,
// and the check sees a leftover or an old text.
func TestEditorSaves(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "s")
	if err := prepareSave(nil, dir); err != nil {
		t.Fatal(err)
	}
	vals, err := (&writesEnv{}).saves(context.Background(), dir)
	if err != nil || len(vals) != editorSaves {
		t.Fatalf("%d samples, %v", len(vals), err)
	}
	if err := verifySaves(nil, nil, dir); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, ".notes.txt.3~"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := verifySaves(nil, nil, dir); err == nil {
		t.Error("a leftover temporary file passed")
	}
	os.Remove(filepath.Join(dir, ".notes.txt.3~"))
	if err := os.WriteFile(filepath.Join(dir, saveName), saveContent(editorSaves-1), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := verifySaves(nil, nil, dir); err == nil {
		t.Error("the text of an earlier save passed")
	}
}

func TestVerifyGone(t *testing.T) {
	dir := t.TempDir()
	if err := verifyGone(nil, nil, dir); err == nil {
		t.Error("an existing directory passed")
	}
	if err := verifyGone(nil, nil, filepath.Join(dir, "none")); err != nil {
		t.Error(err)
	}
}

func TestParseRTTs(t *testing.T) {
	got, err := parseRTTs("0, 4ms,30ms")
	if err != nil || len(got) != 3 || got[0] != 0 || got[1] != 4*time.Millisecond || got[2] != 30*time.Millisecond {
		t.Fatalf("parseRTTs: %v, %v", got, err)
	}
	if rttLabel(got[0]) != "lo" || rttLabel(got[2]) != "30ms" {
		t.Errorf("labels %q, %q", rttLabel(got[0]), rttLabel(got[2]))
	}
	for _, bad := range []string{"", "x", "-4ms", ","} {
		if _, err := parseRTTs(bad); err == nil {
			t.Errorf("parseRTTs(%q) passed", bad)
		}
	}
}

func TestRequestsPerFile(t *testing.T) {
	rt := &reqTally{runs: 2, created: 4, byType: map[string]uint64{"OPEN": 4, "WRITE": 8, "CLOSE": 4, "SETSTAT": 2}}
	got := rt.perFile()
	want := "4.50 SFTP requests per created file (WRITE 2.00, CLOSE 1.00, OPEN 1.00, SETSTAT 0.50;"
	if !strings.HasPrefix(got, want) {
		t.Errorf("perFile = %q, want it to start with %q", got, want)
	}
	rm := &reqTally{runs: 1, created: 4, per: "removed name", byType: map[string]uint64{"REMOVE": 3, "RMDIR": 1}}
	got = rm.perFile()
	want = "1.00 SFTP requests per removed name (REMOVE 0.75, RMDIR 0.25; 1 runs, 4 removed names,"
	if !strings.HasPrefix(got, want) {
		t.Errorf("perFile = %q, want it to start with %q", got, want)
	}
}

// TestWritesRows: the group's workloads are registered once per RTT and
// op, and their notes are shown under the table.
func TestWritesRows(t *testing.T) {
	saved, savedMap := workloads, writesWorkloads
	t.Cleanup(func() { workloads, writesWorkloads = saved, savedMap })
	writesWorkloads = map[string]*workload{}
	c := &config{writesFiles: writesTreeFiles, writesCpMiB: 256, writesRTTs: []time.Duration{0, 30 * time.Millisecond}}
	registerWrites(c)
	if len(workloads) != len(saved)+2*len(writeOps) {
		t.Fatalf("%d workloads registered, want %d", len(workloads)-len(saved), 2*len(writeOps))
	}
	untar, cp := writesWorkloads["untar/30ms"], writesWorkloads["cp/lo"]
	if untar == nil || untar.id != "writes-untar-30ms" || cp == nil || cp.id != "writes-cp-lo" {
		t.Fatalf("workloads: %+v, %+v", untar, cp)
	}
	for _, w := range []*workload{untar, cp} {
		if strings.ContainsAny(w.title, "{}%") {
			t.Errorf("title not filled in: %q", w.title)
		}
	}
	if !strings.Contains(untar.title, "30ms RTT") || !strings.Contains(untar.title, "2164 files, 31 MB") ||
		!strings.Contains(cp.title, "loopback") || !strings.Contains(cp.title, "256 MiB") {
		t.Errorf("titles: %q, %q", untar.title, cp.title)
	}
	r := testResults(map[string]map[string][]float64{untar.id: {sshfsmKey: {2}, localKey: {0.5}}})
	r.c.writesRTTs = c.writesRTTs
	(&writesEnv{reqs: map[string]map[string]*reqTally{
		untar.id: {sshfsmKey: {runs: 1, created: 2, byType: map[string]uint64{"OPEN": 2, "WRITE": 4}}}}}).rowNotes(r)
	md := r.markdown()
	for _, want := range []string{"## Notes on the rows",
		"sshfsm: 3.00 SFTP requests per created file (WRITE 2.00, OPEN 1.00;",
		"sshfsm / local disk (medians): 4.00×"} {
		if !strings.Contains(md, want) {
			t.Errorf("report lacks %q:\n%s", want, md)
		}
	}
}
