package fusefs

import (
	"bytes"
	"errors"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hanwen/go-fuse/v2/fs"
	"golang.org/x/sys/unix"

	"sshfsm/internal/namespace"
	"sshfsm/internal/testenv"
)

// mountDebug mounts a fresh remote directory with go-fuse's request log,
// to count the requests the kernel sends.
func mountDebug(t *testing.T) (*testMount, *testenv.LogBuffer) {
	t.Helper()
	testenv.RequireFUSE(t)
	dir, mnt := t.TempDir(), t.TempDir()
	fsys := newFilesys(namespace.Single(newRemote(t, dir)), defaultOpts())
	o := fsys.fsOptions(MountOptions{FsName: "test", Subtype: "sshfsm", Debug: true})
	debug := &testenv.LogBuffer{}
	o.MountOptions.Logger = log.New(debug, "", 0)
	srv, err := fs.Mount(mnt, fsys.root, o)
	if err != nil {
		t.Fatalf("Mount: %v", err)
	}
	tm := &testMount{dir: dir, mnt: mnt, srv: srv, logs: &testenv.LogBuffer{}}
	t.Cleanup(func() { tm.unmount(t) })
	return tm, debug
}

// ls -l asks for each file's ACL. The first attribute request, whatever
// its name, tells the kernel to stop asking: one request per mount, not
// one per file. Without ACLs the kernel answers ENODATA for them, and
// EOPNOTSUPP for other names.
func TestXattrAskedOnce(t *testing.T) {
	tm, debug := mountDebug(t)
	buf := make([]byte, 64)
	for i := range 3 {
		p := tm.path(fmt.Sprint("f", i))
		mustWrite(t, p, []byte("x"))
		for _, c := range []struct {
			name string
			want error
		}{{"system.posix_acl_access", syscall.ENODATA}, {"system.posix_acl_default", syscall.ENODATA},
			{"security.capability", syscall.ENOTSUP}, {"user.a", syscall.ENOTSUP}} {
			if _, err := unix.Lgetxattr(p, c.name, buf); err != c.want {
				t.Errorf("getxattr %s %s: %v, want %v", p, c.name, err, c.want)
			}
		}
	}
	if n := strings.Count(debug.String(), ": GETXATTR "); n != 1 {
		t.Errorf("%d GETXATTR requests reached the filesystem, want 1", n)
	}
}

