package e2e

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"sshfsm/internal/mountinfo"
	"sshfsm/internal/testenv"
)

// nobody is the unprivileged uid and gid the mounts below run as; no
// account is created for it.
const nobody = 65534

// userArea is a directory tree owned by nobody holding what an ordinary
// user's mount needs: a home, a runtime directory, a mountpoint, a copy of
// the mount binary and ssh files only nobody can read.
type userArea struct {
	root, home, runtime, tmp string
	bin                      string // the mount binary, copied where nobody can run it
}

// requireUserMounts skips unless this machine lets an ordinary user mount
// FUSE: that takes a setuid-root fusermount3, which mounts on the user's
// behalf, and a /dev/fuse the user may open, which fusermount3 opens with
// the user's permissions; and root, to run processes as nobody.
func requireUserMounts(t *testing.T) {
	t.Helper()
	testenv.RequireFUSE(t)
	if os.Geteuid() != 0 {
		t.Skip("running as another user needs root; these tests run as uid", os.Geteuid())
	}
	path, err := exec.LookPath("fusermount3")
	if err != nil {
		t.Skip("no fusermount3: ordinary users cannot mount FUSE here")
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Skipf("%s: %v: ordinary users cannot mount FUSE here", path, err)
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); !ok || st.Uid != 0 || fi.Mode()&os.ModeSetuid == 0 {
		t.Skipf("%s is not setuid root (%v): ordinary users cannot mount FUSE here", path, fi.Mode())
	}
	open := exec.Command("sh", "-c", ": <>/dev/fuse")
	open.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: nobody, Gid: nobody, Groups: []uint32{}}}
	if out, err := open.CombinedOutput(); err != nil {
		mode := "?"
		if fi, err := os.Stat("/dev/fuse"); err == nil {
			mode = fmt.Sprintf("%04o", fi.Mode().Perm())
		}
		t.Skipf("uid %d cannot open /dev/fuse (mode %s, usually 0666): ordinary users cannot mount FUSE here: %v: %s",
			nobody, mode, err, bytes.TrimSpace(out))
	}
}

// newUserArea creates the area below the test's temporary directory and
// opens search permission on every directory above it until the test ends.
// userMountSetup starts a host and an ordinary user's area with an ssh
// config and a mountpoint, unmounted (if mounted) when the test ends.
func userMountSetup(t *testing.T) (*testenv.Host, *userArea, string, string) {
	t.Helper()
	h := testenv.StartHost(t, "127.0.0.2")
	u := newUserArea(t)
	cfg := u.sshConfig(t, h)
	mnt := u.mkdir(t, filepath.Join(u.root, "mnt"))
	t.Cleanup(func() {
		if err := testenv.Unmount(mnt); err != nil {
			t.Error(err)
		}
		if t.Failed() {
			t.Logf("sshd log:\n%s", h.Log())
		}
	})
	return h, u, cfg, mnt
}

func newUserArea(t *testing.T) *userArea {
	t.Helper()
	base := t.TempDir()
	for p := base; p != "/"; p = filepath.Dir(p) {
		fi, err := os.Stat(p)
		if err != nil || fi.Mode().Perm()&0o001 != 0 {
			continue
		}
		mode := fi.Mode().Perm()
		if err := os.Chmod(p, mode|0o001); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.Chmod(p, mode) })
	}
	root := filepath.Join(base, "nobody")
	u := &userArea{root: root, home: filepath.Join(root, "home"), runtime: filepath.Join(root, "run"),
		tmp: filepath.Join(root, "tmp"), bin: filepath.Join(root, "bin", "sshfsm")}
	for _, d := range []string{root, u.home, u.runtime, u.tmp, filepath.Dir(u.bin)} {
		u.mkdir(t, d)
	}
	u.copyFile(t, binary(t), u.bin, 0o755)
	return u
}

// mkdir creates a directory owned by nobody, private to it.
func (u *userArea) mkdir(t *testing.T, dir string) string {
	t.Helper()
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(dir, nobody, nobody); err != nil {
		t.Fatal(err)
	}
	return dir
}

