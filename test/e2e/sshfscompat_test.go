package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"sshfsm/internal/mountinfo"
	"sshfsm/internal/testenv"
)

// TestAllowRoot: -o allow_root mounts, as libfuse does it: the kernel
// lets every user in (allow_other among the superblock's options) and
// sshfsm answers the users other than the owner and root with EACCES.
// Here the owner is root; the mount serves root and no one else.
func TestAllowRoot(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: to run as another uid")
	}
	h := testenv.StartHost(t, "127.0.0.2")
	if err := os.Chmod(h.Dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(h.Dir, "public"), []byte("public"), 0o644); err != nil {
		t.Fatal(err)
	}
	m := mount(t, h, mountSpec{opts: []string{"allow_root"}})
	openSearchUpTo(t, m.Dir)
	if mi, ok := mountinfo.At(m.Dir); !ok || !strings.Contains(","+mi.Super+",", ",allow_other,") {
		t.Fatalf("mount at %s: superblock options %q; want allow_other, which allow_root is for the kernel", m.Dir, mi.Super)
	}
	if got, err := os.ReadFile(m.Path("public")); err != nil || string(got) != "public" {
		t.Errorf("root reading through allow_root: %q, %v", got, err)
	}
	for _, c := range [][]string{{"cat", m.Path("public")}, {"ls", m.Dir}, {"stat", m.Path("public")}} {
		if out, err := asNobody(c[0], c[1:]...); err == nil || !strings.Contains(out, "Permission denied") {
			t.Errorf("uid %d: %s through allow_root: %q, %v; want Permission denied", nobody, strings.Join(c, " "), out, err)
		}
	}
}

// TestUmaskAsSshfs: umask= shows 0777 less the mask on every file, as sshfs
// (libfuse) does, whatever modes the server stores.
func TestUmaskAsSshfs(t *testing.T) {
	h := testenv.StartHost(t, "127.0.0.2")
	for name, mode := range map[string]os.FileMode{"private": 0o600, "open": 0o777} {
		p := filepath.Join(h.Dir, name)
		if err := os.WriteFile(p, []byte(name), mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, mode); err != nil {
			t.Fatal(err)
		}
	}
	m := mount(t, h, mountSpec{opts: []string{"umask=022"}})
	for _, name := range []string{"private", "open"} {
		fi, err := os.Stat(m.Path(name))
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode() != 0o755 {
			t.Errorf("%s with umask=022: mode %v, want -rwxr-xr-x", name, fi.Mode())
		}
	}
}

// TestIgnoredOptionsSaySo: an sshfs option that is accepted without effect
// is named on stderr by the mount command, with the reason; mount(8)'s
// own options are not.
func TestIgnoredOptionsSaySo(t *testing.T) {
	testenv.RequireFUSE(t)
	h := testenv.StartHost(t, "127.0.0.2")
	m := &Mount{Dir: filepath.Join(t.TempDir(), "mnt"), Remote: h.Dir, Host: h,
		args: append(h.SSHArgs(), "-o", "max_read=65536,Cipher=blowfish,_netdev,nonempty", h.Alias+":"+h.Dir)}
	if err := os.Mkdir(m.Dir, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.unmount(t) })
	out, err := exec.Command(binary(t), append(m.args, m.Dir)...).CombinedOutput()
	if err != nil || !testenv.MountedAt(m.Dir) {
		t.Fatalf("mount: %v\n%s", err, out)
	}
	for _, want := range []string{
		"warning: option max_read is ignored (libfuse): the kernel's reads are at most max_write bytes",
		"warning: option Cipher is ignored: the cipher of SSH protocol 1",
		"warning: option nonempty is ignored",
	} {
		if !strings.Contains(string(out), want) {
			t.Errorf("mount printed %q; want %q", out, want)
		}
	}
	if strings.Contains(string(out), "_netdev") {
		t.Errorf("mount printed %q; want nothing about _netdev, which is mount(8)'s", out)
	}
}

