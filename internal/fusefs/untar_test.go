package fusefs

import (
	"archive/tar"
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"sshfsm/internal/namespace"
	"sshfsm/internal/testenv"
	"sshfsm/internal/transport"
)

// mountCounted mounts a fresh directory served by the in-process SFTP
// server and returns the mount and its host, whose counters tell the
// requests the mount sent.
func mountCounted(t *testing.T, o Options) (*testMount, *transport.Host) {
	t.Helper()
	testenv.RequireFUSE(t)
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	h, err := transport.Dial(ctx, transport.Options{Host: "inprocess", Dir: dir, Conns: 2,
		Dialer: testenv.SFTPDialer(dir)})
	if err != nil {
		t.Fatalf("transport.Dial: %v", err)
	}
	t.Cleanup(func() { h.Close() })
	tm := &testMount{dir: dir, mnt: t.TempDir(), logs: &testenv.LogBuffer{}}
	o.Logger = slog.New(slog.NewTextHandler(tm.logs, nil))
	srv, err := Mount(tm.mnt, namespace.Single(h.Remote()), o, MountOptions{FsName: "test", Subtype: "sshfsm"})
	if err != nil {
		t.Fatalf("Mount: %v", err)
	}
	tm.srv = srv
	t.Cleanup(func() {
		tm.unmount(t)
		if t.Failed() {
			t.Logf("filesystem log:\n%s", tm.logs)
		}
	})
	return tm, h
}

// sourceTar is an archive of a small source tree: dirs directories of
// files files each, with modes and mtimes of their own, as tar stores
// them.
func sourceTar(t *testing.T, dirs, files int) []byte {
	t.Helper()
	var b bytes.Buffer
	tw := tar.NewWriter(&b)
	mtime := time.Date(2024, 3, 1, 12, 0, 0, 0, time.UTC)
	add := func(h *tar.Header, data []byte) {
		h.ModTime, h.Format = mtime, tar.FormatPAX
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write(data); err != nil {
			t.Fatal(err)
		}
	}
	add(&tar.Header{Name: "src/", Typeflag: tar.TypeDir, Mode: 0o755}, nil)
	for d := range dirs {
		dir := fmt.Sprintf("src/d%d/", d)
		add(&tar.Header{Name: dir, Typeflag: tar.TypeDir, Mode: 0o755}, nil)
		for f := range files {
			data := []byte(strings.Repeat(fmt.Sprintf("line %d of %d/%d\n", f, d, f), 10*(f+1)))
			mode := int64(0o644)
			if f%5 == 0 {
				mode = 0o755
			}
			add(&tar.Header{Name: fmt.Sprintf("%sf%d.c", dir, f), Typeflag: tar.TypeReg, Mode: mode, Size: int64(len(data))}, data)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// run runs a command, failing the test with its output if it fails.
func run(t *testing.T, name string, args ...string) {
	t.Helper()
	if out, err := exec.Command(name, args...).CombinedOutput(); err != nil {
		t.Fatalf("%s %q: %v: %s", name, args, err, out)
	}
}

// requestsSince returns the requests sent since before, by type.
func requestsSince(h *transport.Host, before map[string]uint64) map[string]uint64 {
	d := map[string]uint64{}
	for k, v := range h.Stats().Requests {
		if v > before[k] {
			d[k] = v - before[k]
		}
	}
	return d
}

func formatCounts(m map[string]uint64, per int) string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	var s []string
	var total uint64
	for _, k := range ks {
		total += m[k]
		s = append(s, fmt.Sprintf("%s %.2f", k, float64(m[k])/float64(per)))
	}
	return fmt.Sprintf("%.2f total: %s", float64(total)/float64(per), strings.Join(s, ", "))
}

// Unpacking a tree with tar onto a fresh mount, and removing it with
// rm -rf, costs about the fewest requests POSIX allows per entry: the
// create carries the file's mode, nothing asks for attributes a reply
// already gave, a directory the mount made is not listed.
func TestUntarRequests(t *testing.T) {
	const dirs, files = 5, 10
	archive := filepath.Join(t.TempDir(), "src.tar")
	if err := os.WriteFile(archive, sourceTar(t, dirs, files), 0o644); err != nil {
		t.Fatal(err)
	}
	ref := t.TempDir()
	run(t, "tar", "-xf", archive, "-C", ref)

	tm, h := mountCounted(t, defaultOpts())
	before := h.Stats().Requests
	run(t, "tar", "-xf", archive, "-C", tm.mnt)
	created := requestsSince(h, before)
	entries := 1 + dirs + dirs*files
	t.Logf("untar, per entry: %s", formatCounts(created, entries))
	sameTree(t, filepath.Join(ref, "src"), filepath.Join(tm.dir, "src"))
	run(t, "diff", "-r", filepath.Join(ref, "src"), filepath.Join(tm.dir, "src"))
	// Per file: the OPEN that creates it, the FSETSTAT and FSTAT that
	// set its mode and learn its attributes, its WRITE, one FSETSTAT
	// for tar's utimes, chown and chmod together, its CLOSE. Per
	// directory: MKDIR, the SETSTAT of its mode and the LSTAT of its
	// attributes, tar's utimes, chown and chmod. Only the mount's root,
	// which the mount did not make, is listed.
	nf, nd := uint64(dirs*files), uint64(1+dirs)
	// tar writes a file in one piece, or two across its record boundary.
	want := map[string]uint64{"OPEN": nf, "WRITE": 2 * nf, "CLOSE": nf + 1, "FSTAT": nf, "FSETSTAT": 2 * nf,
		"MKDIR": nd, "SETSTAT": 4 * nd, "LSTAT": nd, "OPENDIR": 1, "READDIR": 2}
	for typ, n := range created {
		if n > want[typ] {
			t.Errorf("untar sent %d %s, want at most %d", n, typ, want[typ])
		}
	}

	before = h.Stats().Requests
	run(t, "rm", "-rf", filepath.Join(tm.mnt, "src"))
	removed := requestsSince(h, before)
	t.Logf("rm -rf, per entry: %s", formatCounts(removed, entries))
	// The listings rm reads are the mount's own; each name is removed
	// with one request.
	want = map[string]uint64{"REMOVE": nf, "RMDIR": nd}
	for typ, n := range removed {
		if n > want[typ] {
			t.Errorf("rm -rf sent %d %s, want at most %d", n, typ, want[typ])
		}
	}
	if _, err := os.Lstat(filepath.Join(tm.dir, "src")); !os.IsNotExist(err) {
		t.Fatalf("src left on the server: %v", err)
	}
}