// writeFile writes a file owned by nobody.
func (u *userArea) writeFile(t *testing.T, path string, data []byte, mode os.FileMode) {
	t.Helper()
	if err := os.WriteFile(path, data, mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(path, nobody, nobody); err != nil {
		t.Fatal(err)
	}
}

func (u *userArea) copyFile(t *testing.T, from, to string, mode os.FileMode) {
	t.Helper()
	data, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	u.writeFile(t, to, data, mode)
}

// sshConfig writes nobody's client config for h: the same as h's own, but
// with a private copy of the client key and of known_hosts. The login user
// on the server stays h.User.
func (u *userArea) sshConfig(t *testing.T, h *testenv.Host) string {
	t.Helper()
	dir := u.mkdir(t, filepath.Join(u.root, "ssh"))
	key, known := filepath.Join(dir, "id"), filepath.Join(dir, "known_hosts")
	u.copyFile(t, h.IdentityFile, key, 0o600)
	u.copyFile(t, h.KnownHosts, known, 0o600)
	block := h.ConfigBlock()
	for from, to := range map[string]string{h.IdentityFile: key, h.KnownHosts: known} {
		if !strings.Contains(block, from) {
			t.Fatalf("the client config of %s does not name %s:\n%s", h.Alias, from, block)
		}
		block = strings.ReplaceAll(block, from, to)
	}
	cfg := filepath.Join(dir, "config")
	u.writeFile(t, cfg, []byte(block), 0o600)
	return cfg
}

// command prepares name to run as nobody, with its home, runtime, cache
// and temporary directories in the area (and the run's leak marker inherited).
func (u *userArea) command(ctx context.Context, name string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = u.home
	// The test process's XDG_CACHE_HOME is root's: nobody's disk cache
	// lives in its own home, as a real user's does.
	cmd.Env = append(os.Environ(), "HOME="+u.home, "XDG_RUNTIME_DIR="+u.runtime, "TMPDIR="+u.tmp,
		"XDG_CACHE_HOME="+filepath.Join(u.home, ".cache"), "USER=nobody", "LOGNAME=nobody")
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{
		Uid: nobody, Gid: nobody, Groups: []uint32{}}}
	return cmd
}

// run runs name as nobody and returns its combined output; a command still
// running after a minute is killed.
func (u *userArea) run(name string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out, err := u.command(ctx, name, args...).CombinedOutput()
	if ctx.Err() != nil {
		return string(out), fmt.Errorf("%s %s did not finish within a minute", name, strings.Join(args, " "))
	}
	return string(out), err
}

// must runs name as nobody and fails the test unless it succeeds.
func (u *userArea) must(t *testing.T, name string, args ...string) string {
	t.Helper()
	out, err := u.run(name, args...)
	if err != nil {
		t.Fatalf("%s %s as uid %d: %v\n%s", name, strings.Join(args, " "), nobody, err, out)
	}
	return out
}

// daemonOf finds the process of binary bin serving mnt, 0 if none.
func daemonOf(bin, mnt string) int {
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		var pid int
		if _, err := fmt.Sscanf(e.Name(), "%d", &pid); err != nil || pid == os.Getpid() {
			continue
		}
		if exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid)); err != nil || exe != bin {
			continue
		}
		args, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		for _, a := range strings.Split(string(args), "\x00") {
			if a == mnt {
				return pid
			}
		}
	}
	return 0
}

// uids returns the "Uid:" line of /proc/PID/status: real, effective, saved
// and file system uid.
func uids(pid int) string {
	status, _ := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	for _, line := range strings.Split(string(status), "\n") {
		if rest, ok := strings.CutPrefix(line, "Uid:"); ok {
			return strings.Join(strings.Fields(rest), " ")
		}
	}
	return ""
}

// TestNonRootMount mounts as an ordinary user through fusermount3: the
// daemon runs as that user, the mount is that user's, files written
// through it arrive intact, and the user's own fusermount3 -u ends mount
// and daemon.
func TestNonRootMount(t *testing.T) {
	requireUserMounts(t)
	h, u, cfg, mnt := userMountSetup(t)

	u.must(t, u.bin, "-F", cfg, h.Alias+":"+h.Dir, mnt)
	m, ok := mountinfo.At(mnt)
	if !ok {
		t.Fatalf("the mount command succeeded but nothing is mounted at %s", mnt)
	}
	t.Logf("mounted as uid %d: %s %s %s", nobody, m.FSType, m.Source, m.Super)
	if !strings.HasPrefix(m.FSType, "fuse") || !strings.Contains(","+m.Super+",", fmt.Sprintf(",user_id=%d,", nobody)) {
		t.Errorf("mount at %s is %s with %q, want a FUSE mount with user_id=%d", mnt, m.FSType, m.Super, nobody)
	}
	pid := daemonOf(u.bin, mnt)
	if pid == 0 {
		t.Fatalf("no daemon serving %s", mnt)
	}
	want := strings.TrimSpace(strings.Repeat(fmt.Sprintf("%d ", nobody), 4))
	if got := uids(pid); got != want {
		t.Errorf("daemon %d has uids %q, want %q", pid, got, want)
	}

	useMount(t, u, h, mnt)

	kids := children(pid)
	u.must(t, "fusermount3", "-u", mnt)
	if testenv.MountedAt(mnt) {
		t.Fatalf("%s is still mounted after fusermount3 -u as uid %d", mnt, nobody)
	}
	for _, p := range append([]int{pid}, kids...) {
		if !waitExit(p, testenv.Patience()) {
			t.Errorf("process %d (%s) still runs long after the unmount", p, cmdline(p))
		}
	}
}

