package control

import (
	"bufio"
	"encoding/json"
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// runtime returns a fresh runtime directory path (not created).
func runtime(t *testing.T) string {
	t.Helper()
	return filepath.Join(t.TempDir(), "rt")
}

func provider(calls *atomic.Int64) func() Status {
	return func() Status {
		calls.Add(1)
		return Status{
			Mount: Mount{Options: []string{"max_conns=2"}},
			Branches: []Branch{{Kind: KindSingle, Name: "h:/d", Dir: "/d", Hosts: []Host{{
				Name: "h", State: StateUp, ChannelsUp: 2, Channels: 2, Requests: map[string]uint64{"STAT": 3},
			}}}},
			Cache: Cache{Enabled: true, ListingHits: 3, ListingMisses: 1},
		}
	}
}

func listen(t *testing.T, dir, mnt string) *Server {
	t.Helper()
	var calls atomic.Int64
	s, err := Listen(Options{Dir: dir, Mountpoint: mnt, Program: "test", Provider: provider(&calls)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func mode(t *testing.T, path string) os.FileMode {
	t.Helper()
	fi, err := os.Lstat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Mode()
}

func TestQueryAndPermissions(t *testing.T) {
	dir := runtime(t)
	old := syscall.Umask(0)
	s := listen(t, dir, "/mnt/a")
	syscall.Umask(old)
	if m := mode(t, dir); m != os.ModeDir|0o700 {
		t.Errorf("runtime directory mode %v, want drwx------", m)
	}
	if m := mode(t, s.Path()); m != os.ModeSocket|0o600 {
		t.Errorf("socket mode %v, want srw-------", m)
	}
	if m := mode(t, sidecarPath(s.Path())); m != 0o600 {
		t.Errorf("sidecar mode %v, want -rw-------", m)
	}
	st, err := Client{Dir: dir}.Query("/mnt/a")
	if err != nil {
		t.Fatal(err)
	}
	if st.Mount.Mountpoint != "/mnt/a" || st.Mount.PID != os.Getpid() || st.Mount.Program != "test" ||
		st.Mount.UptimeSeconds <= 0 || st.Mount.Started.IsZero() {
		t.Errorf("mount stamped wrongly: %+v", st.Mount)
	}
	if len(st.Branches) != 1 || st.Branches[0].Hosts[0].Requests["STAT"] != 3 {
		t.Errorf("branches %+v", st.Branches)
	}
	if st.Cache.ListingRatio != 0.75 || st.Cache.AttrRatio != -1 {
		t.Errorf("ratios %v %v, want 0.75 and -1 (nothing asked)", st.Cache.ListingRatio, st.Cache.AttrRatio)
	}
	if _, err := (Client{Dir: dir}).Query("/mnt/b"); !errors.Is(err, ErrNoSocket) {
		t.Errorf("query of another mountpoint: %v, want ErrNoSocket", err)
	}
}

func TestCloseRemovesSocket(t *testing.T) {
	dir := runtime(t)
	s := listen(t, dir, "/mnt/a")
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Errorf("second close: %v", err)
	}
	for _, p := range []string{s.Path(), sidecarPath(s.Path())} {
		if _, err := os.Lstat(p); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s left after Close: %v", p, err)
		}
	}
	if _, err := (Client{Dir: dir}).Query("/mnt/a"); !errors.Is(err, ErrNoSocket) {
		t.Errorf("query after close: %v", err)
	}
}

func TestRefusesDirectoryNotPrivate(t *testing.T) {
	base := t.TempDir()
	open := filepath.Join(base, "open")
	os.Mkdir(open, 0o700)
	os.Chmod(open, 0o755)
	link := filepath.Join(base, "link")
	os.Symlink(open, link)
	file := filepath.Join(base, "file")
	os.WriteFile(file, nil, 0o600)
	cases := map[string]string{open: "not private; chmod 700", link: "is not a directory", file: "is not a directory"}
	if os.Geteuid() == 0 {
		other := filepath.Join(base, "other")
		os.Mkdir(other, 0o700)
		os.Chown(other, 65534, 65534)
		cases[other] = "is owned by uid 65534, not by you"
	}
	for dir, want := range cases {
		_, err := Listen(Options{Dir: dir, Mountpoint: "/mnt/a"})
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Listen in %s: %v, want %q", filepath.Base(dir), err, want)
		}
		if _, err := (Client{Dir: dir}).List(); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("List in %s: %v, want %q", filepath.Base(dir), err, want)
		}
	}
}

