package e2e

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"text/tabwriter"
	"time"

	"golang.org/x/sys/unix"

	"sshfsm/internal/testenv"
)

// TestConformance runs each system call case of conformanceCases in a
// directory of the mount (with default_permissions, as root) and in a
// directory of a local disk, and compares what the two answered: errno,
// file type, mode, link count, sizes, and how times moved. The table of
// both answers goes to the test log. A case that answers differently
// fails the test unless mountDifferences lists it, with the reason SFTP
// cannot do better and the answer the mount gives instead.
func TestConformance(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("the cases change owners and act as other users: they need root")
	}
	h := testenv.StartHost(t, "127.0.0.2")
	m := mount(t, h, mountSpec{opts: []string{"default_permissions", "allow_other"}})
	// Other users reach the mountpoint and the local directory through
	// the test's temporary directories.
	openUp(t, filepath.Dir(m.Dir))
	local := t.TempDir()
	openUp(t, local)

	type row struct{ name, local, mount, verdict string }
	var rows []row
	for _, c := range conformanceCases {
		l := runCase(t, c, filepath.Join(local, c.name), m.Dir)
		r := runCase(t, c, m.Path(c.name), local)
		v := "same"
		if l != r {
			known, ok := mountDifferences[c.name]
			switch {
			case ok && known.mount == r:
				v = "known: " + known.why
			case ok:
				v = fmt.Sprintf("DIFFERS (the known difference answers %q)", known.mount)
				t.Errorf("%s: local disk %q, mount %q; the known difference expects %q", c.name, l, r, known.mount)
			default:
				v = "DIFFERS"
				t.Errorf("%s: local disk %q, mount %q", c.name, l, r)
			}
		} else if _, ok := mountDifferences[c.name]; ok {
			// Not a failure: the mount got better than documented.
			v = "same (listed as a known difference: remove it)"
		}
		rows = append(rows, row{c.name, l, r, v})
	}
	var b strings.Builder
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "case\tlocal disk\tmount\tverdict")
	same := 0
	for _, r := range rows {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", r.name, r.local, r.mount, r.verdict)
		if r.verdict == "same" {
			same++
		}
	}
	tw.Flush()
	t.Logf("conformance: %d of %d cases answer as a local disk\n%s", same, len(rows), b.String())
}

// openUp lets every user traverse dir and its parents up to the
// temporary directory (the test's directories are 0700), but never
// changes a shared one such as /tmp.
func openUp(t *testing.T, dir string) {
	t.Helper()
	top := os.TempDir()
	for d := dir; d != "/" && d != "/tmp" && d != "/var/tmp"; d = filepath.Dir(d) {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
		if d == top {
			break
		}
	}
}

// runCase runs c in dir, a new directory (0777, so that other users may
// create in it), with other a directory on another filesystem.
func runCase(t *testing.T, c conformanceCase, dir, other string) string {
	t.Helper()
	if err := os.Mkdir(dir, 0o777); err != nil {
		t.Fatalf("%s: %v", c.name, err)
	}
	if err := os.Chmod(dir, 0o777); err != nil {
		t.Fatalf("%s: %v", c.name, err)
	}
	e := &caseEnv{dir: dir, other: other}
	c.run(e)
	return strings.Join(e.out, " ")
}

// caseEnv is where a case runs and what it has answered so far.
type caseEnv struct {
	dir   string // the case's own directory
	other string // a directory of the other filesystem
	out   []string
}

func (e *caseEnv) p(name string) string { return filepath.Join(e.dir, name) }

// say records one answer.
func (e *caseEnv) say(format string, a ...any) { e.out = append(e.out, fmt.Sprintf(format, a...)) }

// errno records the outcome of a call: ok or the errno's name.
func (e *caseEnv) errno(what string, err error) { e.say("%s=%s", what, errName(err)) }

// must records a setup step only when it fails.
func (e *caseEnv) must(what string, err error) {
	if err != nil {
		e.errno("setup "+what, err)
	}
}

// stat records the type, mode, link count and size of name (lstat).
func (e *caseEnv) stat(name string) {
	var st unix.Stat_t
	if err := unix.Lstat(e.p(name), &st); err != nil {
		e.errno("lstat "+name, err)
		return
	}
	e.say("%s:%s,%04o,nlink=%d,size=%d,uid=%d,gid=%d", name, typeName(st.Mode), st.Mode&07777, st.Nlink, st.Size, st.Uid, st.Gid)
}

