package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"sshfsm/internal/config"
	"sshfsm/internal/testenv"
)

// These tests check that each option takes effect on a real mount of the
// built binary, served by a real sshd: not only that it parses.

// mountWith mounts spec at a fresh mountpoint with the extra arguments and
// returns the mountpoint; the mount goes away at cleanup.
func mountWith(t *testing.T, spec string, args ...string) string {
	t.Helper()
	return mountAt(t, mountpoint(t), spec, args...)
}

func mountAt(t *testing.T, mnt, spec string, args ...string) string {
	t.Helper()
	r := sshfsm(t, 30*time.Second, append(append([]string{}, args...), spec, mnt)...)
	if r.code != 0 {
		t.Fatalf("sshfsm %q: exit %d, stderr %q", args, r.code, r.stderr)
	}
	return mnt
}

// mountInfo returns the mount options, type, source and superblock options
// of the mount at mnt in /proc/self/mountinfo.
func mountInfo(mnt string) (opts, fstype, source, super string) {
	b, _ := os.ReadFile("/proc/self/mountinfo")
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) < 6 || f[4] != mnt {
			continue
		}
		for i := range f {
			if f[i] == "-" && i+3 < len(f) {
				return f[5], f[i+1], f[i+2], f[i+3]
			}
		}
	}
	return "", "", "", ""
}

func hasOpt(list, opt string) bool {
	for _, o := range strings.Split(list, ",") {
		if o == opt {
			return true
		}
	}
	return false
}

func writeFile(t *testing.T, path, data string, mode os.FileMode) {
	t.Helper()
	if err := os.WriteFile(path, []byte(data), mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, mode); err != nil {
		t.Fatal(err)
	}
}

func statT(t *testing.T, path string) *syscall.Stat_t {
	t.Helper()
	var st syscall.Stat_t
	if err := syscall.Lstat(path, &st); err != nil {
		t.Fatalf("lstat %s: %v", path, err)
	}
	return &st
}

func chown(t *testing.T, path string, uid, gid int) {
	t.Helper()
	if err := os.Lchown(path, uid, gid); err != nil {
		t.Fatal(err)
	}
}

func requireRoot(t *testing.T, why string) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skipf("%s needs root", why)
	}
}

func TestOptionReadOnly(t *testing.T) {
	h, ssh := sshHost(t)
	writeFile(t, filepath.Join(h.Dir, "f"), "data", 0o644)
	mnt := mountWith(t, h.Alias+":"+h.Dir, append(ssh, "-o", "ro")...)
	if b, err := os.ReadFile(filepath.Join(mnt, "f")); err != nil || string(b) != "data" {
		t.Errorf("read: %q, %v", b, err)
	}
	checks := map[string]error{
		"create": os.WriteFile(filepath.Join(mnt, "new"), nil, 0o644),
		"mkdir":  os.Mkdir(filepath.Join(mnt, "d"), 0o755),
		"remove": os.Remove(filepath.Join(mnt, "f")),
		"chmod":  os.Chmod(filepath.Join(mnt, "f"), 0o600),
	}
	if f, err := os.OpenFile(filepath.Join(mnt, "f"), os.O_WRONLY, 0); err == nil {
		f.Close()
		checks["open for writing"] = nil
	} else {
		checks["open for writing"] = err
	}
	for op, err := range checks {
		if !errors.Is(err, syscall.EROFS) {
			t.Errorf("%s on a ro mount: %v, want EROFS", op, err)
		}
	}
	if opts, _, _, _ := mountInfo(mnt); !hasOpt(opts, "ro") {
		t.Errorf("mountinfo options %q lack ro", opts)
	}
	if b, _ := os.ReadFile(filepath.Join(h.Dir, "f")); string(b) != "data" {
		t.Errorf("server file changed: %q", b)
	}
}