// deadSocket leaves a socket file for mnt in dir that nothing listens on,
// as a killed daemon does, with its sidecar.
func deadSocket(t *testing.T, dir, mnt string) string {
	t.Helper()
	if err := makePrivateDir(dir); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, socketName(mnt))
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	ln.SetUnlinkOnClose(false)
	ln.Close()
	if err := writeSidecar(path, sidecar{Mountpoint: mnt, PID: 999999}); err != nil {
		t.Fatal(err)
	}
	return path
}

func gone(t *testing.T, paths ...string) {
	t.Helper()
	for _, p := range paths {
		if _, err := os.Lstat(p); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s still there (%v)", p, err)
		}
	}
}

func TestStaleSockets(t *testing.T) {
	dir := runtime(t)
	c := Client{Dir: dir}

	a := deadSocket(t, dir, "/mnt/a")
	b := deadSocket(t, dir, "/mnt/b")
	orphan := filepath.Join(dir, "0123.json")
	os.WriteFile(orphan, []byte("{}"), 0o600)
	live := listen(t, dir, "/mnt/c")
	rs, err := c.List()
	if err != nil || len(rs) != 1 || rs[0].Mountpoint != "/mnt/c" || rs[0].Err != nil {
		t.Fatalf("List: %+v, %v; want only /mnt/c", rs, err)
	}
	gone(t, a, sidecarPath(a), b, sidecarPath(b), orphan)

	a = deadSocket(t, dir, "/mnt/a")
	if _, err := c.Query("/mnt/a"); !errors.Is(err, ErrNoSocket) {
		t.Errorf("query of a dead daemon: %v, want ErrNoSocket", err)
	}
	gone(t, a, sidecarPath(a))

	// A new daemon for the same mountpoint takes the place of a dead one,
	// never of a live one.
	deadSocket(t, dir, "/mnt/a")
	listen(t, dir, "/mnt/a")
	if _, err := c.Query("/mnt/a"); err != nil {
		t.Errorf("query after replacing a stale socket: %v", err)
	}
	_, err = Listen(Options{Dir: dir, Mountpoint: "/mnt/c"})
	if err == nil || !strings.Contains(err.Error(), "in use by another sshfsm (pid ") {
		t.Errorf("second daemon for a live socket: %v", err)
	}
	if _, err := c.Query("/mnt/c"); err != nil || live.Path() == "" {
		t.Errorf("the live daemon lost its socket: %v", err)
	}
}

// fakeDaemon listens on the socket of mnt in dir and runs serve on each
// connection.
func fakeDaemon(t *testing.T, dir, mnt string, serve func(net.Conn)) {
	t.Helper()
	if err := makePrivateDir(dir); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, socketName(mnt))
	ln, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	writeSidecar(path, sidecar{Mountpoint: mnt, PID: 4242})
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go serve(c)
		}
	}()
}

func TestSilentDaemon(t *testing.T) {
	dir := runtime(t)
	release := make(chan struct{})
	defer close(release)
	fakeDaemon(t, dir, "/mnt/frozen", func(c net.Conn) {
		<-release
		c.Close()
	})
	listen(t, dir, "/mnt/fine")
	c := Client{Dir: dir, Timeout: 300 * time.Millisecond}

	start := time.Now()
	_, err := c.Query("/mnt/frozen")
	var na *NotAnsweringError
	if !errors.As(err, &na) || took(start) > 2*time.Second {
		t.Fatalf("query of a silent daemon: %v after %v, want NotAnsweringError within 2s", err, took(start))
	}
	want := "the sshfsm serving /mnt/frozen (pid 4242) is not answering (no reply within 300ms)"
	if !strings.Contains(err.Error(), want) {
		t.Errorf("message %q, want it to contain %q", err, want)
	}

	start = time.Now()
	rs, err := c.List()
	if err != nil || len(rs) != 2 || took(start) > 2*time.Second {
		t.Fatalf("List: %+v, %v after %v", rs, err, took(start))
	}
	if rs[0].Mountpoint != "/mnt/fine" || rs[0].Status == nil || rs[1].Mountpoint != "/mnt/frozen" ||
		rs[1].PID != 4242 || !errors.As(rs[1].Err, &na) {
		t.Errorf("List results %+v", rs)
	}
}