// owner records the type, mode and owner of name (lstat), for cases
// about ownership that leave link counts to others.
func (e *caseEnv) owner(name string) {
	st := e.lstat(name)
	e.say("%s:%s,%04o,uid=%d,gid=%d", name, typeName(st.Mode), st.Mode&07777, st.Uid, st.Gid)
}

// lstat returns name's lstat, zero on failure (recorded).
func (e *caseEnv) lstat(name string) unix.Stat_t {
	var st unix.Stat_t
	if err := unix.Lstat(e.p(name), &st); err != nil {
		e.errno("lstat "+name, err)
	}
	return st
}

// asUser runs f with the effective uid and gid given and no supplementary
// groups, on a thread of its own: Linux keeps credentials per thread, and
// the thread ends with f's goroutine, its credentials with it.
func (e *caseEnv) asUser(uid, gid int, f func()) {
	done := make(chan error)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread exits with the goroutine
		if _, _, errno := unix.RawSyscall(unix.SYS_SETGROUPS, 0, 0, 0); errno != 0 {
			done <- errno
			return
		}
		if _, _, errno := unix.RawSyscall(unix.SYS_SETRESGID, ^uintptr(0), uintptr(gid), ^uintptr(0)); errno != 0 {
			done <- errno
			return
		}
		if _, _, errno := unix.RawSyscall(unix.SYS_SETRESUID, ^uintptr(0), uintptr(uid), ^uintptr(0)); errno != 0 {
			done <- errno
			return
		}
		f()
		done <- nil
	}()
	e.must(fmt.Sprintf("become %d:%d", uid, gid), <-done)
}

func errName(err error) string {
	if err == nil {
		return "ok"
	}
	var errno syscall.Errno
	if errors.As(err, &errno) {
		if name := unix.ErrnoName(errno); name != "" {
			return name
		}
		return fmt.Sprintf("errno%d", int(errno))
	}
	return err.Error()
}

func typeName(mode uint32) string {
	switch mode & unix.S_IFMT {
	case unix.S_IFREG:
		return "file"
	case unix.S_IFDIR:
		return "dir"
	case unix.S_IFLNK:
		return "symlink"
	case unix.S_IFIFO:
		return "fifo"
	case unix.S_IFSOCK:
		return "socket"
	case unix.S_IFCHR:
		return "char"
	case unix.S_IFBLK:
		return "block"
	}
	return fmt.Sprintf("type%o", mode&unix.S_IFMT)
}

// writeFile creates name with data and mode, whatever the umask. Modes
// in the cases are raw mode bits (unix.Chmod): os.Chmod drops the
// set-ID and sticky bits of a plain number.
func writeFile(e *caseEnv, name, data string, mode uint32) {
	e.must("write "+name, os.WriteFile(e.p(name), []byte(data), 0o600))
	e.must("chmod "+name, unix.Chmod(e.p(name), mode))
}

// past is a modification time far from now: a time an operation sets
// anew stands out from it without waiting for the clock.
var past = time.Unix(1_000_000_000, 0)

// changesCtime records whether op sets name's ctime to the present. The
// file's times are first put in the past, so that a ctime the mount
// derives from them stays there.
func changesCtime(e *caseEnv, name string, op func() error) {
	e.must("utimes", os.Chtimes(e.p(name), past, past))
	before := time.Now().Truncate(time.Second)
	e.errno("op", op())
	st := e.lstat(name)
	e.say("ctime-now=%v", !time.Unix(st.Ctim.Unix()).Before(before))
}

// changesDirTimes records whether op sets the modification and change
// times of the directory dir to the present. Its times are first put in
// the past, as changesCtime does.
func changesDirTimes(e *caseEnv, what, dir string, op func() error) {
	e.must("utimes "+dir, os.Chtimes(e.p(dir), past, past))
	before := time.Now().Truncate(time.Second)
	e.errno(what, op())
	st := e.lstat(dir)
	e.say("%s-mtime-now=%v %s-ctime-now=%v", dir,
		!time.Unix(st.Mtim.Unix()).Before(before), dir, !time.Unix(st.Ctim.Unix()).Before(before))
}

type conformanceCase struct {
	name string
	run  func(e *caseEnv)
}

