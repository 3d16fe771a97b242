package fusefs

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"sshfsm/internal/cache"
	"sshfsm/internal/contentcache"
	"sshfsm/internal/namespace"
	"sshfsm/internal/remote"
	"sshfsm/internal/testenv"
)

// sumRemote is a branch that computes digests "on the server" (of the
// local directory it serves), counting them; it forwards nothing else
// of hookRemote's counting, which it wraps.
type sumRemote struct {
	*hookRemote
	dir  string
	sums atomic.Int64
}

func (s *sumRemote) SHA256(ctx context.Context, p string) ([32]byte, error) {
	s.sums.Add(1)
	b, err := os.ReadFile(filepath.Join(s.dir, p))
	return sha256.Sum256(b), err
}

// HostName is the transport's, which the hooks hide.
func (s *sumRemote) HostName() string { return s.hookRemote.Remote.(hostNamer).HostName() }

// mountXattr mounts dir with -o xattr and a disk cache in cacheDir; with
// server, the branch computes digests itself (sumRemote).
func mountXattr(t *testing.T, dir, cacheDir string, mode cache.Mode, server bool) (*diskMount, *sumRemote) {
	t.Helper()
	testenv.RequireFUSE(t)
	c, err := contentcache.Open(contentcache.Options{Dir: cacheDir, MaxSize: 1 << 30})
	if err != nil {
		t.Fatal(err)
	}
	o := defaultOpts()
	o.Mode, o.Content, o.ContentID, o.Xattr = mode, c, "test-host", true
	tm := &testMount{dir: dir, mnt: t.TempDir(), logs: &testenv.LogBuffer{}}
	o.Logger = slog.New(slog.NewTextHandler(tm.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	hook := &hookRemote{}
	var r remote.Remote = hook.wrap(newRemote(t, dir))
	sr := &sumRemote{hookRemote: hook, dir: dir}
	if server {
		r = sr
	}
	srv, err := Mount(tm.mnt, namespace.Single(r), o, MountOptions{FsName: "test", Subtype: "sshfsm"})
	if err != nil {
		c.Close()
		t.Fatalf("Mount: %v", err)
	}
	tm.srv = srv
	m := &diskMount{testMount: tm, hook: hook, cache: c}
	t.Cleanup(func() {
		if m.srv != nil {
			m.close(t)
		}
	})
	return m, sr
}

func getDigest(t *testing.T, p string) string {
	t.Helper()
	buf := make([]byte, 128)
	n, err := unix.Getxattr(p, xattrSHA256, buf)
	if err != nil {
		t.Fatalf("getxattr %s: %v", p, err)
	}
	return string(buf[:n])
}

func hexSum(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

var xattrFiles = map[string][]byte{
	"empty": nil,
	"small": []byte("hello\n"),
	"multi": randomBytes(3<<20+12345, 7), // several blocks and a partial one
}

// Without commands on the server, the digest is computed by reading the
// file through the mount, which fills the disk cache: asked again, it
// comes from there without a request to the server.
func TestXattrDigestStreamed(t *testing.T) {
	dir := t.TempDir()
	for name, b := range xattrFiles {
		writeOld(t, filepath.Join(dir, name), b, time.Hour)
	}
	m, _ := mountXattr(t, dir, t.TempDir(), cache.Auto, false)
	for name, b := range xattrFiles {
		p := m.path(name)
		if got, want := getDigest(t, p), hexSum(b); got != want {
			t.Errorf("%s: digest %s, want %s", name, got, want)
		}
		if name == "multi" && m.hook.reads.Load() == 0 && m.hook.opens.Load() == 0 {
			t.Errorf("%s: digest computed without reading the file", name)
		}
	}
	opens, reads, lstats := m.hook.opens.Load(), m.hook.reads.Load(), m.hook.lstats.Load()
	for name, b := range xattrFiles {
		if got, want := getDigest(t, m.path(name)), hexSum(b); got != want {
			t.Errorf("%s again: digest %s, want %s", name, got, want)
		}
	}
	if o, r, l := m.hook.opens.Load()-opens, m.hook.reads.Load()-reads, m.hook.lstats.Load()-lstats; o+r+l != 0 {
		t.Errorf("digests from the disk cache sent %d opens, %d reads, %d lstats", o, r, l)
	}
	// The content read for the digest serves reads too.
	if got := readAll(t, m.path("multi")); string(got) != string(xattrFiles["multi"]) {
		t.Error("content read through the mount differs")
	}
	if r := m.hook.reads.Load() - reads; r != 0 {
		t.Errorf("reading a file whose digest was streamed sent %d reads", r)
	}
}

// A branch that computes digests is asked once; the file is not read.
// The digest is kept by the disk cache for that version, and content
// stored under another path with that digest serves this one.
func TestXattrDigestFromServer(t *testing.T) {
	dir := t.TempDir()
	for name, b := range xattrFiles {
		writeOld(t, filepath.Join(dir, name), b, time.Hour)
	}
	writeOld(t, filepath.Join(dir, "copy"), xattrFiles["multi"], time.Hour)
	m, sr := mountXattr(t, dir, t.TempDir(), cache.Auto, true)
	for name, b := range xattrFiles {
		if got, want := getDigest(t, m.path(name)), hexSum(b); got != want {
			t.Errorf("%s: digest %s, want %s", name, got, want)
		}
	}
	if o, r := m.hook.opens.Load(), m.hook.reads.Load(); o+r != 0 {
		t.Errorf("digests on the server also sent %d opens and %d reads", o, r)
	}
	if n := sr.sums.Load(); n != int64(len(xattrFiles)-1) { // the empty file's is known
		t.Errorf("%d digests on the server for %d files", n, len(xattrFiles)-1)
	}
	// "multi" read in full is stored; its digest is kept with it.
	readAll(t, m.path("multi"))
	getDigest(t, m.path("multi"))
	sums := sr.sums.Load()
	if got := getDigest(t, m.path("multi")); got != hexSum(xattrFiles["multi"]) {
		t.Errorf("multi again: digest %s", got)
	}
	if n := sr.sums.Load(); n != sums {
		t.Errorf("a digest the disk cache knew was asked of the server again (%d, then %d)", sums, n)
	}
	// "copy" has the digest of stored content: it shares it.
	if got := getDigest(t, m.path("copy")); got != hexSum(xattrFiles["multi"]) {
		t.Fatalf("copy: digest %s", got)
	}
	reads := m.hook.reads.Load()
	if got := readAll(t, m.path("copy")); string(got) != string(xattrFiles["multi"]) {
		t.Fatal("copy read through the mount differs")
	}
	if r := m.hook.reads.Load() - reads; r != 0 {
		t.Errorf("a copy of stored content sent %d reads", r)
	}
}

// A file changed on the server gives the digest of its new version once
// the mount sees that version.
func TestXattrDigestChanged(t *testing.T) {
	for _, server := range []bool{false, true} {
		dir := t.TempDir()
		p := filepath.Join(dir, "f")
		writeOld(t, p, []byte("first version"), 2*time.Hour)
		m, _ := mountXattr(t, dir, t.TempDir(), cache.Strict, server)
		if got := getDigest(t, m.path("f")); got != hexSum([]byte("first version")) {
			t.Errorf("server=%v: first digest %s", server, got)
		}
		writeOld(t, p, []byte("second, longer version"), time.Hour)
		if got := getDigest(t, m.path("f")); got != hexSum([]byte("second, longer version")) {
			t.Errorf("server=%v: digest after the change %s", server, got)
		}
		m.close(t)
	}
}

// Written through the mount and not yet closed: the digest covers the
// writes queued.
func TestXattrDigestOfPendingWrites(t *testing.T) {
	m, _ := mountXattr(t, t.TempDir(), t.TempDir(), cache.Auto, false)
	f, err := os.Create(m.path("w"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	data := randomBytes(1<<20+3, 3)
	if _, err := f.Write(data); err != nil {
		t.Fatal(err)
	}
	if got := getDigest(t, m.path("w")); got != hexSum(data) {
		t.Errorf("digest %s, want %s", got, hexSum(data))
	}
}

// listxattr, the host, names that do not exist and attributes that
// cannot be set.
func TestXattrNames(t *testing.T) {
	dir := t.TempDir()
	writeOld(t, filepath.Join(dir, "f"), []byte("x"), time.Hour)
	if err := os.Mkdir(filepath.Join(dir, "d"), 0o755); err != nil {
		t.Fatal(err)
	}
	m, _ := mountXattr(t, dir, t.TempDir(), cache.Auto, true)
	buf := make([]byte, 256)
	for p, want := range map[string]string{"f": xattrSHA256 + "\x00" + xattrHost + "\x00", "d": xattrHost + "\x00", "": xattrHost + "\x00"} {
		n, err := unix.Listxattr(m.path(p), buf)
		if err != nil || string(buf[:max(n, 0)]) != want {
			t.Errorf("listxattr %q: %q %v, want %q", p, buf[:max(n, 0)], err, want)
		}
		if n, err := unix.Listxattr(m.path(p), nil); err != nil || n != len(want) {
			t.Errorf("listxattr %q size: %d %v, want %d", p, n, err, len(want))
		}
		n, err = unix.Getxattr(m.path(p), xattrHost, buf)
		if err != nil || string(buf[:max(n, 0)]) != "inprocess" {
			t.Errorf("host of %q: %q %v", p, buf[:max(n, 0)], err)
		}
	}
	for _, c := range []struct{ p, name string }{{"f", "user.other"}, {"d", xattrSHA256},
		{"f", "system.posix_acl_access"}, {"f", "security.capability"}, {"d", "system.posix_acl_default"}} {
		if _, err := unix.Getxattr(m.path(c.p), c.name, buf); !errors.Is(err, unix.ENODATA) {
			t.Errorf("getxattr %s %s: %v, want ENODATA", c.p, c.name, err)
		}
	}
	if n, err := unix.Getxattr(m.path("f"), xattrSHA256, nil); err != nil || n != 64 {
		t.Errorf("digest size: %d %v", n, err)
	}
	if _, err := unix.Getxattr(m.path("f"), xattrSHA256, buf[:10]); !errors.Is(err, unix.ERANGE) {
		t.Errorf("digest in 10 bytes: %v, want ERANGE", err)
	}
	if err := unix.Setxattr(m.path("f"), "user.a", []byte("v"), 0); !errors.Is(err, syscall.ENOTSUP) {
		t.Errorf("setxattr: %v, want ENOTSUP", err)
	}
	if err := unix.Removexattr(m.path("f"), xattrHost); !errors.Is(err, syscall.ENOTSUP) {
		t.Errorf("removexattr: %v, want ENOTSUP", err)
	}
}

// Over a real sshd, the digest is computed by sha256sum on the server:
// one command, no file read; the same as sha256sum gives locally.
func TestXattrDigestSSH(t *testing.T) {
	th := testenv.StartHost(t, "127.0.0.2")
	names := []string{"empty", "small", "multi", "it's a \"name\" $(x)"}
	for _, name := range names {
		b := xattrFiles[name]
		if b == nil && name != "empty" {
			b = []byte("odd name\n")
		}
		writeOld(t, filepath.Join(th.Dir, name), b, time.Hour)
	}
	o := defaultOpts()
	o.Xattr = true
	tm, h := mountSSH(t, th, o)
	for _, name := range names {
		out, err := exec.Command("sha256sum", filepath.Join(th.Dir, name)).Output()
		if err != nil {
			t.Fatal(err)
		}
		want := strings.TrimPrefix(strings.Fields(string(out))[0], `\`)
		before := h.Stats().Requests
		if got := getDigest(t, tm.path(name)); got != want {
			t.Errorf("%q: digest %s, sha256sum says %s", name, got, want)
		}
		after := h.Stats().Requests
		if e, r := after["exec"]-before["exec"], after["READ"]-before["READ"]; e != 1 || r != 0 {
			t.Errorf("%q: %d commands and %d READs, want 1 and 0", name, e, r)
		}
	}
	buf := make([]byte, 256)
	n, err := unix.Getxattr(tm.path("small"), xattrHost, buf)
	if err != nil || string(buf[:max(n, 0)]) != th.Alias {
		t.Errorf("host: %q %v, want %q", buf[:max(n, 0)], err, th.Alias)
	}
}