func took(start time.Time) time.Duration { return time.Since(start).Round(time.Millisecond) }

func TestVersionMismatch(t *testing.T) {
	dir := runtime(t)
	fakeDaemon(t, dir, "/mnt/new", func(c net.Conn) {
		defer c.Close()
		bufio.NewReader(c).ReadBytes('\n')
		b, _ := json.Marshal(response{Version: Version + 1, Mountpoint: "/mnt/new", PID: 4242, Program: "9.0", Error: "unsupported"})
		c.Write(append(b, '\n'))
	})
	_, err := Client{Dir: dir}.Query("/mnt/new")
	var ve *VersionError
	want := "the sshfsm serving /mnt/new (pid 4242, sshfsm 9.0) speaks status protocol version 2, this sshfsm speaks 1; " +
		"run the sshfsm that mounted it, or remount"
	if !errors.As(err, &ve) || err.Error() != want {
		t.Errorf("got %v\nwant %s", err, want)
	}

	// The daemon side tells an old or new client what it speaks.
	s := listen(t, dir, "/mnt/a")
	conn, err := net.Dial("unix", s.Path())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.Write([]byte(`{"version":99,"op":"status"}` + "\n"))
	var resp response
	line, _ := bufio.NewReader(conn).ReadBytes('\n')
	if err := json.Unmarshal(line, &resp); err != nil || resp.Version != Version || resp.Status != nil ||
		resp.Error != "status protocol version 99 is not spoken here (this daemon speaks 1)" {
		t.Errorf("answer to version 99: %s (%v)", line, err)
	}
}

func TestBadRequests(t *testing.T) {
	s := listen(t, runtime(t), "/mnt/a")
	for req, want := range map[string]string{
		"garbage\n":                          "malformed request",
		`{"version":1,"op":"reboot"}` + "\n": `unknown request "reboot"`,
	} {
		conn, err := net.Dial("unix", s.Path())
		if err != nil {
			t.Fatal(err)
		}
		conn.Write([]byte(req))
		var resp response
		line, _ := bufio.NewReader(conn).ReadBytes('\n')
		conn.Close()
		if json.Unmarshal(line, &resp); resp.Error != want {
			t.Errorf("%q: answer %s, want error %q", req, line, want)
		}
	}
}

func TestProviderPanicKeepsDaemon(t *testing.T) {
	dir := runtime(t)
	s, err := Listen(Options{Dir: dir, Mountpoint: "/mnt/a", Provider: func() Status { panic("boom") }})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	_, err = Client{Dir: dir}.Query("/mnt/a")
	if err == nil || !strings.Contains(err.Error(), "internal error while collecting the status") {
		t.Errorf("query: %v", err)
	}
}

// TestOtherUserRefused connects as another user to a socket whose
// directory was opened up on purpose: the daemon still refuses to answer.
func TestOtherUserRefused(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("connecting as another user needs root")
	}
	// The system's python, which any user may run.
	const py = "/usr/bin/python3"
	if _, err := os.Stat(py); err != nil {
		t.Skip(py + " is needed to connect as another user")
	}
	base := t.TempDir()
	// nobody must be able to reach the socket: every directory on the way
	// gets search permission for others until the test ends.
	for p := base; p != "/"; p = filepath.Dir(p) {
		fi, err := os.Stat(p)
		if err != nil || fi.Mode().Perm()&0o001 != 0 {
			continue
		}
		mode := fi.Mode().Perm()
		os.Chmod(p, mode|0o011)
		t.Cleanup(func() { os.Chmod(p, mode) })
	}
	dir := filepath.Join(base, "rt")
	s := listen(t, dir, "/mnt/a")
	os.Chmod(dir, 0o711)
	os.Chmod(s.Path(), 0o666)
	script := `import socket,sys
s=socket.socket(socket.AF_UNIX); s.settimeout(5); s.connect(sys.argv[1])
try:
    s.sendall(b'{"version":1,"op":"status"}\n')
    sys.stdout.write(repr(s.recv(100)))
except (ConnectionResetError, BrokenPipeError): sys.stdout.write("reset")`
	cmd := exec.Command(py, "-c", script, s.Path())
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("python as nobody: %v: %s", err, out)
	}
	if string(out) != "b''" && string(out) != "reset" {
		t.Errorf("another user got an answer: %s", out)
	}
}