// conformanceCases are the system call edge cases compared; each runs in
// a fresh directory of its own.
var conformanceCases = []conformanceCase{
	{"mkdir-exists", func(e *caseEnv) {
		e.must("mkdir", os.Mkdir(e.p("d"), 0o755))
		e.errno("mkdir", unix.Mkdir(e.p("d"), 0o755))
		writeFile(e, "f", "", 0o644)
		e.errno("mkdir-over-file", unix.Mkdir(e.p("f"), 0o755))
	}},
	{"create-excl", func(e *caseEnv) {
		writeFile(e, "f", "x", 0o644)
		_, err := unix.Open(e.p("f"), unix.O_CREAT|unix.O_EXCL|unix.O_WRONLY, 0o644)
		e.errno("excl-existing", err)
		e.must("symlink", os.Symlink("nowhere", e.p("dangling")))
		_, err = unix.Open(e.p("dangling"), unix.O_CREAT|unix.O_EXCL|unix.O_WRONLY, 0o644)
		e.errno("excl-dangling-symlink", err)
		fd, err := unix.Open(e.p("new"), unix.O_CREAT|unix.O_EXCL|unix.O_WRONLY, 0o640)
		e.errno("excl-new", err)
		if err == nil {
			unix.Close(fd)
		}
		e.stat("new")
	}},
	{"name-too-long", func(e *caseEnv) {
		long := strings.Repeat("n", 256)
		_, err := unix.Open(e.p(long), unix.O_CREAT|unix.O_WRONLY, 0o644)
		e.errno("create", err)
		e.errno("mkdir", unix.Mkdir(e.p(long), 0o755))
		e.errno("symlink", unix.Symlink("x", e.p(long)))
		e.errno("lstat", unix.Lstat(e.p(long), new(unix.Stat_t)))
		max := strings.Repeat("m", 255)
		fd, err := unix.Open(e.p(max), unix.O_CREAT|unix.O_WRONLY, 0o644)
		e.errno("create-255", err)
		if err == nil {
			unix.Close(fd)
		}
	}},
	{"path-too-long", func(e *caseEnv) {
		p := e.dir + strings.Repeat("/x", 2100)
		e.errno("lstat", unix.Lstat(p, new(unix.Stat_t)))
		e.errno("mkdir", unix.Mkdir(p, 0o755))
	}},
	{"rmdir-not-empty", func(e *caseEnv) {
		e.must("mkdir", os.Mkdir(e.p("d"), 0o755))
		writeFile(e, "d/f", "", 0o644)
		e.errno("rmdir", unix.Rmdir(e.p("d")))
		e.errno("rmdir-dot", unix.Rmdir(e.p("d/.")))
		e.errno("rmdir-file", unix.Rmdir(e.p("d/f")))
		e.errno("unlink-dir", unix.Unlink(e.p("d")))
		e.errno("rmdir-missing", unix.Rmdir(e.p("missing")))
	}},
	{"symlink-loop", func(e *caseEnv) {
		e.must("symlink a", os.Symlink("b", e.p("a")))
		e.must("symlink b", os.Symlink("a", e.p("b")))
		_, err := unix.Open(e.p("a"), unix.O_RDONLY, 0)
		e.errno("open", err)
		e.errno("stat", unix.Stat(e.p("a"), new(unix.Stat_t)))
		e.errno("lstat", unix.Lstat(e.p("a"), new(unix.Stat_t)))
		_, err = unix.Open(e.p("a"), unix.O_RDONLY|unix.O_NOFOLLOW, 0)
		e.errno("open-nofollow", err)
		e.errno("mkdir-through", unix.Mkdir(e.p("a/x"), 0o755))
	}},
	{"eisdir-enotdir", func(e *caseEnv) {
		e.must("mkdir", os.Mkdir(e.p("d"), 0o755))
		writeFile(e, "f", "", 0o644)
		_, err := unix.Open(e.p("d"), unix.O_WRONLY, 0)
		e.errno("open-dir-write", err)
		_, err = unix.Open(e.p("f/x"), unix.O_RDONLY, 0)
		e.errno("open-under-file", err)
		e.errno("mkdir-under-file", unix.Mkdir(e.p("f/x"), 0o755))
		_, err = unix.Open(e.p("f"), unix.O_RDONLY|unix.O_DIRECTORY, 0)
		e.errno("open-file-as-dir", err)
		e.errno("truncate-dir", unix.Truncate(e.p("d"), 0))
	}},
	{"rename-errors", func(e *caseEnv) {
		e.must("mkdir", os.MkdirAll(e.p("d/sub"), 0o755))
		e.must("mkdir full", os.MkdirAll(e.p("full/x"), 0o755))
		e.must("mkdir empty", os.Mkdir(e.p("empty"), 0o755))
		writeFile(e, "f", "", 0o644)
		e.errno("into-own-subdir", unix.Rename(e.p("d"), e.p("d/sub/d")))
		e.errno("over-nonempty-dir", unix.Rename(e.p("d"), e.p("full")))
		e.errno("file-over-dir", unix.Rename(e.p("f"), e.p("empty")))
		e.errno("dir-over-file", unix.Rename(e.p("empty"), e.p("f")))
		e.errno("missing", unix.Rename(e.p("missing"), e.p("x")))
		e.errno("dir-over-empty-dir", unix.Rename(e.p("d"), e.p("empty")))
		e.stat("empty")
		e.errno("to-itself", unix.Rename(e.p("f"), e.p("f")))
		e.errno("noreplace", unix.Renameat2(unix.AT_FDCWD, e.p("f"), unix.AT_FDCWD, e.p("empty"), unix.RENAME_NOREPLACE))
	}},
	{"exdev", func(e *caseEnv) {
		writeFile(e, "f", "x", 0o644)
		e.errno("rename", unix.Rename(e.p("f"), filepath.Join(e.other, "exdev-target")))
		e.errno("link", unix.Link(e.p("f"), filepath.Join(e.other, "exdev-target")))
	}},
	{"link", func(e *caseEnv) {
		writeFile(e, "f", "x", 0o644)
		e.errno("link", unix.Link(e.p("f"), e.p("g")))
		e.stat("f")
		e.errno("link-exists", unix.Link(e.p("f"), e.p("g")))
		e.must("mkdir", os.Mkdir(e.p("d"), 0o755))
		e.errno("link-dir", unix.Link(e.p("d"), e.p("d2")))
		var a, b unix.Stat_t
		e.must("stat f", unix.Lstat(e.p("f"), &a))
		e.must("stat g", unix.Lstat(e.p("g"), &b))
		e.say("same-inode=%v", a.Ino == b.Ino)
		e.errno("unlink", unix.Unlink(e.p("g")))
		e.stat("f")
	}},
	{"link-count", func(e *caseEnv) {
		writeFile(e, "f", "x", 0o644)
		e.errno("link g", unix.Link(e.p("f"), e.p("g")))
		e.errno("link h", unix.Link(e.p("g"), e.p("h")))
		e.stat("f")
		e.stat("h")
		e.errno("unlink f", unix.Unlink(e.p("f")))
		e.stat("g")
		writeFile(e, "x", "y", 0o644)
		e.errno("rename over h", unix.Rename(e.p("x"), e.p("h")))
		e.stat("g")
		e.stat("h")
		e.must("mkfifo", unix.Mkfifo(e.p("p"), 0o600))
		e.errno("link fifo", unix.Link(e.p("p"), e.p("q")))
		e.stat("p")
	}},
	{"dir-times", func(e *caseEnv) {
		e.must("mkdir", os.Mkdir(e.p("d"), 0o755))
		e.must("mkdir other", os.Mkdir(e.p("o"), 0o755))
		changesDirTimes(e, "create", "d", func() error { return os.WriteFile(e.p("d/f"), nil, 0o644) })
		changesDirTimes(e, "mkdir", "d", func() error { return unix.Mkdir(e.p("d/sub"), 0o755) })
		changesDirTimes(e, "symlink", "d", func() error { return unix.Symlink("f", e.p("d/l")) })
		changesDirTimes(e, "mkfifo", "d", func() error { return unix.Mkfifo(e.p("d/p"), 0o600) })
		changesDirTimes(e, "link", "d", func() error { return unix.Link(e.p("d/f"), e.p("d/g")) })
		changesDirTimes(e, "unlink", "d", func() error { return unix.Unlink(e.p("d/g")) })
		changesDirTimes(e, "rmdir", "d", func() error { return unix.Rmdir(e.p("d/sub")) })
		changesDirTimes(e, "rename", "d", func() error { return unix.Rename(e.p("d/f"), e.p("d/f2")) })
		changesDirTimes(e, "rename-out", "d", func() error { return unix.Rename(e.p("d/f2"), e.p("o/f")) })
		changesDirTimes(e, "rename-in", "d", func() error { return unix.Rename(e.p("o/f"), e.p("d/f")) })
	}},
	{"utimensat-beyond-32-bit", func(e *caseEnv) {
		writeFile(e, "f", "", 0o644)
		ts := []unix.Timespec{{Sec: 1 << 31}, {Sec: 1 << 32}}
		e.errno("set", unix.UtimesNanoAt(unix.AT_FDCWD, e.p("f"), ts, 0))
		st := e.lstat("f")
		e.say("atime=%d mtime=%d", st.Atim.Sec, st.Mtim.Sec)
		ts = []unix.Timespec{{Sec: -1}, {Sec: -1}}
		e.errno("set-negative", unix.UtimesNanoAt(unix.AT_FDCWD, e.p("f"), ts, 0))
		st = e.lstat("f")
		e.say("atime=%d mtime=%d", st.Atim.Sec, st.Mtim.Sec)
	}},
	{"nlink-dir", func(e *caseEnv) {
		e.must("mkdir", os.MkdirAll(e.p("d/a"), 0o755))
		e.must("mkdir b", os.Mkdir(e.p("d/b"), 0o755))
		e.stat("d")
	}},
	{"special-files", func(e *caseEnv) {
		e.errno("mkfifo", unix.Mkfifo(e.p("fifo"), 0o640))
		e.stat("fifo")
		e.errno("mkfifo-exists", unix.Mkfifo(e.p("fifo"), 0o640))
		e.errno("mknod-char", unix.Mknod(e.p("char"), unix.S_IFCHR|0o600, int(unix.Mkdev(1, 3))))
		e.stat("char")
		e.errno("mknod-block", unix.Mknod(e.p("block"), unix.S_IFBLK|0o600, int(unix.Mkdev(7, 0))))
		e.stat("block")
		fd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM, 0)
		e.must("socket", err)
		if err == nil {
			e.errno("bind", unix.Bind(fd, &unix.SockaddrUnix{Name: e.p("sock")}))
			unix.Close(fd)
		}
		e.stat("sock")
		e.errno("unlink-fifo", unix.Unlink(e.p("fifo")))
	}},
	{"fifo-io", func(e *caseEnv) {
		e.must("mkfifo", unix.Mkfifo(e.p("fifo"), 0o600))
		got := make(chan string, 1)
		go func() {
			data, err := os.ReadFile(e.p("fifo"))
			got <- fmt.Sprintf("%q/%s", data, errName(err))
		}()
		err := os.WriteFile(e.p("fifo"), []byte("through the pipe"), 0)
		e.errno("write", err)
		if err != nil {
			// The reader may wait for a writer: be one, so that it ends.
			if fd, err := unix.Open(e.p("fifo"), unix.O_WRONLY|unix.O_NONBLOCK, 0); err == nil {
				unix.Close(fd)
			}
		}
		e.say("read=%s", <-got)
	}},
	{"open-trunc-append", func(e *caseEnv) {
		writeFile(e, "f", "0123456789", 0o644)
		fd, err := unix.Open(e.p("f"), unix.O_WRONLY|unix.O_TRUNC, 0)
		e.errno("open-trunc", err)
		if err == nil {
			unix.Close(fd)
		}
		e.stat("f")
		writeFile(e, "g", "abc", 0o644)
		fd, err = unix.Open(e.p("g"), unix.O_WRONLY|unix.O_APPEND, 0)
		e.errno("open-append", err)
		if err == nil {
			unix.Pwrite(fd, []byte("def"), 0) // O_APPEND wins over the offset
			unix.Write(fd, []byte("ghi"))
			unix.Close(fd)
		}
		data, err := os.ReadFile(e.p("g"))
		e.say("append=%q/%s", data, errName(err))
	}},
	{"truncate-beyond-eof", func(e *caseEnv) {
		writeFile(e, "f", "abc", 0o644)
		e.errno("truncate", unix.Truncate(e.p("f"), 4096+3))
		data, err := os.ReadFile(e.p("f"))
		e.say("size=%d zeros=%v/%s", len(data), len(data) > 3 && strings.Trim(string(data[3:]), "\x00") == "", errName(err))
		e.errno("truncate-negative", unix.Truncate(e.p("f"), -1))
		e.errno("shrink", unix.Truncate(e.p("f"), 1))
		e.stat("f")
	}},
	{"utimensat", func(e *caseEnv) {
		writeFile(e, "f", "", 0o644)
		ts := []unix.Timespec{{Sec: 1_100_000_000, Nsec: 0}, {Sec: 1_200_000_000, Nsec: 0}}
		e.errno("set", unix.UtimesNanoAt(unix.AT_FDCWD, e.p("f"), ts, 0))
		st := e.lstat("f")
		e.say("atime=%d mtime=%d", st.Atim.Sec, st.Mtim.Sec)
		ts = []unix.Timespec{{Nsec: unix.UTIME_OMIT}, {Sec: 1_300_000_000}}
		e.errno("omit-atime", unix.UtimesNanoAt(unix.AT_FDCWD, e.p("f"), ts, 0))
		st = e.lstat("f")
		e.say("atime=%d mtime=%d", st.Atim.Sec, st.Mtim.Sec)
		before := time.Now().Truncate(time.Second)
		ts = []unix.Timespec{{Nsec: unix.UTIME_NOW}, {Nsec: unix.UTIME_OMIT}}
		e.errno("now-atime", unix.UtimesNanoAt(unix.AT_FDCWD, e.p("f"), ts, 0))
		st = e.lstat("f")
		e.say("atime-now=%v mtime=%d", !time.Unix(st.Atim.Unix()).Before(before), st.Mtim.Sec)
	}},
	{"utimensat-nanoseconds", func(e *caseEnv) {
		writeFile(e, "f", "", 0o644)
		ts := []unix.Timespec{{Sec: 1_100_000_000, Nsec: 123456789}, {Sec: 1_200_000_000, Nsec: 987654321}}
		e.errno("set", unix.UtimesNanoAt(unix.AT_FDCWD, e.p("f"), ts, 0))
		st := e.lstat("f")
		e.say("atime=%d.%09d mtime=%d.%09d", st.Atim.Sec, st.Atim.Nsec, st.Mtim.Sec, st.Mtim.Nsec)
	}},
	{"utimensat-other-user", func(e *caseEnv) {
		writeFile(e, "f", "", 0o666)
		e.asUser(nobody, nobody, func() {
			ts := []unix.Timespec{{Sec: 1_100_000_000}, {Sec: 1_200_000_000}}
			e.errno("set-times", unix.UtimesNanoAt(unix.AT_FDCWD, e.p("f"), ts, 0))
			ts = []unix.Timespec{{Nsec: unix.UTIME_NOW}, {Nsec: unix.UTIME_NOW}}
			e.errno("set-now", unix.UtimesNanoAt(unix.AT_FDCWD, e.p("f"), ts, 0))
		})
		e.must("chmod", unix.Chmod(e.p("f"), 0o644))
		e.asUser(nobody, nobody, func() {
			ts := []unix.Timespec{{Nsec: unix.UTIME_NOW}, {Nsec: unix.UTIME_NOW}}
			e.errno("set-now-readonly", unix.UtimesNanoAt(unix.AT_FDCWD, e.p("f"), ts, 0))
		})
	}},
	{"chmod-chown-non-owner", func(e *caseEnv) {
		writeFile(e, "f", "", 0o644)
		e.asUser(nobody, nobody, func() {
			e.errno("chmod", unix.Chmod(e.p("f"), 0o666))
			e.errno("chown", unix.Chown(e.p("f"), nobody, nobody))
			e.errno("chgrp", unix.Chown(e.p("f"), -1, nobody))
		})
		e.must("chown to nobody", os.Chown(e.p("f"), nobody, nobody))
		e.asUser(nobody, nobody, func() {
			e.errno("owner-chmod", unix.Chmod(e.p("f"), 0o600))
			e.errno("owner-give-away", unix.Chown(e.p("f"), 0, -1))
			e.errno("owner-chgrp-foreign", unix.Chown(e.p("f"), -1, 0))
			e.errno("owner-chmod-setgid-foreign", unix.Chmod(e.p("f"), 0o2755))
		})
		e.stat("f")
		e.must("chown to nobody:root", os.Chown(e.p("f"), nobody, 0))
		e.asUser(nobody, nobody, func() {
			e.errno("owner-setgid-not-member", unix.Chmod(e.p("f"), 0o2755))
		})
		e.stat("f")
	}},
	{"chown-clears-setuid", func(e *caseEnv) {
		writeFile(e, "f", "", 0o644)
		e.must("chmod", unix.Chmod(e.p("f"), 0o6755))
		e.errno("chown", unix.Chown(e.p("f"), nobody, nobody))
		e.stat("f")
	}},
	{"sticky-directory", func(e *caseEnv) {
		e.must("mkdir", os.Mkdir(e.p("t"), 0o777))
		e.must("chmod", unix.Chmod(e.p("t"), 0o1777))
		writeFile(e, "t/roots", "", 0o666)
		e.asUser(nobody, nobody, func() {
			e.errno("unlink-others", unix.Unlink(e.p("t/roots")))
			e.errno("rename-others", unix.Rename(e.p("t/roots"), e.p("t/mine")))
		})
		writeFile(e, "t/theirs", "", 0o666)
		e.must("chown", os.Chown(e.p("t/theirs"), nobody, nobody))
		e.asUser(nobody, nobody, func() {
			e.errno("unlink-own", unix.Unlink(e.p("t/theirs")))
		})
		e.asUser(nobody-1, nobody-1, func() {
			e.errno("third-user-unlink", unix.Unlink(e.p("t/roots")))
		})
	}},
	{"created-by-other-user", func(e *caseEnv) {
		e.must("mkdir", os.Mkdir(e.p("sgid"), 0o777))
		e.must("chmod", unix.Chmod(e.p("sgid"), 0o2777))
		e.must("chgrp", os.Chown(e.p("sgid"), 0, 123))
		e.asUser(nobody, nobody, func() {
			fd, err := unix.Open(e.p("f"), unix.O_CREAT|unix.O_EXCL|unix.O_WRONLY, 0o644)
			e.errno("create", err)
			if err == nil {
				unix.Close(fd)
			}
			e.errno("mkdir", unix.Mkdir(e.p("d"), 0o755))
			e.errno("symlink", unix.Symlink("f", e.p("l")))
			e.errno("mkfifo", unix.Mkfifo(e.p("p"), 0o600))
			fd, err = unix.Open(e.p("f"), unix.O_WRONLY|unix.O_TRUNC, 0)
			e.errno("reopen-write", err)
			if err == nil {
				unix.Close(fd)
			}
			e.errno("chmod-own", unix.Chmod(e.p("f"), 0o4755))
			fd, err = unix.Open(e.p("sgid/g"), unix.O_CREAT|unix.O_EXCL|unix.O_WRONLY, 0o640)
			e.errno("create-in-setgid", err)
			if err == nil {
				unix.Close(fd)
			}
		})
		for _, name := range []string{"f", "d", "l", "p", "sgid/g"} {
			e.owner(name)
		}
	}},
	{"lchown-lutimes", func(e *caseEnv) {
		writeFile(e, "target", "", 0o644)
		e.must("utimes target", os.Chtimes(e.p("target"), past, past))
		e.must("symlink", os.Symlink("target", e.p("l")))
		e.errno("lchown", unix.Lchown(e.p("l"), 123, 456))
		ts := []unix.Timespec{{Sec: 1_100_000_000}, {Sec: 1_200_000_000}}
		e.errno("lutimes", unix.UtimesNanoAt(unix.AT_FDCWD, e.p("l"), ts, unix.AT_SYMLINK_NOFOLLOW))
		st := e.lstat("l")
		e.say("link:uid=%d,gid=%d,mtime=%d", st.Uid, st.Gid, st.Mtim.Sec)
		st = e.lstat("target")
		e.say("target:uid=%d,gid=%d,mtime=%d", st.Uid, st.Gid, st.Mtim.Sec)
		e.errno("lchmod", unix.Fchmodat(unix.AT_FDCWD, e.p("l"), 0o600, unix.AT_SYMLINK_NOFOLLOW))
	}},
	{"eacces", func(e *caseEnv) {
		e.must("mkdir", os.Mkdir(e.p("closed"), 0o700))
		writeFile(e, "closed/f", "", 0o644)
		writeFile(e, "private", "", 0o600)
		e.asUser(nobody, nobody, func() {
			e.errno("lookup-in-closed", unix.Lstat(e.p("closed/f"), new(unix.Stat_t)))
			_, err := unix.Open(e.p("private"), unix.O_RDONLY, 0)
			e.errno("open-private", err)
			_, err = unix.Open(e.p("closed/new"), unix.O_CREAT|unix.O_WRONLY, 0o644)
			e.errno("create-in-closed", err)
			e.errno("unlink-in-closed", unix.Unlink(e.p("closed/f")))
		})
	}},
	{"ctime", func(e *caseEnv) {
		writeFile(e, "f", "", 0o644)
		changesCtime(e, "f", func() error { return unix.Chmod(e.p("f"), 0o600) })
		changesCtime(e, "f", func() error { return os.Chown(e.p("f"), nobody, nobody) })
		changesCtime(e, "f", func() error { return os.Link(e.p("f"), e.p("g")) })
		changesCtime(e, "f", func() error { return os.Rename(e.p("g"), e.p("h")) })
		changesCtime(e, "f", func() error { return unix.Unlink(e.p("h")) })
		changesCtime(e, "f", func() error { return unix.Truncate(e.p("f"), 1) })
		changesCtime(e, "f", func() error { return os.Chtimes(e.p("f"), past, past) })
	}},
	{"unlink-open-file", func(e *caseEnv) {
		writeFile(e, "f", "still here", 0o644)
		f, err := os.Open(e.p("f"))
		e.must("open", err)
		if err != nil {
			return
		}
		defer f.Close()
		e.errno("unlink", unix.Unlink(e.p("f")))
		data := make([]byte, 64)
		n, err := f.ReadAt(data, 0)
		if errors.Is(err, io.EOF) {
			err = nil
		}
		e.say("read=%q/%s", data[:n], errName(err))
		var st unix.Stat_t
		e.errno("fstat", unix.Fstat(int(f.Fd()), &st))
		e.say("nlink=%d", st.Nlink)
	}},
}