func TestOptionOwnerAndUmask(t *testing.T) {
	h, ssh := sshHost(t)
	// umask= shows 0777 less the mask, whatever the server stores, as
	// sshfs (libfuse) does: narrower modes on the server are widened.
	writeFile(t, filepath.Join(h.Dir, "f"), "x", 0o600)
	os.Chmod(filepath.Join(h.Dir, "f"), 0o600)
	if err := os.Mkdir(filepath.Join(h.Dir, "d"), 0o700); err != nil {
		t.Fatal(err)
	}
	os.Chmod(filepath.Join(h.Dir, "d"), 0o700)
	mnt := mountWith(t, h.Alias+":"+h.Dir, append(ssh, "-o", "uid=1234,gid=2345", "-o", "umask=027")...)
	for name, want := range map[string]uint32{"f": syscall.S_IFREG | 0o750, "d": syscall.S_IFDIR | 0o750} {
		st := statT(t, filepath.Join(mnt, name))
		if st.Uid != 1234 || st.Gid != 2345 {
			t.Errorf("%s: owner %d:%d, want 1234:2345", name, st.Uid, st.Gid)
		}
		if st.Mode != want {
			t.Errorf("%s: mode %o, want %o", name, st.Mode, want)
		}
	}
}

// TestOptionIDMapFile: remote ids 4242:4343 are the local user and group
// daemon (1:1) through uidfile and gidfile, and back for chown.
func TestOptionIDMapFile(t *testing.T) {
	requireRoot(t, "chown of server files")
	h, ssh := sshHost(t)
	for _, n := range []string{"mapped", "unmapped", "target"} {
		writeFile(t, filepath.Join(h.Dir, n), n, 0o644)
	}
	chown(t, filepath.Join(h.Dir, "mapped"), 4242, 4343)
	chown(t, filepath.Join(h.Dir, "unmapped"), 5555, 5556)
	files := t.TempDir()
	uidfile, gidfile := filepath.Join(files, "uids"), filepath.Join(files, "gids")
	writeFile(t, uidfile, "# local:remote\ndaemon:4242\n", 0o644)
	writeFile(t, gidfile, "daemon:4343\n", 0o644)
	idopts := "idmap=file,uidfile=" + uidfile + ",gidfile=" + gidfile
	spec := h.Alias + ":" + h.Dir

	mnt := mountWith(t, spec, append(ssh, "-o", idopts)...)
	ids := func(mnt, name string) [2]uint32 {
		st := statT(t, filepath.Join(mnt, name))
		return [2]uint32{st.Uid, st.Gid}
	}
	if got := ids(mnt, "mapped"); got != [2]uint32{1, 1} {
		t.Errorf("remote 4242:4343 shown as %v, want daemon 1:1", got)
	}
	if got := ids(mnt, "unmapped"); got != [2]uint32{65534, 65534} {
		t.Errorf("nomap=error: remote 5555:5556 shown as %v, want 65534:65534", got)
	}
	if err := os.Chown(filepath.Join(mnt, "target"), 1, 1); err != nil {
		t.Fatalf("chown through the mount: %v", err)
	}
	if st := statT(t, filepath.Join(h.Dir, "target")); st.Uid != 4242 || st.Gid != 4343 {
		t.Errorf("chown 1:1 through the mount: server has %d:%d, want 4242:4343", st.Uid, st.Gid)
	}

	ignore := mountWith(t, spec, append(ssh, "-o", idopts+",nomap=ignore")...)
	if got := ids(ignore, "unmapped"); got != [2]uint32{5555, 5556} {
		t.Errorf("nomap=ignore: remote 5555:5556 shown as %v", got)
	}
	if got := ids(ignore, "mapped"); got != [2]uint32{1, 1} {
		t.Errorf("nomap=ignore: remote 4242:4343 shown as %v, want 1:1", got)
	}
}

