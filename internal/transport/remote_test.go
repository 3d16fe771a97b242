package transport

import (
	"bytes"
	"context"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"sshfsm/internal/remote"
)

var bg = context.Background()

func TestRemoteBasics(t *testing.T) {
	h, _, dir := dialTest(t, 1, nil)
	r := h.Remote()
	if h.Root() != dir {
		t.Fatalf("root %q, want %q", h.Root(), dir)
	}
	if err := r.Mkdir(bg, "d", 0o750); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(filepath.Join(dir, "d")); err != nil || fi.Mode().Perm() != 0o750 {
		t.Fatalf("mkdir: %v %v", fi.Mode(), err)
	}
	f, err := r.Open(bg, "d/f", os.O_RDWR|os.O_CREATE, 0o640)
	if err != nil {
		t.Fatal(err)
	}
	if n, err := f.WriteAt(bg, []byte("hello world"), 0); n != 11 || err != nil {
		t.Fatal(n, err)
	}
	buf := make([]byte, 20)
	n, err := f.ReadAt(bg, buf, 6)
	if n != 5 || err != io.EOF || string(buf[:n]) != "world" {
		t.Fatalf("read %d %v %q", n, err, buf[:n])
	}
	a, err := f.Stat(bg)
	if err != nil || a.Size != 11 || a.Mode&0o777 != 0o640 || a.Mode&syscall.S_IFMT != syscall.S_IFREG {
		t.Fatalf("fstat %+v %v", a, err)
	}
	if err := f.Truncate(bg, 5); err != nil {
		t.Fatal(err)
	}
	if err := f.Sync(bg); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(bg); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "d/f")); string(b) != "hello" {
		t.Fatalf("content %q", b)
	}
	es, err := r.ReadDir(bg, "d")
	if err != nil || len(es) != 1 || es[0].Name != "f" || es[0].Attr.Size != 5 {
		t.Fatalf("readdir %+v %v", es, err)
	}
	if err := r.Symlink(bg, "f", "d/l"); err != nil {
		t.Fatal(err)
	}
	if tg, err := r.Readlink(bg, "d/l"); err != nil || tg != "f" {
		t.Fatalf("readlink %q %v", tg, err)
	}
	la, err := r.Lstat(bg, "d/l")
	if err != nil || la.Mode&syscall.S_IFMT != syscall.S_IFLNK {
		t.Fatalf("lstat %+v %v", la, err)
	}
	if sa, err := r.Stat(bg, "d/l"); err != nil || sa.Size != 5 {
		t.Fatalf("stat %+v %v", sa, err)
	}
	if err := r.Link(bg, "d/f", "d/hard"); err != nil {
		t.Fatal(err)
	}
	if err := r.Rename(bg, "d/hard", "d/h2", false); err != nil {
		t.Fatal(err)
	}
	if a, err := r.Lstat(bg, "d/h2"); err != nil || a.Size != 5 {
		t.Fatalf("renamed link: %+v %v", a, err)
	}
	if err := r.Remove(bg, "d/h2"); err != nil {
		t.Fatal(err)
	}
	if err := r.Remove(bg, "d/l"); err != nil {
		t.Fatal(err)
	}
	mode, uid := uint32(0o604), uint32(os.Getuid())
	mt := time.Unix(1_600_000_000, 0)
	if err := r.SetAttr(bg, "d/f", remote.SetAttr{Mode: &mode, UID: &uid, Mtime: &mt}); err != nil {
		t.Fatal(err)
	}
	sa, err := r.Stat(bg, "d/f")
	if err != nil || sa.Mode&0o7777 != 0o604 || !sa.Mtime.Equal(mt) || sa.UID != uid {
		t.Fatalf("setattr: %+v %v", sa, err)
	}
	sz := uint64(2)
	if err := r.SetAttr(bg, "d/f", remote.SetAttr{Size: &sz}); err != nil {
		t.Fatal(err)
	}
	if sa, _ := r.Stat(bg, "d/f"); sa.Size != 2 {
		t.Fatalf("size %d", sa.Size)
	}
	if st, err := r.StatFS(bg, ""); err != nil || st.Blocks == 0 || st.Bsize == 0 {
		t.Fatalf("statfs %+v %v", st, err)
	}
	if err := r.Remove(bg, "d/f"); err != nil {
		t.Fatal(err)
	}
	if err := r.Rmdir(bg, "d"); err != nil {
		es, _ := os.ReadDir(filepath.Join(dir, "d"))
		t.Fatal(err, es)
	}
	if uid, _, ok := h.RemoteUser(); !ok || uid != uint32(os.Getuid()) {
		t.Fatalf("remote user %d %v", uid, ok)
	}
}