// useMount creates, writes (with fsync), reads back and lists files
// through mnt as nobody, then checks what arrived on the server.
func useMount(t *testing.T, u *userArea, h *testenv.Host, mnt string) {
	t.Helper()
	const size = 8 * mib
	data := make([]byte, size)
	if _, err := io.ReadFull(content(42), data); err != nil {
		t.Fatal(err)
	}
	src := filepath.Join(u.root, "src")
	u.writeFile(t, src, data, 0o600)
	dir := filepath.Join(mnt, "d")

	u.must(t, "mkdir", dir)
	u.must(t, "dd", "if="+src, "of="+filepath.Join(dir, "data"), "bs=1M", "conv=fsync", "status=none")
	u.must(t, "sh", "-c", `printf hello >"$1" && printf ' world' >>"$1"`, "sh", filepath.Join(dir, "small"))
	u.must(t, "cmp", src, filepath.Join(dir, "data"))
	if got := u.must(t, "cat", filepath.Join(dir, "small")); got != "hello world" {
		t.Errorf("small reads back as %q, want %q", got, "hello world")
	}
	if got := u.must(t, "ls", "-A", dir); got != "data\nsmall\n" {
		t.Errorf("ls -A lists %q, want data and small", got)
	}

	if got, err := os.ReadFile(filepath.Join(h.Dir, "d", "data")); err != nil || !bytes.Equal(got, data) {
		t.Errorf("data on the server: %d bytes, %v; want the %d bytes written", len(got), err, size)
	}
	if got, err := os.ReadFile(filepath.Join(h.Dir, "d", "small")); err != nil || string(got) != "hello world" {
		t.Errorf("small on the server: %q, %v; want %q", got, err, "hello world")
	}
}

// TestNonRootAllowOtherRefused asks for allow_other as an ordinary user
// while /etc/fuse.conf does not permit it: the mount fails with a
// non-zero exit code and one clear line, leaving no mount or process.
func TestNonRootAllowOtherRefused(t *testing.T) {
	requireUserMounts(t)
	if conf, err := os.ReadFile("/etc/fuse.conf"); err == nil {
		for _, line := range strings.Split(string(conf), "\n") {
			if strings.TrimSpace(line) == "user_allow_other" {
				t.Skip("/etc/fuse.conf has user_allow_other: allow_other is permitted to every user here")
			}
		}
	}
	h, u, cfg, mnt := userMountSetup(t)

	out, err := u.run(u.bin, "-F", cfg, "-o", "allow_other", h.Alias+":"+h.Dir, mnt)
	t.Logf("output: %q, %v", out, err)
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() == 0 {
		t.Fatalf("mount with allow_other as uid %d: %v, want a non-zero exit\n%s", nobody, err, out)
	}
	line := strings.TrimSuffix(out, "\n")
	if line == "" || strings.Contains(line, "\n") {
		t.Errorf("output is not one line:\n%s", out)
	}
	if !strings.Contains(line, "allow_other") || !strings.Contains(line, "user_allow_other") {
		t.Errorf("output %q does not say that allow_other needs user_allow_other in /etc/fuse.conf", line)
	}
	if testenv.MountedAt(mnt) {
		t.Errorf("%s is mounted although the mount command failed", mnt)
	}
	if pid := daemonOf(u.bin, mnt); pid != 0 && !waitExit(pid, testenv.Patience()) {
		t.Errorf("daemon %d (%s) still runs long after the failed mount", pid, cmdline(pid))
	}
}