// sftpServerPath is OpenSSH's sftp-server on this machine.
func sftpServerPath(t *testing.T) string {
	for _, p := range []string{"/usr/lib/openssh/sftp-server", "/usr/libexec/openssh/sftp-server",
		"/usr/libexec/sftp-server", "/usr/lib/ssh/sftp-server"} {
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	t.Skip("sftp-server not found")
	return ""
}

// TestOptionIDMapUser: the remote user's ids are the owner of its home.
// The test logs in as root, so it gives the session another home with
// sftp_server="sftp-server -d HOME", HOME owned by 4242:4343: files of
// 4242:4343 then appear as the local user's, and chown maps back.
func TestOptionIDMapUser(t *testing.T) {
	requireRoot(t, "chown of server files")
	h, ssh := sshHost(t)
	home := filepath.Join(h.Dir, "home")
	if err := os.Mkdir(home, 0o755); err != nil {
		t.Fatal(err)
	}
	chown(t, home, 4242, 4343)
	for _, n := range []string{"mine", "other", "target"} {
		writeFile(t, filepath.Join(home, n), n, 0o644)
	}
	chown(t, filepath.Join(home, "mine"), 4242, 4343)
	chown(t, filepath.Join(home, "other"), 5555, 5556)
	serv := "sftp_server=" + sftpServerPath(t) + " -d " + home

	mnt := mountWith(t, h.Alias+":", append(ssh, "-o", serv+",idmap=user")...)
	uid, gid := uint32(os.Getuid()), uint32(os.Getgid())
	if st := statT(t, filepath.Join(mnt, "mine")); st.Uid != uid || st.Gid != gid {
		t.Errorf("remote user's file 4242:4343 shown as %d:%d, want the local %d:%d", st.Uid, st.Gid, uid, gid)
	}
	if st := statT(t, filepath.Join(mnt, "other")); st.Uid != 5555 || st.Gid != 5556 {
		t.Errorf("another user's file 5555:5556 shown as %d:%d, want it unchanged", st.Uid, st.Gid)
	}
	if err := os.Chown(filepath.Join(mnt, "target"), int(uid), int(gid)); err != nil {
		t.Fatalf("chown through the mount: %v", err)
	}
	if st := statT(t, filepath.Join(home, "target")); st.Uid != 4242 || st.Gid != 4343 {
		t.Errorf("chown to the local user: server has %d:%d, want the remote user's 4242:4343", st.Uid, st.Gid)
	}

	plain := mountWith(t, h.Alias+":", append(ssh, "-o", serv)...)
	if st := statT(t, filepath.Join(plain, "mine")); st.Uid != 4242 {
		t.Errorf("idmap=none: uid %d, want the server's 4242", st.Uid)
	}
}

func TestOptionSymlinks(t *testing.T) {
	h, ssh := sshHost(t)
	root := filepath.Join(h.Dir, "tree")
	if err := os.MkdirAll(filepath.Join(root, "d"), 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(root, "d", "x"), "x", 0o644)
	outside := filepath.Join(h.Dir, "outside")
	writeFile(t, outside, "o", 0o644)
	links := map[string]string{
		"ld":      "d",
		"abs_in":  filepath.Join(root, "d", "x"),
		"abs_out": outside,
		"rel_out": "../outside",
	}
	for name, target := range links {
		if err := os.Symlink(target, filepath.Join(root, name)); err != nil {
			t.Fatal(err)
		}
	}
	spec := h.Alias + ":" + root
	readlink := func(mnt, name string) (string, error) { return os.Readlink(filepath.Join(mnt, name)) }

	def := mountWith(t, spec, ssh...)
	if st := statT(t, filepath.Join(def, "ld")); st.Mode&syscall.S_IFMT != syscall.S_IFLNK {
		t.Errorf("default: ld mode %o, want a symlink", st.Mode)
	}
	if got, err := readlink(def, "ld"); got != "d" || err != nil {
		t.Errorf("default: readlink ld = %q, %v", got, err)
	}
	for _, name := range []string{"abs_out", "abs_in", "rel_out"} {
		if got, err := readlink(def, name); !errors.Is(err, syscall.EACCES) {
			t.Errorf("contain_symlinks (default): readlink %s = %q, %v; want EACCES", name, got, err)
		}
	}

	nocontain := mountWith(t, spec, append(ssh, "-o", "nocontain_symlinks")...)
	for _, name := range []string{"abs_out", "rel_out"} {
		if got, err := readlink(nocontain, name); got != links[name] || err != nil {
			t.Errorf("nocontain_symlinks: readlink %s = %q, %v; want %q", name, got, err, links[name])
		}
	}

	transform := mountWith(t, spec, append(ssh, "-o", "transform_symlinks")...)
	if got, err := readlink(transform, "abs_in"); got != "d/x" || err != nil {
		t.Errorf("transform_symlinks: readlink abs_in = %q, %v; want d/x", got, err)
	}
	if b, err := os.ReadFile(filepath.Join(transform, "abs_in")); string(b) != "x" || err != nil {
		t.Errorf("transform_symlinks: read through abs_in = %q, %v", b, err)
	}
	if _, err := readlink(transform, "abs_out"); !errors.Is(err, syscall.EACCES) {
		t.Errorf("transform_symlinks: absolute target outside: %v, want EACCES", err)
	}

	follow := mountWith(t, spec, append(ssh, "-o", "follow_symlinks")...)
	if st := statT(t, filepath.Join(follow, "ld")); st.Mode&syscall.S_IFMT != syscall.S_IFDIR {
		t.Errorf("follow_symlinks: ld mode %o, want a directory", st.Mode)
	}
	if names, err := os.ReadDir(filepath.Join(follow, "ld")); err != nil || len(names) != 1 || names[0].Name() != "x" {
		t.Errorf("follow_symlinks: readdir ld = %v, %v", names, err)
	}
}

// TestOptionCacheModes: which opens and reads reach the server.
//
// The server's file is rewritten behind the mount's back. Swapped for
// another content with the same size and mtime, it looks unchanged: a
// stale read proves the kernel sent no READ (page cache kept across opens,
// by default and with kernel_cache); direct_io sends every read, even on a
// file open since before the change. With a new mtime, the contents are
// dropped at the next open, with kernel_cache too: the kernel invalidates
// its cache when it sees a new mtime. cache_timeout=0 makes the kernel ask
// for attributes at once. Without direct_io, a read on a file open since
// before the change is up to the kernel, and only logged.
func TestOptionCacheModes(t *testing.T) {
	h, ssh := sshHost(t)
	spec := h.Alias + ":" + h.Dir
	old := time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC)
	rewrite := func(name, data string, mtime time.Time) {
		t.Helper()
		p := filepath.Join(h.Dir, name)
		writeFile(t, p, data, 0o644)
		if err := os.Chtimes(p, mtime, mtime); err != nil {
			t.Fatal(err)
		}
	}
	read := func(p string) string {
		t.Helper()
		b, err := os.ReadFile(p)
		if err != nil {
			t.Errorf("read %s: %v", p, err)
		}
		return string(b)
	}
	for _, tc := range []struct {
		opt                 string
		sameMtime, newMtime string // content read after reopen, after each change
		sameFD              string // on the file open since before: "" = up to the kernel
	}{
		{"", "aaaa", "cccc", ""},
		{"kernel_cache", "aaaa", "cccc", ""},
		{"direct_io", "bbbb", "cccc", "bbbb"},
	} {
		opts := "cache_timeout=0"
		if tc.opt != "" {
			opts += "," + tc.opt
		}
		name := "f-" + tc.opt
		rewrite(name, "aaaa", old)
		mnt := mountWith(t, spec, append(ssh, "-o", opts)...)
		p := filepath.Join(mnt, name)
		f, err := os.Open(p)
		if err != nil {
			t.Fatal(err)
		}
		buf := make([]byte, 64)
		if n, err := f.ReadAt(buf, 0); string(buf[:n]) != "aaaa" || (err != nil && err != io.EOF) {
			t.Fatalf("%s: first read %q, %v", opts, buf[:n], err)
		}
		if got := read(p); got != "aaaa" {
			t.Fatalf("%s: second open: %q", opts, got)
		}

		rewrite(name, "bbbb", old)
		n, _ := f.ReadAt(buf, 0)
		switch got := string(buf[:n]); {
		case tc.sameFD == "":
			t.Logf("%s: read on the open file after the server changed it: %q", opts, got)
		case got != tc.sameFD:
			t.Errorf("%s: read on the open file after the server changed it: %q, want %q", opts, got, tc.sameFD)
		}
		f.Close()
		if got := read(p); got != tc.sameMtime {
			t.Errorf("%s: reopen after a change with the same size and mtime: %q, want %q", opts, got, tc.sameMtime)
		}

		rewrite(name, "cccc", old.Add(time.Hour))
		if got := read(p); got != tc.newMtime {
			t.Errorf("%s: reopen after a change of mtime: %q, want %q", opts, got, tc.newMtime)
		}
	}
}