func TestErrorMapping(t *testing.T) {
	h, _, dir := dialTest(t, 1, nil)
	r := h.Remote()
	os.MkdirAll(filepath.Join(dir, "full/sub"), 0o755)
	os.MkdirAll(filepath.Join(dir, "empty"), 0o755)
	os.WriteFile(filepath.Join(dir, "file"), []byte("x"), 0o644)
	os.WriteFile(filepath.Join(dir, "file2"), []byte("y"), 0o644)
	excl := func(p string) error {
		_, err := r.Open(bg, p, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o644)
		return err
	}
	open := func(p string) error {
		f, err := r.Open(bg, p, os.O_RDONLY, 0)
		if err == nil {
			f.Close(bg)
		}
		return err
	}
	cases := []struct {
		name string
		err  error
		want error
	}{
		{"stat missing", func() error { _, err := r.Stat(bg, "nope"); return err }(), fs.ErrNotExist},
		{"open missing", open("nope"), fs.ErrNotExist},
		{"readdir missing", func() error { _, err := r.ReadDir(bg, "nope"); return err }(), fs.ErrNotExist},
		{"mkdir exists", r.Mkdir(bg, "file", 0o755), fs.ErrExist},
		{"mkdir exists dir", r.Mkdir(bg, "empty", 0o755), fs.ErrExist},
		{"symlink exists", r.Symlink(bg, "x", "file"), fs.ErrExist},
		{"link exists", r.Link(bg, "file", "file2"), fs.ErrExist},
		{"open excl exists", excl("file"), fs.ErrExist},
		{"rmdir non-empty", r.Rmdir(bg, "full"), syscall.ENOTEMPTY},
		{"rename noreplace", r.Rename(bg, "file", "file2", true), fs.ErrExist},
		{"rename dir onto file", r.Rename(bg, "empty", "file", false), syscall.ENOTDIR},
		{"rename missing", r.Rename(bg, "nope", "x", false), fs.ErrNotExist},
		{"remove missing", r.Remove(bg, "nope"), fs.ErrNotExist},
	}
	for _, c := range cases {
		if !errors.Is(c.err, c.want) {
			t.Errorf("%s: got %v, want %v", c.name, c.err, c.want)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "file2")); string(b) != "y" {
		t.Errorf("noreplace rename replaced the target")
	}
}

func TestOpenCreateKeepsExistingMode(t *testing.T) {
	h, _, dir := dialTest(t, 1, nil)
	p := filepath.Join(dir, "f")
	os.WriteFile(p, []byte("abc"), 0o600)
	f, err := h.Remote().Open(bg, "f", os.O_WRONLY|os.O_CREATE, 0o777)
	if err != nil {
		t.Fatal(err)
	}
	f.Close(bg)
	if fi, _ := os.Stat(p); fi.Mode().Perm() != 0o600 || fi.Size() != 3 {
		t.Fatalf("existing file changed: %v %d", fi.Mode(), fi.Size())
	}
	f, err = h.Remote().Open(bg, "f", os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o777)
	if err != nil {
		t.Fatal(err)
	}
	f.Close(bg)
	if fi, _ := os.Stat(p); fi.Size() != 0 {
		t.Fatalf("O_TRUNC ignored")
	}
	_ = bytes.Equal
}

