package fusefs

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"strings"
	"syscall"
	"testing"

	"github.com/hanwen/go-fuse/v2/fuse"

	"sshfsm/internal/remote"
	"sshfsm/internal/testenv"
)

func TestToErrno(t *testing.T) {
	var logs testenv.LogBuffer
	f := &filesys{log: slog.New(slog.NewTextHandler(&logs, nil))}
	cases := []struct {
		err  error
		want syscall.Errno
	}{
		{nil, 0},
		{syscall.ENOTEMPTY, syscall.ENOTEMPTY},
		{fmt.Errorf("rmdir x: %w", syscall.ENOTEMPTY), syscall.ENOTEMPTY},
		{fmt.Errorf("stat: %w", fs.ErrNotExist), syscall.ENOENT},
		{fs.ErrExist, syscall.EEXIST},
		{fs.ErrPermission, syscall.EACCES},
		{fmt.Errorf("call: %w", context.Canceled), syscall.EINTR},
		{context.DeadlineExceeded, syscall.ETIMEDOUT},
		{errors.New("mystery"), syscall.EIO},
		{errors.New("mystery"), syscall.EIO},
	}
	for _, c := range cases {
		if got := f.toErrno(c.err); got != c.want {
			t.Errorf("toErrno(%v) = %v, want %v", c.err, got, c.want)
		}
	}
	if n := strings.Count(logs.String(), "mystery"); n != 1 {
		t.Errorf("unknown error logged %d times, want once", n)
	}
}

func TestTransformTarget(t *testing.T) {
	cases := []struct{ prefix, at, link, target, want string }{
		{"/srv", "", "l", "/srv/x", "x"},
		{"/srv", "", "a/b/l", "/srv/x", "../../x"},
		{"/srv/", "", "a/l", "/srv", ".."},
		{"/srv", "", "l", "/srv", "."},
		{"/srv", "", "l", "/srvx/y", "/srvx/y"},
		{"/srv", "", "l", "/etc/passwd", "/etc/passwd"},
		{"/srv", "", "l", "rel", "rel"},
		{"/", "", "a/l", "/x", "../x"},
		{"/srv", "G", "G/l", "/srv/x", "../G/x"},
		{"/srv", "G", "G/a/l", "/srv", "../../G"},
		{"/srv", "G", "G/l", "/etc", "/etc"},
	}
	for _, c := range cases {
		if got := transformTarget(c.prefix, c.at, c.link, c.target); got != c.want {
			t.Errorf("transformTarget(%q, %q, %q, %q) = %q, want %q", c.prefix, c.at, c.link, c.target, got, c.want)
		}
	}
}

func TestInoTable(t *testing.T) {
	it := newInoTable(nil)
	a := it.get("a")
	if a != hashIno("a") || it.get("") != rootIno {
		t.Fatalf("get: %d", a)
	}
	it.move("a", "b", a)
	if it.get("b") != a {
		t.Errorf("renamed path lost its number")
	}
	if it.get("a") == a {
		t.Errorf("old path reuses the renamed file's number")
	}
	c := it.get("c")
	it.detach("c", c)
	if it.get("c") == c {
		t.Errorf("detached number handed out again")
	}
	it.release(c)
	it.move("b", "a2/x", a)
	it.move("a2", "a3", hashIno("a2"))
	if it.get("a3/x") != a {
		t.Errorf("number below a renamed directory lost")
	}
}

type fakeMap struct{}

func (fakeMap) LocalUID(r uint32) (uint32, bool)  { return r + 1000, r == 1 }
func (fakeMap) LocalGID(r uint32) (uint32, bool)  { return r + 2000, r == 1 }
func (fakeMap) RemoteUID(l uint32) (uint32, bool) { return l - 1000, l == 1001 }
func (fakeMap) RemoteGID(l uint32) (uint32, bool) { return l - 2000, l == 2001 }

func TestFillAttr(t *testing.T) {
	u, g, m := uint32(7), uint32(8), uint32(0o027)
	cases := []struct {
		name     string
		o        Options
		in       remote.Attr
		uid, gid uint32
		mode     uint32
	}{
		{"identity", Options{}, remote.Attr{Mode: syscall.S_IFREG | 0o777, UID: 1, GID: 1}, 1, 1, syscall.S_IFREG | 0o777},
		{"idmap", Options{IDMap: fakeMap{}}, remote.Attr{Mode: 0o644, UID: 1, GID: 1}, 1001, 2001, syscall.S_IFREG | 0o644},
		{"idmap unmapped", Options{IDMap: fakeMap{}}, remote.Attr{Mode: 0o644, UID: 5, GID: 5}, 5, 5, syscall.S_IFREG | 0o644},
		{"uid gid umask", Options{UID: &u, GID: &g, Umask: &m, IDMap: fakeMap{}}, remote.Attr{Mode: syscall.S_IFDIR | 0o777, UID: 1, GID: 1}, 7, 8, syscall.S_IFDIR | 0o750},
		// umask= replaces the permissions, as libfuse's: 0777 less the mask.
		{"umask widens", Options{Umask: &m}, remote.Attr{Mode: syscall.S_IFREG | 0o600}, 0, 0, syscall.S_IFREG | 0o750},
		{"umask drops setuid", Options{Umask: &m}, remote.Attr{Mode: syscall.S_IFREG | syscall.S_ISUID | 0o755}, 0, 0, syscall.S_IFREG | 0o750},
		{"umask of a link", Options{Umask: &m}, remote.Attr{Mode: syscall.S_IFLNK | 0o777}, 0, 0, syscall.S_IFLNK | 0o750},
	}
	for _, c := range cases {
		f := &filesys{opts: c.o}
		var out fuse.Attr
		f.fillAttr(&out, c.in)
		if out.Uid != c.uid || out.Gid != c.gid || out.Mode != c.mode {
			t.Errorf("%s: uid %d gid %d mode %o; want %d %d %o", c.name, out.Uid, out.Gid, out.Mode, c.uid, c.gid, c.mode)
		}
	}
	f := &filesys{opts: Options{IDMap: fakeMap{}}}
	in := &fuse.SetAttrIn{SetAttrInCommon: fuse.SetAttrInCommon{Valid: fuse.FATTR_UID | fuse.FATTR_GID, Owner: fuse.Owner{Uid: 1001, Gid: 3}}}
	sa := f.remoteSetAttr(in)
	if *sa.UID != 1 || *sa.GID != 3 {
		t.Errorf("remote ids %d %d, want 1 3", *sa.UID, *sa.GID)
	}
}

// A lent read buffer goes back to the remote at Done. With splicing off,
// go-fuse calls Done before writing the reply unless the result is
// vectored, so lentResult must stay vectored and hand out its own buffer.
func TestLentResultVectored(t *testing.T) {
	released := false
	data := []byte("lent bytes")
	var r fuse.ReadResult = &lentResult{data: data, release: func() { released = true }}
	v, ok := r.(interface {
		Slices() ([][]byte, fuse.Status)
	})
	if !ok {
		t.Fatal("lentResult is not vectored: its buffer would be released before the reply is written")
	}
	s, st := v.Slices()
	if !st.Ok() || len(s) != 1 || &s[0][0] != &data[0] || len(s[0]) != len(data) {
		t.Fatalf("Slices() = %q, %v; want the lent buffer itself", s, st)
	}
	r.Done()
	r.Done()
	if !released {
		t.Fatal("Done did not release the buffer")
	}
}