// sshChildren counts the ssh connections whose parent is pid: ssh
// processes, but for those that only open a session on another's
// connection (remote commands, the watcher of changes).
func sshChildren(pid int) int {
	n := 0
	dirs, _ := os.ReadDir("/proc")
	for _, d := range dirs {
		b, err := os.ReadFile(filepath.Join("/proc", d.Name(), "stat"))
		if err != nil {
			continue
		}
		s := string(b)
		open, end := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
		if open < 0 || end < 0 || s[open+1:end] != "ssh" {
			continue
		}
		f := strings.Fields(s[end+1:])
		cmd, _ := os.ReadFile(filepath.Join("/proc", d.Name(), "cmdline"))
		if len(f) > 1 && f[0] != "Z" && f[1] == strconv.Itoa(pid) && !strings.Contains(string(cmd), "-oControlMaster=no") {
			n++
		}
	}
	return n
}

// TestOptionMaxConns: max_conns=N runs N ssh sessions, and the mount works
// with 1 and with 4. The reads must reach the server: no disk cache (the
// second mount would find the files the first one read).
func TestOptionMaxConns(t *testing.T) {
	h, ssh := sshHost(t)
	for i := range 8 {
		// 1 MiB: a read of several packets is split over channels, which
		// asks for more of them (they open on demand).
		writeFile(t, filepath.Join(h.Dir, "f"+strconv.Itoa(i)), strings.Repeat("z", 1<<20), 0o644)
	}
	for _, n := range []int{1, 4} {
		mnt := mountWith(t, h.Alias+":"+h.Dir, append(ssh, "-o", "nodisk_cache,max_conns="+strconv.Itoa(n))...)
		errs := make(chan error, 8)
		for i := range 8 {
			go func() {
				b, err := os.ReadFile(filepath.Join(mnt, "f"+strconv.Itoa(i)))
				if err == nil && len(b) != 1<<20 {
					err = errors.New("short read")
				}
				errs <- err
			}()
		}
		for range 8 {
			if err := <-errs; err != nil {
				t.Errorf("max_conns=%d: parallel read: %v", n, err)
			}
		}
		pids := serving(mnt)
		if len(pids) != 1 {
			t.Fatalf("serving processes %v", pids)
		}
		deadline := time.Now().Add(10 * time.Second)
		for sshChildren(pids[0]) != n && time.Now().Before(deadline) {
			time.Sleep(20 * time.Millisecond)
		}
		if got := sshChildren(pids[0]); got != n {
			t.Errorf("max_conns=%d: %d ssh sessions", n, got)
		}
	}
}