// mountDifferences are the cases whose answers over SFTP cannot be those
// of a local disk: why, and the answer the mount gives instead (any other
// answer fails the test).
var mountDifferences = map[string]struct{ why, mount string }{
	"nlink-dir": {
		"SFTP attributes carry no link count: a directory's st_nlink is 1 (which find and fts read as unknown)",
		"d:dir,0755,nlink=1,size=4096,uid=0,gid=0",
	},
	"rename-errors": {
		"SFTP attributes carry no link count: a directory's st_nlink is 1",
		"into-own-subdir=EINVAL over-nonempty-dir=ENOTEMPTY file-over-dir=EISDIR dir-over-file=ENOTDIR missing=ENOENT " +
			"dir-over-empty-dir=ok empty:dir,0755,nlink=1,size=4096,uid=0,gid=0 to-itself=ok noreplace=EEXIST",
	},
	"utimensat-nanoseconds": {
		"SFTP v3 carries times in whole seconds, both ways: nanoseconds are dropped",
		"set=ok atime=1100000000.000000000 mtime=1200000000.000000000",
	},
	"utimensat-beyond-32-bit": {
		"SFTP v3 carries times as unsigned 32-bit seconds: a time outside 1970 to 2106 is clamped, " +
			"as Linux clamps on a filesystem whose inodes hold a narrower range",
		"set=ok atime=2147483648 mtime=4294967295 set-negative=ok atime=0 mtime=0",
	},
}

