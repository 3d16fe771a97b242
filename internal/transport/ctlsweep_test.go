package transport

import (
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"sshfsm/internal/testenv"
)

// impossiblePID is a process id no process can have: above the kernel's
// limit.
func impossiblePID(t *testing.T) int {
	t.Helper()
	b, err := os.ReadFile("/proc/sys/kernel/pid_max")
	if err != nil {
		t.Skip("no pid_max:", err)
	}
	n, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	return n + 1
}

// unixSocket makes a socket file at path; listening keeps it answering,
// otherwise it is left as a killed ssh master leaves its own.
func unixSocket(t *testing.T, path string, listening bool) {
	t.Helper()
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	if listening {
		t.Cleanup(func() { ln.Close() })
		return
	}
	ln.SetUnlinkOnClose(false)
	ln.Close()
}

// TestSweepCtlDirs: the socket directories of private masters that an
// sshfsm which is gone left behind are removed when the next one starts;
// nothing that might be in use, or that is not ours to remove, is.
func TestSweepCtlDirs(t *testing.T) {
	parent := t.TempDir()
	dead := strconv.Itoa(impossiblePID(t))
	mk := func(name string) string {
		dir := filepath.Join(parent, name)
		if err := os.Mkdir(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		return dir
	}
	crashed := mk(ctlDirPrefix + dead + "-1")
	unixSocket(t, filepath.Join(crashed, "c1"), false)
	unixSocket(t, filepath.Join(crashed, "c2"), false)
	empty := mk(ctlDirPrefix + dead + "-2")

	var kept []string
	running := mk(ctlDirPrefix + strconv.Itoa(os.Getpid()) + "-3")
	unixSocket(t, filepath.Join(running, "c1"), false)
	answering := mk(ctlDirPrefix + dead + "-4")
	unixSocket(t, filepath.Join(answering, "c1"), true)
	other := mk(ctlDirPrefix + dead + "-5")
	if err := os.WriteFile(filepath.Join(other, "notes"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	open := mk(ctlDirPrefix + dead + "-6")
	os.Chmod(open, 0o755)
	unnamed := mk(ctlDirPrefix + "123456")
	link := filepath.Join(parent, ctlDirPrefix+dead+"-7")
	if err := os.Symlink(mk("elsewhere"), link); err != nil {
		t.Fatal(err)
	}
	kept = append(kept, running, filepath.Join(running, "c1"), answering, filepath.Join(answering, "c1"),
		other, filepath.Join(other, "notes"), open, unnamed, link, filepath.Join(parent, "elsewhere"))

	sweepCtlDirs(parent)
	for _, p := range []string{crashed, empty} {
		if _, err := os.Lstat(p); !os.IsNotExist(err) {
			t.Errorf("%s: %v; want it removed", p, err)
		}
	}
	for _, p := range kept {
		if _, err := os.Lstat(p); err != nil {
			t.Errorf("%s: %v; want it kept", p, err)
		}
	}
	if got := ctlDirPID(filepath.Base(ctlDirPattern() + "x")); got != os.Getpid() {
		t.Errorf("the pid in this process's directory names reads back as %d", got)
	}
}

// TestCtlDirNotWhereOthersCanSwapIt: ssh's client talks to whatever
// listens at its ControlPath, whoever runs it; so the socket directory of
// a private master is never made in a temporary directory that others may
// change, where they could rename it away and listen in its place. The
// sticky /tmp serves instead.
func TestCtlDirNotWhereOthersCanSwapIt(t *testing.T) {
	th := testenv.StartHost(t, "127.0.0.2")
	// Short: a socket path holds at most 107 bytes.
	loose, err := os.MkdirTemp("/tmp", "ctl")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(loose) })
	if err := os.Chmod(loose, 0o777); err != nil {
		t.Fatal(err)
	}
	t.Setenv("TMPDIR", loose)
	h := dialSSH(t, th, nil)
	if h.x.mode != execPrivate {
		t.Fatalf("exec mode %d, want the private master", h.x.mode)
	}
	if strings.HasPrefix(h.x.dir, loose+"/") {
		t.Errorf("socket directory %s made in %s, a directory of mode 0777 without the sticky bit", h.x.dir, loose)
	}
}