// A read-only descriptor has nothing to flush: its close(2) costs no
// FLUSH request. A writable one's close still flushes, which reports write
// errors.
func TestFlushOnlyWritable(t *testing.T) {
	tm, debug := mountDebug(t)
	mustWrite(t, tm.path("f"), []byte("x"))
	flushes := func() int { return strings.Count(debug.String(), ": FLUSH ") }
	before := flushes()
	for range 3 {
		f, err := os.Open(tm.path("f"))
		if err != nil {
			t.Fatal(err)
		}
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
	}
	if n := flushes() - before; n != 0 {
		t.Errorf("closing 3 read-only descriptors sent %d FLUSH requests, want none", n)
	}
	f, err := os.OpenFile(tm.path("f"), os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if n := flushes() - before; n != 1 {
		t.Errorf("closing a writable descriptor sent %d FLUSH requests, want 1", n)
	}
}

// TestErrnos checks the errno of each failing operation.
func TestErrnos(t *testing.T) {
	tm := mountWith(t, defaultOpts(), nil)
	mustWrite(t, tm.path("file"), []byte("x"))
	mustWrite(t, tm.path("other"), []byte("y"))
	if err := os.MkdirAll(tm.path("dir/sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(tm.path("empty"), 0o755); err != nil {
		t.Fatal(err)
	}
	long := strings.Repeat("n", 256)
	buf := make([]byte, 64)
	cases := []struct {
		name string
		op   func() error
		want syscall.Errno
	}{
		{"mkdir existing", func() error { return syscall.Mkdir(tm.path("dir"), 0o755) }, syscall.EEXIST},
		{"create O_EXCL existing", func() error {
			fd, err := syscall.Open(tm.path("file"), syscall.O_CREAT|syscall.O_EXCL|syscall.O_WRONLY, 0o644)
			if err == nil {
				syscall.Close(fd)
			}
			return err
		}, syscall.EEXIST},
		{"rmdir non-empty", func() error { return syscall.Rmdir(tm.path("dir")) }, syscall.ENOTEMPTY},
		{"rmdir file", func() error { return syscall.Rmdir(tm.path("file")) }, syscall.ENOTDIR},
		{"unlink dir", func() error { return syscall.Unlink(tm.path("empty")) }, syscall.EISDIR},
		{"open dir for write", func() error { _, err := syscall.Open(tm.path("dir"), syscall.O_WRONLY, 0); return err }, syscall.EISDIR},
		{"lookup below file", func() error { var st syscall.Stat_t; return syscall.Lstat(tm.path("file/x"), &st) }, syscall.ENOTDIR},
		{"stat missing", func() error { var st syscall.Stat_t; return syscall.Lstat(tm.path("nope"), &st) }, syscall.ENOENT},
		{"unlink missing", func() error { return syscall.Unlink(tm.path("nope")) }, syscall.ENOENT},
		{"rename over non-empty dir", func() error { return syscall.Rename(tm.path("empty"), tm.path("dir")) }, syscall.ENOTEMPTY},
		{"rename exchange", func() error {
			return unix.Renameat2(unix.AT_FDCWD, tm.path("file"), unix.AT_FDCWD, tm.path("other"), unix.RENAME_EXCHANGE)
		}, syscall.EINVAL},
		{"rename noreplace existing", func() error {
			return unix.Renameat2(unix.AT_FDCWD, tm.path("file"), unix.AT_FDCWD, tm.path("other"), unix.RENAME_NOREPLACE)
		}, syscall.EEXIST},
		{"name too long", func() error { return syscall.Mkdir(tm.path(long), 0o755) }, syscall.ENAMETOOLONG},
		{"mknod fifo", func() error { return syscall.Mknod(tm.path("fifo"), syscall.S_IFIFO|0o644, 0) }, syscall.EPERM},
		{"getxattr", func() error { _, err := unix.Getxattr(tm.path("file"), "user.a", buf); return err }, syscall.ENOTSUP},
		{"getxattr again", func() error { _, err := unix.Lgetxattr(tm.path("file"), "security.selinux", buf); return err }, syscall.ENOTSUP},
		{"listxattr", func() error { _, err := unix.Listxattr(tm.path("file"), buf); return err }, syscall.ENOTSUP},
		{"setxattr", func() error { return unix.Setxattr(tm.path("file"), "user.a", []byte("v"), 0) }, syscall.ENOTSUP},
		{"removexattr", func() error { return unix.Removexattr(tm.path("file"), "user.a") }, syscall.ENOTSUP},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if err := c.op(); err != c.want {
				t.Errorf("got %v, want %v", err, c.want)
			}
		})
	}
	// NOREPLACE onto a free name works.
	if err := unix.Renameat2(unix.AT_FDCWD, tm.path("other"), unix.AT_FDCWD, tm.path("free"), unix.RENAME_NOREPLACE); err != nil {
		t.Errorf("rename noreplace to a free name: %v", err)
	}
	if err := syscall.Mknod(tm.path("reg"), syscall.S_IFREG|0o600, 0); err != nil {
		t.Errorf("mknod regular: %v", err)
	} else if fi, err := os.Stat(filepath.Join(tm.dir, "reg")); err != nil || !fi.Mode().IsRegular() {
		t.Errorf("mknod regular on the remote: %v %v", fi, err)
	}
}