// TestAutoUnmount: with auto_unmount, a daemon killed with SIGKILL leaves
// no dead mount behind (fusermount3 unmounts it, then exits); the same
// mount ended with SIGTERM unmounts as usual, leaving nothing running.
func TestAutoUnmount(t *testing.T) {
	h := testenv.StartHost(t, "127.0.0.2")
	m := mount(t, h, mountSpec{opts: []string{"auto_unmount", "ro"}})
	checkFlags(t, m.Dir, "ro", "nosuid", "nodev")
	if _, err := os.ReadDir(m.Dir); err != nil {
		t.Fatal(err)
	}
	pid := m.daemonPID()
	if pid == 0 {
		t.Fatalf("no daemon process found serving %s", m.Dir)
	}
	watchdogs := fusermountsOf(m.Dir)
	if len(watchdogs) != 1 {
		t.Fatalf("fusermount3 processes for %s: %v; want the one that unmounts after the daemon", m.Dir, watchdogs)
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if !testenv.PollFor(testenv.Patience(), func() bool { return !testenv.MountedAt(m.Dir) }) {
		t.Fatalf("%s is still mounted after its daemon was killed", m.Dir)
	}
	if !waitExit(watchdogs[0], testenv.Patience()) {
		t.Errorf("fusermount3 %d still runs after unmounting", watchdogs[0])
	}

	m.start(t)
	pid, watchdogs = m.daemonPID(), fusermountsOf(m.Dir)
	if err := syscall.Kill(pid, syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if !waitExit(pid, testenv.Patience()) || testenv.MountedAt(m.Dir) {
		t.Fatalf("after SIGTERM: daemon running %v, %s mounted %v", testenv.Alive(pid), m.Dir, testenv.MountedAt(m.Dir))
	}
	for _, w := range watchdogs {
		if !waitExit(w, testenv.Patience()) {
			t.Errorf("fusermount3 %d still runs after the mount ended", w)
		}
	}
}

// fusermountsOf lists the fusermount3 processes whose command line names dir.
func fusermountsOf(dir string) []int {
	var pids []int
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		args := strings.Split(strings.TrimRight(readFile(fmt.Sprintf("/proc/%d/cmdline", pid)), "\x00"), "\x00")
		if filepath.Base(args[0]) == "fusermount3" && args[len(args)-1] == dir {
			pids = append(pids, pid)
		}
	}
	return pids
}

func readFile(p string) string {
	b, _ := os.ReadFile(p)
	return string(b)
}

// TestLogFile: with log=FILE, the daemon logs there once it has left the
// terminal, its state changes included (here: unmounting at SIGTERM), and
// sshfsm status says where the log goes.
func TestLogFile(t *testing.T) {
	h := testenv.StartHost(t, "127.0.0.2")
	logFile := filepath.Join(t.TempDir(), "sshfsm.log")
	m := mount(t, h, mountSpec{opts: []string{"log=" + logFile}})
	out, err := exec.Command(binary(t), "status", m.Dir).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "log      "+logFile+"\n") {
		t.Errorf("sshfsm status %s: %v\n%s\nwant a line naming the log %s", m.Dir, err, out, logFile)
	}
	pid := m.daemonPID()
	if pid == 0 {
		t.Fatalf("no daemon serving %s", m.Dir)
	}
	if err := syscall.Kill(pid, syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if !waitExit(pid, testenv.Patience()) {
		t.Fatalf("daemon %d still runs after SIGTERM", pid)
	}
	if got := readFile(logFile); !strings.Contains(got, "level=INFO msg=unmounting") || !strings.Contains(got, "signal=terminated") {
		t.Errorf("log file after SIGTERM:\n%s\nwant the unmounting, with its signal", got)
	}
}

// TestMakeInstall: make install puts the binary, the manual page and the
// completions below DESTDIR and PREFIX, and the binary installed runs
// (the one the tests built: BIN).
func TestMakeInstall(t *testing.T) {
	if _, err := exec.LookPath("make"); err != nil {
		t.Skip("no make")
	}
	_, file, _, _ := runtime.Caller(0)
	root := filepath.Join(filepath.Dir(file), "..", "..")
	dest := t.TempDir()
	out, err := exec.Command("make", "-C", root, "install", "DESTDIR="+dest, "PREFIX=/opt/sshfsm", "BIN="+binary(t)).CombinedOutput()
	if err != nil {
		t.Fatalf("make install: %v\n%s", err, out)
	}
	for path, mode := range map[string]os.FileMode{
		"bin/sshfsm":                                  0o755,
		"share/man/man1/sshfsm.1":                     0o644,
		"share/bash-completion/completions/sshfsm":    0o644,
		"share/zsh/site-functions/_sshfsm":            0o644,
		"share/fish/vendor_completions.d/sshfsm.fish": 0o644,
	} {
		fi, err := os.Stat(filepath.Join(dest, "opt/sshfsm", path))
		if err != nil || fi.Mode() != mode {
			t.Errorf("%s: %v, %v; want mode %v", path, fi, err, mode)
		}
	}
	v, err := exec.Command(filepath.Join(dest, "opt/sshfsm/bin/sshfsm"), "--version").Output()
	if err != nil || !strings.HasPrefix(string(v), "sshfsm version ") {
		t.Errorf("installed sshfsm --version: %q, %v", v, err)
	}
}