// A creating open knows the new file's attributes, its permissions set
// (the FSTAT that learns them travels with the FSETSTAT, answered before
// or after it): the same as a later FSTAT. An open that found the file
// does not claim them.
func TestOpenCreateKnowsAttributes(t *testing.T) {
	h, _, _ := dialTest(t, 1, nil)
	for _, perm := range []uint32{0o640, 0o600, 0o2755} {
		name := "f" + strconv.FormatUint(uint64(perm), 8)
		f, err := h.Remote().Open(bg, name, os.O_RDWR|os.O_CREATE|os.O_EXCL, perm)
		if err != nil {
			t.Fatal(err)
		}
		a, ok := f.(remote.CreatedFile).CreatedAttr()
		st, err := f.Stat(bg)
		f.Close(bg)
		if err != nil {
			t.Fatal(err)
		}
		if !ok || a.Mode&07777 != perm || a.Mode&syscall.S_IFMT != syscall.S_IFREG || a.Size != 0 {
			t.Errorf("%s: created attributes %+v, %v", name, a, ok)
		}
		if a.Mode != st.Mode || a.Size != st.Size || a.UID != st.UID || a.GID != st.GID || !a.Mtime.Equal(st.Mtime) {
			t.Errorf("%s: created attributes %+v, FSTAT after %+v", name, a, st)
		}
	}
	f, err := h.Remote().Open(bg, "f640", os.O_RDWR|os.O_CREATE, 0o777)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close(bg)
	if a, ok := f.(remote.CreatedFile).CreatedAttr(); ok {
		t.Errorf("an open that found the file claims created attributes %+v", a)
	}
}

func TestPathsStayUnderRoot(t *testing.T) {
	h, _, dir := dialTest(t, 1, nil)
	os.WriteFile(filepath.Join(dir, "f"), nil, 0o644)
	if _, err := h.Remote().Stat(bg, "../../f"); err != nil {
		t.Fatalf("..-path escaped the root: %v", err)
	}
}

// RemoteAt serves another directory of the host over the same channels;
// closing it leaves the host working.
func TestRemoteAt(t *testing.T) {
	h, ts, dir := dialTest(t, 1, nil)
	if err := os.MkdirAll(filepath.Join(dir, "other", "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "top.txt"), []byte("top"), 0o644); err != nil {
		t.Fatal(err)
	}
	r, err := h.RemoteAt(bg, filepath.Join(dir, "other"))
	if err != nil {
		t.Fatal(err)
	}
	f, err := r.Open(bg, "sub/new.txt", os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt(bg, []byte("hello"), 0); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(bg); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "other", "sub", "new.txt")); err != nil || string(b) != "hello" {
		t.Fatalf("file through RemoteAt: %q %v", b, err)
	}
	if _, err := r.Lstat(bg, "top.txt"); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("top.txt seen from other/: %v", err)
	}
	if _, err := r.Lstat(bg, "../top.txt"); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("../top.txt escaped the root: %v", err)
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	if a, err := h.Remote().Lstat(bg, "top.txt"); err != nil || a.Size != 3 {
		t.Fatalf("host after closing RemoteAt: %+v %v", a, err)
	}
	if ts.count() != 1 {
		t.Fatalf("%d sessions, want the one of Dial", ts.count())
	}
	for _, c := range []struct {
		dir  string
		kind error
	}{{filepath.Join(dir, "nope"), ErrNoDir}, {filepath.Join(dir, "top.txt"), ErrNotDir}} {
		if _, err := h.RemoteAt(bg, c.dir); !errors.Is(err, c.kind) {
			t.Errorf("RemoteAt(%s): %v, want %v", c.dir, err, c.kind)
		}
	}
}
