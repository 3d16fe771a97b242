package e2e

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"sshfsm/internal/mountinfo"
	"sshfsm/internal/privdir"
	"sshfsm/internal/testenv"
)

// openSearchUpTo gives others search permission on dir and every directory
// above it until the test ends, so that another uid can reach a mountpoint
// below a test's temporary directory.
func openSearchUpTo(t *testing.T, dir string) {
	t.Helper()
	for p := dir; p != "/"; p = filepath.Dir(p) {
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
}

// asNobody runs name as uid nobody and returns its combined output.
func asNobody(name string, args ...string) (string, error) {
	cmd := exec.Command(name, args...)
	cmd.Dir = "/"
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: nobody, Gid: nobody, Groups: []uint32{}}}
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// TestAllowOtherHoldsOthersToModes: with allow_other, another local user
// cannot read a file the mount shows as 0600 and owned by someone else,
// nor write one it may only read: allow_other implies default_permissions.
// With nodefault_permissions, the server decides alone (as the remote user).
func TestAllowOtherHoldsOthersToModes(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: to mount with allow_other without user_allow_other, and to run as another uid")
	}
	h := testenv.StartHost(t, "127.0.0.2")
	if err := os.Chmod(h.Dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, mode := range map[string]os.FileMode{"secret": 0o600, "public": 0o644} {
		if err := os.WriteFile(filepath.Join(h.Dir, name), []byte(name), mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(filepath.Join(h.Dir, name), mode); err != nil {
			t.Fatal(err)
		}
	}

	m := mount(t, h, mountSpec{opts: []string{"allow_other"}})
	openSearchUpTo(t, m.Dir)
	if out, err := asNobody("cat", m.Path("public")); err != nil || out != "public" {
		t.Fatalf("uid %d reading a 0644 file: %q, %v; want its content (the mount must let others in)", nobody, out, err)
	}
	if out, err := asNobody("cat", m.Path("secret")); err == nil || !strings.Contains(out, "Permission denied") {
		t.Errorf("uid %d reading a 0600 file of uid %d through allow_other: %q, %v; want Permission denied",
			nobody, os.Getuid(), out, err)
	}
	if out, err := asNobody("sh", "-c", `printf x >>"$1"`, "sh", m.Path("public")); err == nil || !strings.Contains(out, "Permission denied") {
		t.Errorf("uid %d appending to a 0644 file of uid %d: %q, %v; want Permission denied", nobody, os.Getuid(), out, err)
	}
	if got, _ := os.ReadFile(filepath.Join(h.Dir, "public")); string(got) != "public" {
		t.Errorf("public on the server is %q after another uid tried to append", got)
	}

	// The opt-out works, and the mount command says what it costs.
	opt := &Mount{Dir: filepath.Join(t.TempDir(), "mnt"), Remote: h.Dir, Host: h,
		args: append(h.SSHArgs(), "-o", "allow_other,nodefault_permissions", h.Alias+":"+h.Dir)}
	if err := os.Mkdir(opt.Dir, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { opt.unmount(t) })
	out, err := exec.Command(binary(t), append(opt.args, opt.Dir)...).CombinedOutput()
	if err != nil || !testenv.MountedAt(opt.Dir) {
		t.Fatalf("mount with allow_other,nodefault_permissions: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "nodefault_permissions") || !strings.Contains(string(out), "every local user") {
		t.Errorf("mount with allow_other,nodefault_permissions printed %q; want a warning naming the risk", out)
	}
	openSearchUpTo(t, opt.Dir)
	if out, err := asNobody("cat", opt.Path("secret")); err != nil || out != "secret" {
		t.Errorf("with nodefault_permissions, uid %d reading the 0600 file: %q, %v; want the server to decide (it may)", nobody, out, err)
	}
}

// TestMountFlagsReachKernel: mount(8)'s flags given with -o are in the
// mount table, with nosuid and nodev always, and noexec holds: a script
// on the server cannot be run through the mount.
func TestMountFlagsReachKernel(t *testing.T) {
	h := testenv.StartHost(t, "127.0.0.2")
	script := filepath.Join(h.Dir, "run.sh")
	if err := os.WriteFile(script, []byte("#!/bin/sh\necho ran\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(script, 0o755); err != nil {
		t.Fatal(err)
	}

	m := mount(t, h, mountSpec{opts: []string{"noexec", "noatime", "ro"}})
	checkFlags(t, m.Dir, "ro", "noexec", "noatime", "nosuid", "nodev")
	out, err := exec.Command(m.Path("run.sh")).CombinedOutput()
	if !errors.Is(err, syscall.EACCES) {
		t.Errorf("running a server-side script through a noexec mount: %q, %v; want EACCES", out, err)
	}

	// Without noexec, the same script runs: the test above can fail.
	// relatime, the kernel's default, is accepted as fstab lines spell it.
	plain := mount(t, h, mountSpec{opts: []string{"relatime"}})
	checkFlags(t, plain.Dir, "nosuid", "nodev", "relatime")
	if out, err := exec.Command(plain.Path("run.sh")).CombinedOutput(); err != nil || string(out) != "ran\n" {
		t.Errorf("running the script through a mount without noexec: %q, %v", out, err)
	}
}

// TestNonRootMountFlags: an ordinary user's mount goes through fusermount3,
// which must get the flags too.
func TestNonRootMountFlags(t *testing.T) {
	requireUserMounts(t)
	h, u, cfg, mnt := userMountSetup(t)
	u.must(t, u.bin, "-F", cfg, "-o", "noexec,sync", h.Alias+":"+h.Dir, mnt)
	checkFlags(t, mnt, "noexec", "nosuid", "nodev")
	if m, _ := mountinfo.At(mnt); !strings.Contains(","+m.Options+","+m.Super+",", ",sync,") {
		t.Errorf("mount at %s: options %q, superblock %q; want sync in one", mnt, m.Options, m.Super)
	}
}

// TestUnknownMountFlagRefused: a flag sshfsm cannot pass on fails the
// mount, naming it, instead of being dropped.
func TestUnknownMountFlagRefused(t *testing.T) {
	out, err := exec.Command(binary(t), "-o", "nosymfollow", "h:", t.TempDir()).CombinedOutput()
	if err == nil || !strings.Contains(string(out), "nosymfollow") {
		t.Errorf("mount with -o nosymfollow: %v, %q; want a failure naming the option", err, out)
	}
}

// checkFlags fails the test unless the mount at dir has every per-mount
// option in want.
func checkFlags(t *testing.T, dir string, want ...string) {
	t.Helper()
	m, ok := mountinfo.At(dir)
	if !ok {
		t.Fatalf("nothing mounted at %s", dir)
	}
	for _, w := range want {
		if !strings.Contains(","+m.Options+",", ","+w+",") {
			t.Errorf("mount at %s has options %q, want %s among them", dir, m.Options, w)
		}
	}
}

// TestCacheDirChecked: the disk cache's directory is created private when
// missing, and a mount refuses one that another local user could have
// planted or could change, directly or through a directory above it.
func TestCacheDirChecked(t *testing.T) {
	h := testenv.StartHost(t, "127.0.0.2")
	base := t.TempDir()
	mkdir := func(name string, mode os.FileMode) string {
		dir := filepath.Join(base, name)
		if err := os.Mkdir(dir, mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(dir, mode); err != nil {
			t.Fatal(err)
		}
		return dir
	}
	refused := map[string]string{}
	refused[mkdir("group", 0o770)] = "others may change it"
	loose := mkdir("loose", 0o777)
	refused[filepath.Join(loose, "cache")] = "others could replace what it holds"
	// A link others could have put or could change leads to a good
	// directory: it still chooses which one.
	good := mkdir("good", 0o700)
	symlink := func(dir, name, target string) string {
		p := filepath.Join(dir, name)
		if err := os.Symlink(target, p); err != nil {
			t.Fatal(err)
		}
		return p
	}
	refused[symlink(loose, "link", good)] = "others could replace what it holds"
	if os.Geteuid() == 0 {
		theirs := mkdir("theirs", 0o700)
		if err := os.Chown(theirs, nobody, nobody); err != nil {
			t.Fatal(err)
		}
		refused[theirs] = "not by you"
		// Another user's home, as HOME kept by sudo names it.
		home := mkdir("home", 0o755)
		if err := os.Chown(home, nobody, nobody); err != nil {
			t.Fatal(err)
		}
		refused[filepath.Join(symlink(home, ".cache", base), "good")] = "neither you"
	}
	mnt := mkdir("mnt", 0o755)
	for dir, want := range refused {
		args := append(h.SSHArgs(), "-o", "cache_dir="+dir, h.Alias+":"+h.Dir, mnt)
		out, err := exec.Command(binary(t), args...).CombinedOutput()
		var exit *exec.ExitError
		if !errors.As(err, &exit) || exit.ExitCode() != 1 || !strings.Contains(string(out), want) ||
			!strings.Contains(string(out), "disk cache directory") {
			t.Errorf("mount with cache_dir=%s: %v, %q; want exit status 1 and an error saying %q", dir, err, out, want)
		}
		if testenv.MountedAt(mnt) {
			testenv.Unmount(mnt)
			t.Fatalf("mounted with cache_dir=%s", dir)
		}
	}

	fresh := filepath.Join(base, "new", "cache")
	mount(t, h, mountSpec{opts: []string{"cache_dir=" + fresh}})
	for _, d := range []string{filepath.Dir(fresh), fresh} {
		if fi, err := os.Stat(d); err != nil || fi.Mode().Perm() != 0o700 {
			t.Errorf("%s after the mount: %v, %v; want a directory of mode 0700", d, fi, err)
		}
	}
}

// TestCrashLeftoversSwept: a daemon killed with SIGKILL leaves its status
// socket (and sidecar) and the socket directory of its ssh master behind;
// the next mount removes them.
func TestCrashLeftoversSwept(t *testing.T) {
	h := testenv.StartHost(t, "127.0.0.2")
	// Short: a socket path holds at most 107 bytes.
	tmp, err := os.MkdirTemp("/tmp", "ctl")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(tmp) })
	// Short too: the status socket lives below it.
	run, err := os.MkdirTemp("/tmp", "run")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(run) })
	t.Setenv("TMPDIR", tmp)
	t.Setenv("XDG_RUNTIME_DIR", run)
	left := func() []string {
		ctl, _ := filepath.Glob(filepath.Join(tmp, "sshfsm-ctl-*"))
		socks, _ := filepath.Glob(filepath.Join(run, "sshfsm", "*"))
		return append(ctl, socks...)
	}

	crashed := mount(t, h, mountSpec{})
	pid := crashed.daemonPID()
	if pid == 0 {
		t.Fatal("no daemon serving", crashed.Dir)
	}
	// The status socket opens as the mount starts serving; on a loaded
	// machine that may be just after the mount command returned.
	var before []string
	if !testenv.Poll(func() bool { before = left(); return len(before) >= 3 }) {
		t.Fatalf("while mounted: %q; want the socket directory of the ssh master, the status socket and its sidecar", before)
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, "the killed daemon is gone", func() bool { return errors.Is(syscall.Kill(pid, 0), syscall.ESRCH) })
	if err := testenv.Unmount(crashed.Dir); err != nil {
		t.Fatal(err)
	}
	// Its ssh master sees the connection end and exits; its socket, if
	// left, then refuses connections.
	ctl, _ := filepath.Glob(filepath.Join(tmp, "sshfsm-ctl-*", "*"))
	testenv.Eventually(t, "the ssh master of the killed daemon exits", func() bool {
		for _, s := range ctl {
			if _, stale := privdir.StaleSocket(s); !stale && !os.IsNotExist(lstatErr(s)) {
				return false
			}
		}
		return true
	})
	if got := left(); len(got) != len(before) {
		t.Fatalf("after the kill: %q; want what the daemon left, %q", got, before)
	}

	mount(t, h, mountSpec{})
	now := left()
	for _, p := range before {
		for _, n := range now {
			if n == p {
				t.Errorf("%s, left by the killed daemon, is still there after the next mount", p)
			}
		}
	}
}

func lstatErr(path string) error {
	_, err := os.Lstat(path)
	return err
}

// TestStatusDirInOthersDirRefused: with XDG_RUNTIME_DIR naming a directory
// of another user (as su keeps it), the mount makes no status directory
// there, which that user could swap for one of their choice once checked
// (the sweep at start removes files in it); it mounts without one.
func TestStatusDirInOthersDirRefused(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("giving a directory to another user needs root")
	}
	h := testenv.StartHost(t, "127.0.0.2")
	theirs := filepath.Join(t.TempDir(), "run")
	if err := os.Mkdir(theirs, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(theirs, nobody, nobody); err != nil {
		t.Fatal(err)
	}
	t.Setenv("XDG_RUNTIME_DIR", theirs)
	m := mount(t, h, mountSpec{})
	if _, err := os.Lstat(filepath.Join(theirs, "sshfsm")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("%s/sshfsm after the mount: %v; want none made in a directory of uid %d", theirs, err, nobody)
	}
	if _, err := os.ReadDir(m.Dir); err != nil {
		t.Errorf("the mount without a status directory: %v", err)
	}
}