// TestOptionTimeout: with the server frozen, a request fails with ETIMEDOUT
// after timeout= instead of hanging.
func TestOptionTimeout(t *testing.T) {
	h, ssh := sshHost(t)
	mnt := mountWith(t, h.Alias+":"+h.Dir, append(ssh, "-o", "timeout=2,cache_timeout=0")...)
	h.Freeze()
	defer h.Thaw()
	start := time.Now()
	done := make(chan error, 1)
	go func() {
		_, err := os.Stat(filepath.Join(mnt, "never-seen"))
		done <- err
	}()
	select {
	case err := <-done:
		took := time.Since(start)
		if !errors.Is(err, syscall.ETIMEDOUT) {
			t.Errorf("stat with the server frozen: %v, want ETIMEDOUT", err)
		}
		if took < 1500*time.Millisecond {
			t.Errorf("failed after %v, before timeout=2 passed", took)
		}
		t.Logf("stat failed after %v: %v", took, err)
	case <-time.After(15 * time.Second):
		h.Thaw()
		t.Fatal("stat with the server frozen still hangs after 15s with timeout=2")
	}
}

func TestOptionFsnameSubtype(t *testing.T) {
	h, ssh := sshHost(t)
	mnt := mountWith(t, h.Alias+":"+h.Dir, append(ssh, "-o", "fsname=myremote,subtype=mysub")...)
	if _, fstype, source, _ := mountInfo(mnt); fstype != "fuse.mysub" || source != "myremote" {
		t.Errorf("mountinfo: type %q source %q, want fuse.mysub myremote", fstype, source)
	}
	if _, err := os.ReadDir(mnt); err != nil {
		t.Error(err)
	}
}

// asNobody runs cat path as the user nobody and returns its error.
func asNobody(path string) error {
	cmd := exec.Command("cat", path)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	out, err := cmd.CombinedOutput()
	if err != nil {
		return errors.New(strings.TrimSpace(string(out)))
	}
	return nil
}