// TestReadOnly checks that every modification fails with EROFS.
func TestReadOnly(t *testing.T) {
	o := defaultOpts()
	o.ReadOnly = true
	tm := mountWith(t, o, nil)
	if err := os.WriteFile(filepath.Join(tm.dir, "file"), []byte("data"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(tm.dir, "dir"), 0o755); err != nil {
		t.Fatal(err)
	}
	ops := map[string]func() error{
		"create":   func() error { return os.WriteFile(tm.path("new"), nil, 0o644) },
		"open rw":  func() error { f, err := os.OpenFile(tm.path("file"), os.O_RDWR, 0); f.Close(); return err },
		"mkdir":    func() error { return syscall.Mkdir(tm.path("d2"), 0o755) },
		"unlink":   func() error { return syscall.Unlink(tm.path("file")) },
		"rmdir":    func() error { return syscall.Rmdir(tm.path("dir")) },
		"rename":   func() error { return syscall.Rename(tm.path("file"), tm.path("f2")) },
		"chmod":    func() error { return syscall.Chmod(tm.path("file"), 0o600) },
		"truncate": func() error { return syscall.Truncate(tm.path("file"), 0) },
		"symlink":  func() error { return syscall.Symlink("file", tm.path("l")) },
		"link":     func() error { return syscall.Link(tm.path("file"), tm.path("l2")) },
	}
	for name, op := range ops {
		if err := op(); !errors.Is(err, syscall.EROFS) {
			t.Errorf("%s: got %v, want EROFS", name, err)
		}
	}
	if got, err := os.ReadFile(tm.path("file")); err != nil || string(got) != "data" {
		t.Errorf("read: %q, %v", got, err)
	}
}

// TestLargeSparse writes past 4 GiB and reads the hole and the data back.
func TestLargeSparse(t *testing.T) {
	tm := mountWith(t, defaultOpts(), nil)
	const off = 5<<30 + 123
	f, err := os.Create(tm.path("big"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt([]byte("tail"), off); err != nil {
		t.Fatal(err)
	}
	if fi, err := f.Stat(); err != nil || fi.Size() != off+4 {
		t.Errorf("fstat before close: %v %v, want size %d", fi.Size(), err, off+4)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	g, err := os.Open(tm.path("big"))
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	buf := make([]byte, 16)
	if _, err := g.ReadAt(buf, off-12); err != nil {
		t.Fatal(err)
	}
	if want := append(make([]byte, 12), "tail"...); !bytes.Equal(buf, want) {
		t.Errorf("read %q, want %q", buf, want)
	}
	if fi, err := os.Stat(filepath.Join(tm.dir, "big")); err != nil || fi.Size() != off+4 {
		t.Errorf("remote size %v %v", fi.Size(), err)
	}
}

// TestMmap writes through a shared writable mapping and reads it back.
func TestMmap(t *testing.T) {
	tm := mountWith(t, defaultOpts(), nil)
	testenv.HoldGC(t) // the mount is served by this process
	const size = 3 * 4096
	mustWrite(t, tm.path("m"), make([]byte, size))
	f, err := os.OpenFile(tm.path("m"), os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	mem, err := unix.Mmap(int(f.Fd()), 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		t.Fatalf("mmap: %v", err)
	}
	copy(mem[4096:], "hello mmap")
	if err := unix.Msync(mem, unix.MS_SYNC); err != nil {
		t.Errorf("msync: %v", err)
	}
	if err := unix.Munmap(mem); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
	got, err := os.ReadFile(filepath.Join(tm.dir, "m"))
	if err != nil || string(got[4096:4106]) != "hello mmap" {
		t.Errorf("remote content %q %v", got[4096:4106], err)
	}
	g, err := os.Open(tm.path("m"))
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	rm, err := unix.Mmap(int(g.Fd()), 0, size, unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Munmap(rm)
	if string(rm[4096:4106]) != "hello mmap" {
		t.Errorf("mmap read %q", rm[4096:4106])
	}
}

// TestUnlinkWhileOpen reads a file after its name is gone.
func TestUnlinkWhileOpen(t *testing.T) {
	tm := mountWith(t, defaultOpts(), nil)
	mustWrite(t, tm.path("f"), []byte("still here"))
	f, err := os.Open(tm.path("f"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := os.Remove(tm.path("f")); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(tm.path("f")); !os.IsNotExist(err) {
		t.Errorf("lstat after unlink: %v", err)
	}
	buf := make([]byte, 64)
	n, err := f.ReadAt(buf, 0)
	if string(buf[:n]) != "still here" {
		t.Errorf("read after unlink: %q %v", buf[:n], err)
	}
	var st syscall.Stat_t
	if err := syscall.Fstat(int(f.Fd()), &st); err != nil || st.Nlink != 0 || st.Size != 10 {
		t.Errorf("fstat after unlink: nlink %d size %d %v", st.Nlink, st.Size, err)
	}
	// A new file under the old name is a different inode.
	mustWrite(t, tm.path("f"), []byte("new"))
	var st2 syscall.Stat_t
	if err := syscall.Stat(tm.path("f"), &st2); err != nil || st2.Ino == st.Ino {
		t.Errorf("new file ino %d, old %d, %v", st2.Ino, st.Ino, err)
	}
}

// TestInodeStable checks inode numbers across rename, of files and of
// files inside a renamed directory, and across remounts.
func TestInodeStable(t *testing.T) {
	tm := mountWith(t, defaultOpts(), nil)
	ino := func(p string) uint64 {
		t.Helper()
		var st syscall.Stat_t
		if err := syscall.Lstat(tm.path(p), &st); err != nil {
			t.Fatal(err)
		}
		return st.Ino
	}
	if err := os.Mkdir(tm.path("d"), 0o755); err != nil {
		t.Fatal(err)
	}
	mustWrite(t, tm.path("d/f"), []byte("x"))
	mustWrite(t, tm.path("a"), []byte("x"))
	ia, idir, ifile := ino("a"), ino("d"), ino("d/f")
	if err := os.Rename(tm.path("a"), tm.path("b")); err != nil {
		t.Fatal(err)
	}
	if got := ino("b"); got != ia {
		t.Errorf("renamed file: ino %d, want %d", got, ia)
	}
	mustWrite(t, tm.path("a"), []byte("new"))
	if ino("a") == ia {
		t.Errorf("new file at old name reuses ino %d", ia)
	}
	if err := os.Rename(tm.path("d"), tm.path("e")); err != nil {
		t.Fatal(err)
	}
	if got := ino("e"); got != idir {
		t.Errorf("renamed dir: ino %d, want %d", got, idir)
	}
	if got := ino("e/f"); got != ifile {
		t.Errorf("file in renamed dir: ino %d, want %d", got, ifile)
	}
	// Paths never renamed get the same numbers on every mount.
	tm2 := mountWith(t, defaultOpts(), nil)
	mustWrite(t, tm2.path("a"), nil)
	var st syscall.Stat_t
	if err := syscall.Lstat(tm2.path("a"), &st); err != nil || st.Ino != hashIno("a") {
		t.Errorf("ino of a on a second mount: %d, want %d", st.Ino, hashIno("a"))
	}
}

// TestSetattr covers chmod, ftruncate after queued writes, and utimens
// with UTIME_OMIT and UTIME_NOW.
func TestSetattr(t *testing.T) {
	tm := mountWith(t, defaultOpts(), nil)
	remotePath := filepath.Join(tm.dir, "f")
	mustWrite(t, tm.path("f"), []byte("0123456789"))
	if err := os.Chmod(tm.path("f"), 0o600); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(remotePath); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("remote mode %v %v", fi.Mode(), err)
	}
	f, err := os.OpenFile(tm.path("f"), os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt(bytes.Repeat([]byte("w"), 100), 10); err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(50); err != nil {
		t.Fatalf("ftruncate: %v", err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(remotePath); err != nil || fi.Size() != 50 {
		t.Errorf("remote size after ftruncate: %v %v, want 50", fi.Size(), err)
	}
	before, _ := os.Stat(remotePath)
	atimeBefore := before.Sys().(*syscall.Stat_t).Atim
	ts := []unix.Timespec{{Nsec: unix.UTIME_OMIT}, unix.NsecToTimespec(1_000_000_000 * 1_600_000_000)}
	if err := unix.UtimesNanoAt(unix.AT_FDCWD, tm.path("f"), ts, 0); err != nil {
		t.Fatalf("utimensat: %v", err)
	}
	after, _ := os.Stat(remotePath)
	st := after.Sys().(*syscall.Stat_t)
	if st.Mtim.Sec != 1_600_000_000 || st.Atim.Sec != atimeBefore.Sec {
		t.Errorf("mtime %d atime %d, want 1600000000 and unchanged %d", st.Mtim.Sec, st.Atim.Sec, atimeBefore.Sec)
	}
	var local syscall.Stat_t
	if err := syscall.Stat(tm.path("f"), &local); err != nil || local.Mtim.Sec != 1_600_000_000 {
		t.Errorf("mtime seen through the mount: %d %v", local.Mtim.Sec, err)
	}
	ts = []unix.Timespec{{Nsec: unix.UTIME_OMIT}, {Nsec: unix.UTIME_NOW}}
	if err := unix.UtimesNanoAt(unix.AT_FDCWD, tm.path("f"), ts, 0); err != nil {
		t.Fatalf("utimensat now: %v", err)
	}
	if fi, err := os.Stat(remotePath); err != nil || time.Since(fi.ModTime()) > time.Minute {
		t.Errorf("UTIME_NOW: mtime %v %v", fi.ModTime(), err)
	}
	if err := os.Truncate(tm.path("f"), 5); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(tm.path("f")); err != nil || string(b) != "01234" {
		t.Errorf("after truncate: %q %v", b, err)
	}
}
