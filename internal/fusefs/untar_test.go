package fusefs

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"sshfsm/internal/namespace"
	"sshfsm/internal/remote"
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
	// Per file: the OPEN that creates it with its mode and the LSTAT
	// sent behind it (one round trip), its WRITE, one FSETSTAT for
	// tar's utimes, chown and chmod together, its CLOSE. Per directory:
	// MKDIR, the SETSTAT of its mode and the LSTAT of its attributes,
	// tar's utimes, chown and chmod. Only the mount's root, which the
	// mount did not make, is listed.
	nf, nd := uint64(dirs*files), uint64(1+dirs)
	// tar writes a file in one piece, or two across its record boundary.
	want := map[string]uint64{"OPEN": nf, "WRITE": 2 * nf, "CLOSE": nf + 1, "FSETSTAT": nf,
		"MKDIR": nd, "SETSTAT": 4 * nd, "LSTAT": nf + nd, "OPENDIR": 1, "READDIR": 2}
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

// attrFailRemote fails every attribute change a file's handle sends.
type attrFailRemote struct {
	remote.Remote
	err error
}

func (r *attrFailRemote) Open(ctx context.Context, p string, flags int, perm uint32) (remote.File, error) {
	f, err := r.Remote.Open(ctx, p, flags, perm)
	if err != nil {
		return nil, err
	}
	return &attrFailFile{File: f, err: r.err}, nil
}

type attrFailFile struct {
	remote.File
	err error
}

func (f *attrFailFile) CreatedAttr() (remote.Attr, bool) {
	if cf, ok := f.File.(remote.CreatedFile); ok {
		return cf.CreatedAttr()
	}
	return remote.Attr{}, false
}

func (f *attrFailFile) SetAttrs(context.Context, remote.SetAttr) error { return f.err }

// A mode change queued behind a new file's writes that the server
// refuses is reported when the file is closed.
func TestQueuedAttrErrorAtClose(t *testing.T) {
	tm := mountWith(t, defaultOpts(), func(r remote.Remote) remote.Remote {
		return &attrFailRemote{Remote: r, err: syscall.EPERM}
	})
	f, err := os.OpenFile(tm.path("new"), os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write([]byte("data")); err != nil {
		t.Fatal(err)
	}
	if err := f.Chmod(0o640); err != nil {
		t.Fatalf("chmod: %v (queued: the answer comes at close)", err)
	}
	if err := f.Close(); !errors.Is(err, syscall.EPERM) {
		t.Fatalf("close: %v, want EPERM", err)
	}
	if got, err := os.ReadFile(filepath.Join(tm.dir, "new")); err != nil || string(got) != "data" {
		t.Fatalf("server has %q, %v", got, err)
	}
}

// Attribute changes on a new file's handle reach the server in the order
// made: the set-user-ID bit set after a chown survives it, the mtime set
// after the writes is the file's, and a write after a set mtime moves it.
func TestQueuedAttrsApplied(t *testing.T) {
	tm, _ := mountCounted(t, defaultOpts())
	mtime := time.Date(2021, 5, 6, 7, 8, 9, 0, time.UTC)
	f, err := os.OpenFile(tm.path("suid"), os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write([]byte("#!/bin/sh\n")); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(tm.path("suid"), mtime, mtime); err != nil {
		t.Fatal(err)
	}
	if err := f.Chown(os.Getuid(), os.Getgid()); err != nil {
		t.Fatal(err)
	}
	if err := f.Chmod(0o755 | os.ModeSetuid); err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(tm.path("suid"))
	if err != nil || st.Mode() != 0o755|os.ModeSetuid || !st.ModTime().Equal(mtime) || st.Size() != 10 {
		t.Fatalf("mount reports %v %v size %d, %v", st.Mode(), st.ModTime(), st.Size(), err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	st, err = os.Stat(filepath.Join(tm.dir, "suid"))
	if err != nil || st.Mode() != 0o755|os.ModeSetuid || !st.ModTime().Equal(mtime) {
		t.Fatalf("server has %v %v, %v", st.Mode(), st.ModTime(), err)
	}

	f, err = os.OpenFile(tm.path("later"), os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(tm.path("later"), mtime, mtime); err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write([]byte("x")); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	st, err = os.Stat(filepath.Join(tm.dir, "later"))
	if err != nil || st.ModTime().Equal(mtime) {
		t.Fatalf("a write after a set mtime left it at %v, %v", st.ModTime(), err)
	}
}
