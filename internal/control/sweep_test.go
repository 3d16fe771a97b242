package control

import (
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// deadPID is a process id no process can have: above the kernel's limit.
func deadPID(t *testing.T) int {
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

// leftSocket leaves a socket for mnt in dir that nothing listens on, with a
// sidecar naming pid, as a daemon killed with SIGKILL does.
func leftSocket(t *testing.T, dir, mnt string, pid int) string {
	t.Helper()
	path := filepath.Join(dir, socketName(mnt))
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	ln.SetUnlinkOnClose(false)
	ln.Close()
	if err := writeSidecar(path, sidecar{Mountpoint: mnt, PID: pid}); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestListenSweepsStale: a daemon starting removes the sockets and
// sidecars that daemons which are gone left behind, for any mountpoint,
// and nothing else: not a socket whose process runs, not one that answers,
// not one without a sidecar, not a link or a file.
func TestListenSweepsStale(t *testing.T) {
	dir := runtime(t)
	if err := makePrivateDir(dir); err != nil {
		t.Fatal(err)
	}
	dead := deadPID(t)
	stale := leftSocket(t, dir, "/mnt/crashed", dead)
	orphan := filepath.Join(dir, "0123.json")
	if err := os.WriteFile(orphan, []byte(`{"pid":1}`), 0o600); err != nil {
		t.Fatal(err)
	}

	running := leftSocket(t, dir, "/mnt/running", os.Getpid())
	bare := leftSocket(t, dir, "/mnt/bare", dead)
	os.Remove(sidecarPath(bare))
	answering := filepath.Join(dir, socketName("/mnt/answering"))
	ln, err := net.Listen("unix", answering)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	if err := writeSidecar(answering, sidecar{Mountpoint: "/mnt/answering", PID: dead}); err != nil {
		t.Fatal(err)
	}
	target := filepath.Join(t.TempDir(), "target.sock")
	tl, err := net.ListenUnix("unix", &net.UnixAddr{Name: target, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	tl.SetUnlinkOnClose(false)
	tl.Close()
	link := filepath.Join(dir, "link.sock")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	if err := writeSidecar(link, sidecar{PID: dead}); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "file.sock")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := writeSidecar(file, sidecar{PID: dead}); err != nil {
		t.Fatal(err)
	}

	listen(t, dir, "/mnt/new")
	gone(t, stale, sidecarPath(stale), orphan)
	for _, kept := range []string{running, sidecarPath(running), bare, answering, sidecarPath(answering),
		link, sidecarPath(link), target, file, sidecarPath(file)} {
		if _, err := os.Lstat(kept); err != nil {
			t.Errorf("%s: %v; want it kept", kept, err)
		}
	}
}

// TestRuntimeDirInOthersDirRefused: a status directory inside one that
// another user owns (XDG_RUNTIME_DIR kept across su or sudo) is theirs to
// swap after it is checked, which would point the sweep's removals, and
// the socket, at a directory of their choosing. Neither the daemon nor the
// client uses it, and the daemon makes nothing there.
func TestRuntimeDirInOthersDirRefused(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("giving a directory to another user needs root")
	}
	theirs := filepath.Join(t.TempDir(), "theirs")
	if err := os.Mkdir(theirs, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(theirs, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(theirs, "sshfsm")
	if s, err := Listen(Options{Dir: dir, Mountpoint: "/mnt/x", Provider: func() Status { return Status{} }}); err == nil {
		s.Close()
		t.Errorf("Listen in %s, a directory of uid 65534: accepted", dir)
	} else if !strings.Contains(err.Error(), "is owned by uid 65534, neither you") {
		t.Errorf("Listen in %s: %v; want a refusal naming the owner", dir, err)
	}
	gone(t, dir)

	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if _, err := (Client{Dir: dir}).List(); err == nil || !strings.Contains(err.Error(), "is owned by uid 65534, neither you") {
		t.Errorf("List in %s: %v; want a refusal naming the owner", dir, err)
	}
}