// publicMountpoint is a mountpoint that every user can reach.
func publicMountpoint(t *testing.T) string {
	t.Helper()
	mnt := mountpoint(t)
	// The run's temporary directories (testenv.Main, scripts/test.sh) are
	// private: let others through the ones that keep them out.
	for d := filepath.Dir(mnt); d != "/"; d = filepath.Dir(d) {
		fi, err := os.Stat(d)
		if err == nil && fi.Mode().Perm()&0o001 == 0 {
			err = os.Chmod(d, fi.Mode().Perm()|0o011)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	return mnt
}

// TestOptionAllowOtherDefaultPermissions: another user is kept out without
// allow_other; with it, the kernel checks the file modes (allow_other
// implies default_permissions), unless nodefault_permissions leaves every
// check to the server (where sshfsm logs in as root).
func TestOptionAllowOtherDefaultPermissions(t *testing.T) {
	requireRoot(t, "acting as another user")
	h, ssh := sshHost(t)
	writeFile(t, filepath.Join(h.Dir, "public"), "p", 0o644)
	writeFile(t, filepath.Join(h.Dir, "secret"), "s", 0o600)
	spec := h.Alias + ":" + h.Dir

	own := mountAt(t, publicMountpoint(t), spec, ssh...)
	if err := asNobody(filepath.Join(own, "public")); err == nil || !strings.Contains(err.Error(), "Permission denied") {
		t.Errorf("without allow_other: nobody reads public: %v, want permission denied", err)
	}

	other := mountAt(t, publicMountpoint(t), spec, append(ssh, "-o", "allow_other,nodefault_permissions")...)
	if opts := func() string { _, _, _, s := mountInfo(other); return s }(); !hasOpt(opts, "allow_other") || hasOpt(opts, "default_permissions") {
		t.Errorf("allow_other,nodefault_permissions: superblock options %q", opts)
	}
	for _, name := range []string{"public", "secret"} {
		if err := asNobody(filepath.Join(other, name)); err != nil {
			t.Errorf("allow_other,nodefault_permissions: nobody reads %s: %v", name, err)
		}
	}

	perms := mountAt(t, publicMountpoint(t), spec, append(ssh, "-o", "allow_other")...)
	if err := asNobody(filepath.Join(perms, "public")); err != nil {
		t.Errorf("allow_other: nobody reads public (0644): %v", err)
	}
	if err := asNobody(filepath.Join(perms, "secret")); err == nil || !strings.Contains(err.Error(), "Permission denied") {
		t.Errorf("allow_other: nobody reads secret (0600 root): %v, want permission denied", err)
	}
	if _, _, _, s := mountInfo(perms); !hasOpt(s, "default_permissions") {
		t.Errorf("allow_other without default_permissions in the superblock options %q", s)
	}
}

// sshWrapper writes a script that logs its arguments, one per line, then
// runs ssh with them; it returns the script and the log.
func sshWrapper(t *testing.T) (script, log string) {
	t.Helper()
	dir := t.TempDir()
	script, log = filepath.Join(dir, "ssh-wrapper"), filepath.Join(dir, "args.log")
	body := "#!/bin/sh\nfor a in \"$@\"; do printf '%s\\n' \"$a\"; done >> '" + log + "'\necho --- >> '" + log + "'\nexec ssh \"$@\"\n"
	writeFile(t, script, body, 0o755)
	return script, log
}

// TestSSHPassThrough: ssh_command= runs the given command with the ssh
// arguments; -C, -F and -o Keyword=value reach it, and so does
// sftp_server=.
func TestSSHPassThrough(t *testing.T) {
	h, ssh := sshHost(t)
	writeFile(t, filepath.Join(h.Dir, "f"), "via wrapper", 0o644)
	script, log := sshWrapper(t)
	serv := sftpServerPath(t)
	mnt := mountWith(t, h.Alias+":"+h.Dir, append(ssh, "-C", "-o", "ssh_command="+script,
		"-o", "ServerAliveInterval=7", "-o", "sftp_server="+serv, "-o", "max_conns=1")...)
	if b, err := os.ReadFile(filepath.Join(mnt, "f")); string(b) != "via wrapper" || err != nil {
		t.Errorf("read: %q, %v", b, err)
	}
	b, err := os.ReadFile(log)
	if err != nil {
		t.Fatalf("the ssh_command wrapper never ran: %v", err)
	}
	args := strings.Split(string(b), "\n")
	for _, want := range []string{"-C", "-F", h.SSHConfig, "-oServerAliveInterval=7", serv} {
		found := false
		for _, a := range args {
			found = found || a == want
		}
		if !found {
			t.Errorf("ssh arguments lack %q:\n%s", want, b)
		}
	}
	for _, a := range args {
		if a == "sftp" {
			t.Errorf("with sftp_server=, the sftp subsystem was requested anyway:\n%s", b)
		}
	}
}

// bareSSHConfig writes a client config for h without Port and
// IdentityFile, so that only the command line supplies them.
func bareSSHConfig(t *testing.T, h *testenv.Host) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "ssh_config")
	cfg := strings.Join([]string{
		"Host bare",
		"\tHostName " + h.Addr,
		"\tUser " + h.User,
		"\tUserKnownHostsFile " + h.KnownHosts,
		"\tGlobalKnownHostsFile /dev/null",
		"\tIdentitiesOnly yes",
		"\tIdentityAgent none",
		"\tCheckHostIP no",
		"\tBatchMode yes",
		"\tControlMaster no",
		"\tControlPath none",
		"\tConnectTimeout 10",
		"\tLogLevel ERROR",
		"",
	}, "\n")
	writeFile(t, p, cfg, 0o600)
	return p
}