// TestSpecialFilesWithoutCommands checks what a server that runs no
// commands (ForceCommand internal-sftp) answers for what only a command
// can do: a FIFO, a device node or a socket cannot be made (EPERM), a
// symlink's own owner and times cannot be changed (EOPNOTSUPP), and the
// rest of the mount keeps working.
func TestSpecialFilesWithoutCommands(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("device nodes and chown need root")
	}
	h := testenv.StartHostWith(t, testenv.Options{Addr: "127.0.0.3", SFTPOnly: true})
	m := mount(t, h, mountSpec{opts: []string{"default_permissions"}})
	if err := unix.Mkfifo(m.Path("fifo"), 0o600); err != unix.EPERM {
		t.Errorf("mkfifo = %v, want EPERM", err)
	}
	if err := unix.Mknod(m.Path("char"), unix.S_IFCHR|0o600, int(unix.Mkdev(1, 3))); err != unix.EPERM {
		t.Errorf("mknod = %v, want EPERM", err)
	}
	fd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	if err := unix.Bind(fd, &unix.SockaddrUnix{Name: m.Path("sock")}); err != unix.EPERM {
		t.Errorf("bind = %v, want EPERM", err)
	}
	if err := os.WriteFile(m.Path("target"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("target", m.Path("link")); err != nil {
		t.Fatal(err)
	}
	if err := unix.Lchown(m.Path("link"), 123, 456); err != unix.EOPNOTSUPP {
		t.Errorf("lchown = %v, want EOPNOTSUPP", err)
	}
	var st unix.Stat_t
	if err := unix.Stat(m.Path("target"), &st); err != nil || st.Uid != 0 {
		t.Errorf("the target's owner is %d (%v); lchown must not change it", st.Uid, err)
	}
	for _, name := range []string{"fifo", "char", "sock"} {
		if err := unix.Lstat(m.Path(name), &st); err != unix.ENOENT {
			t.Errorf("lstat %s = %v, want ENOENT", name, err)
		}
	}
	if data, err := os.ReadFile(m.Path("link")); err != nil || string(data) != "x" {
		t.Errorf("reading through the link = %q, %v", data, err)
	}
}