// TestPortAndIdentityReachSSH: -p, -o Port= and -o IdentityFile= decide
// where ssh connects and which key it offers.
func TestPortAndIdentityReachSSH(t *testing.T) {
	h, _ := sshHost(t)
	cfg := bareSSHConfig(t, h)
	wrong := filepath.Join(t.TempDir(), "wrong_key")
	if out, err := exec.Command("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", wrong).CombinedOutput(); err != nil {
		t.Fatalf("ssh-keygen: %v: %s", err, out)
	}
	port := strconv.Itoa(h.Port)

	r := sshfsm(t, 30*time.Second, "-F", cfg, "-p", port, "-o", "IdentityFile="+wrong, "bare:", mountpoint(t))
	expectFailure(t, r, config.ExitAuth, "authentication to bare failed")

	r = sshfsm(t, 30*time.Second, "-F", cfg, "-o", "IdentityFile="+h.IdentityFile, "-p", strconv.Itoa(freePort(t)), "bare:", mountpoint(t))
	expectFailure(t, r, config.ExitConnect, "cannot connect to bare")

	for _, portArgs := range [][]string{{"-p", port}, {"-o", "Port=" + port}, {"-oport=" + port}} {
		mnt := mountWith(t, "bare:"+h.Dir, append([]string{"-F", cfg, "-o", "IdentityFile=" + h.IdentityFile}, portArgs...)...)
		if _, err := os.ReadDir(mnt); err != nil {
			t.Errorf("%v: readdir: %v", portArgs, err)
		}
	}
}

// TestRelativeMountpoint: a mountpoint relative to the working directory
// works, though the background process leaves that directory.
func TestRelativeMountpoint(t *testing.T) {
	h, ssh := sshHost(t)
	writeFile(t, filepath.Join(h.Dir, "f"), "rel", 0o644)
	mnt := mountpoint(t)
	cmd := exec.Command(binary(t), append(ssh, h.Alias+":"+h.Dir, "mnt")...)
	cmd.Dir = filepath.Dir(mnt)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("sshfsm ... mnt: %v: %s", err, out)
	}
	if b, err := os.ReadFile(filepath.Join(mnt, "f")); string(b) != "rel" || err != nil {
		t.Errorf("read: %q, %v", b, err)
	}
}

// TestConfigFileMounts: sshfsm --config NAME mounts what
// $XDG_CONFIG_HOME/sshfsm/NAME.toml describes; the host's port and key come
// from its [host.NAME] table, the ssh_config from -F on the command line.
func TestConfigFileMounts(t *testing.T) {
	h, _ := sshHost(t)
	cfg := bareSSHConfig(t, h)
	writeFile(t, filepath.Join(h.Dir, "f"), "from the config file", 0o644)
	xdg := t.TempDir()
	if err := os.Mkdir(filepath.Join(xdg, "sshfsm"), 0o700); err != nil {
		t.Fatal(err)
	}
	mnt := mountpoint(t)
	body := fmt.Sprintf("mountpoint = %q\n[host.bare]\nport = %d\nidentity_file = %q\n[[branch]]\nhost = \"bare\"\ndir = %q\n",
		mnt, h.Port, h.IdentityFile, h.Dir)
	writeFile(t, filepath.Join(xdg, "sshfsm", "work.toml"), body, 0o600)
	t.Setenv("XDG_CONFIG_HOME", xdg)
	if r := sshfsm(t, 30*time.Second, "-F", cfg, "--config", "work"); r.code != 0 {
		t.Fatalf("sshfsm --config work: exit %d, stderr %q", r.code, r.stderr)
	}
	if b, err := os.ReadFile(filepath.Join(mnt, "f")); string(b) != "from the config file" || err != nil {
		t.Errorf("read through the mount: %q, %v", b, err)
	}
}
