package transport

import (
	"bytes"
	"context"
	"errors"
	"io"
	"io/fs"
	"math/rand"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"sshfsm/internal/testenv"
)

// sshOptions returns Options reaching a real sshd through its client config.
func sshOptions(h *testenv.Host) Options {
	return Options{Host: h.Alias, SSHArgs: h.SSHArgs(), Dir: h.Dir, Conns: 2,
		Timeout: 5 * time.Second, Reconnect: true}
}

// altConfig writes a copy of the host's client config with lines replaced.
func altConfig(t *testing.T, h *testenv.Host, repl ...string) string {
	t.Helper()
	block := h.ConfigBlock()
	for i := 0; i+1 < len(repl); i += 2 {
		block = strings.ReplaceAll(block, repl[i], repl[i+1])
	}
	p := filepath.Join(t.TempDir(), "ssh_config")
	if err := os.WriteFile(p, []byte(block), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func freePort(t *testing.T) int {
	l, err := net.Listen("tcp", "127.0.0.2:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

func TestSSHDialErrors(t *testing.T) {
	h := testenv.StartHost(t, "127.0.0.2")
	os.WriteFile(filepath.Join(h.Dir, "file"), nil, 0o644)
	key := filepath.Join(t.TempDir(), "otherkey")
	if out, err := exec.Command("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", key).CombinedOutput(); err != nil {
		t.Fatal(err, string(out))
	}
	emptyKnown := filepath.Join(t.TempDir(), "known_hosts")
	os.WriteFile(emptyKnown, nil, 0o600)
	cases := []struct {
		name   string
		mod    func(o *Options)
		kind   error
		detail string
	}{
		{"refused", func(o *Options) { o.Port = freePort(t) }, ErrUnreachable, "refused"},
		{"bad key", func(o *Options) {
			o.SSHArgs = []string{"-F", altConfig(t, h, h.IdentityFile, key)}
		}, ErrAuth, "Permission denied"},
		{"unknown host key", func(o *Options) {
			o.SSHArgs = []string{"-F", altConfig(t, h, h.KnownHosts, emptyKnown)}
		}, ErrAuth, "host key verification failed"},
		{"missing dir", func(o *Options) { o.Dir = h.Dir + "/nope" }, ErrNoDir, "nope"},
		{"file, not dir", func(o *Options) { o.Dir = h.Dir + "/file" }, ErrNotDir, "file"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			o := sshOptions(h)
			c.mod(&o)
			start := time.Now()
			host, err := Dial(context.Background(), o)
			if err == nil {
				host.Close()
				t.Fatal("dial succeeded")
			}
			if !errors.Is(err, c.kind) || !strings.Contains(err.Error(), c.detail) {
				t.Fatalf("got %q, want kind %v with %q", err, c.kind, c.detail)
			}
			if time.Since(start) > 5*time.Second {
				t.Fatalf("dial took %v", time.Since(start))
			}
		})
	}
}

func TestSSHReadWrite(t *testing.T) {
	th := testenv.StartHost(t, "127.0.0.2")
	h, err := Dial(context.Background(), sshOptions(th))
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	waitUp(t, h, 2)
	r := h.Remote()
	want := make([]byte, 3<<20+17)
	rand.New(rand.NewSource(2)).Read(want)
	f, err := r.Open(bg, "big", os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	for off := 0; off < len(want); off += 1 << 20 {
		if _, err := f.WriteAt(bg, want[off:min(off+1<<20, len(want))], int64(off)); err != nil {
			t.Fatal(err)
		}
	}
	if err := f.Sync(bg); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(bg); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(filepath.Join(th.Dir, "big")); !bytes.Equal(got, want) {
		t.Fatal("remote content differs")
	}
	rf, err := r.Open(bg, "big", os.O_RDONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer rf.Close(bg)
	<-rf.(*file).learned
	got := make([]byte, len(want))
	n, err := rf.ReadAt(bg, got, 0)
	if n != len(want) || (err != nil && err != io.EOF) || !bytes.Equal(got, want) {
		t.Fatalf("read back %d %v", n, err)
	}
	if mp := rf.(*file).primary.maxPacket; mp != maxPacketLimits {
		t.Errorf("packet size %d: limits@openssh.com not used", mp)
	}
	if rf.(*file).primary.wire.relay == nil {
		t.Error("ssh's input has no relay pipe: write data is copied into it")
	}
	if uid, _, ok := h.RemoteUser(); !ok || uid != uint32(os.Getuid()) {
		t.Errorf("remote user %d %v", uid, ok)
	}
	// Errors OpenSSH reports as generic failures.
	os.MkdirAll(filepath.Join(th.Dir, "full/sub"), 0o755)
	if err := r.Rmdir(bg, "full"); !errors.Is(err, syscall.ENOTEMPTY) {
		t.Errorf("rmdir non-empty: %v", err)
	}
	if err := r.Rmdir(bg, "big"); !errors.Is(err, syscall.ENOTDIR) {
		t.Errorf("rmdir file: %v", err)
	}
	if err := r.Mkdir(bg, "big", 0o755); !errors.Is(err, os.ErrExist) {
		t.Errorf("mkdir existing: %v", err)
	}
	os.WriteFile(filepath.Join(th.Dir, "other"), []byte("o"), 0o644)
	if err := r.Rename(bg, "other", "big", true); !errors.Is(err, os.ErrExist) {
		t.Errorf("rename noreplace: %v", err)
	}
}

func TestSSHTimeoutOnFrozenHost(t *testing.T) {
	th := testenv.StartHost(t, "127.0.0.2")
	o := sshOptions(th)
	o.Conns, o.Timeout = 1, time.Second
	h, err := Dial(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	th.Freeze()
	_, err = h.Remote().Stat(bg, "")
	th.Thaw()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("stat of a frozen host: got %v, want the timeout", err)
	}
	// Each attempt is bounded by the one-second timeout, which a loaded
	// machine can exceed while ssh reconnects: the host must come back,
	// not necessarily at the first attempt.
	testenv.EventuallyNoError(t, "answering after thaw and reconnect", func() error {
		_, err := h.Remote().Stat(bg, "")
		return err
	})
}

func TestSSHArgvDefaults(t *testing.T) {
	o := Options{Host: "127.0.0.2", SSHArgs: []string{"-F", "/dev/null"}, Timeout: 3 * time.Second}
	extra := sshDefaults(context.Background(), &o, gcmCiphers)
	joined := strings.Join(extra, " ")
	if !strings.Contains(joined, "-oServerAliveInterval=15") || !strings.Contains(joined, "-oCiphers=aes128-gcm@openssh.com,aes256-gcm@openssh.com,") {
		t.Errorf("defaults %q", joined)
	}
	if !strings.Contains(joined, "-oConnectTimeout=3") {
		t.Errorf("no ConnectTimeout: %q", joined)
	}
	o.SSHArgs = append(o.SSHArgs, "-o", "ServerAliveInterval 5", "-oCiphers=aes256-ctr", "-oConnectTimeout=9")
	if extra := strings.Join(sshDefaults(context.Background(), &o, gcmCiphers), " "); strings.Contains(extra, "ServerAlive") || strings.Contains(extra, "Ciphers") || strings.Contains(extra, "Connect") {
		t.Errorf("user options overridden: %q", extra)
	}
	argv := sshArgv(&o, extra, true)
	if argv[0] != "ssh" || !contains(argv, "-oBatchMode=yes") || argv[len(argv)-3] != "-s" || argv[len(argv)-1] != "sftp" {
		t.Errorf("argv %q", argv)
	}
}

// The pipes to ssh are grown, and stay non-blocking for the poller.
func TestGrowPipe(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	growPipe(w)
	rc, _ := w.SyscallConn()
	var size, flags int
	rc.Control(func(fd uintptr) {
		size, _ = unix.FcntlInt(fd, unix.F_GETPIPE_SZ, 0)
		flags, _ = unix.FcntlInt(fd, unix.F_GETFL, 0)
	})
	if size < 256<<10 {
		t.Errorf("pipe size %d after growPipe", size)
	}
	if flags&unix.O_NONBLOCK == 0 {
		t.Error("growPipe made the pipe blocking")
	}
}

// TestNoCheckRoot: with NoCheckRoot, Dial and RemoteAt accept a remote
// directory that does not exist, absolute or below the home, and a file;
// requests below a missing one fail with ENOENT until it exists.
func TestNoCheckRoot(t *testing.T) {
	th := testenv.StartHost(t, "127.0.0.2")
	if err := os.WriteFile(filepath.Join(th.Dir, "file"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	home, err := os.UserHomeDir()
	if err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(th.Dir, "later", "deeper")
	for _, c := range []struct{ dir, root string }{
		{missing, missing},
		{"sshfsm-test-missing/x", filepath.Join(home, "sshfsm-test-missing/x")},
		{filepath.Join(th.Dir, "file"), filepath.Join(th.Dir, "file")},
	} {
		o := sshOptions(th)
		o.Dir, o.NoCheckRoot = c.dir, true
		h, err := Dial(context.Background(), o)
		if err != nil {
			t.Fatalf("Dial(%s) with NoCheckRoot: %v", c.dir, err)
		}
		if h.Root() != c.root {
			t.Errorf("Dial(%s): root %s, want %s", c.dir, h.Root(), c.root)
		}
		if r, err := h.RemoteAt(bg, c.dir); err != nil || RootOf(r) != c.root {
			t.Errorf("RemoteAt(%s) with NoCheckRoot: root %q, %v; want %s", c.dir, RootOf(r), err, c.root)
		}
		h.Close()
	}
	o := sshOptions(th)
	o.Dir, o.NoCheckRoot = missing, true
	h, err := Dial(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	if _, err := h.Remote().Lstat(bg, "f"); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("lstat below a missing root: %v, want ENOENT", err)
	}
	if err := os.MkdirAll(missing, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(missing, "f"), []byte("hello"), 0o644); err != nil {
		t.Fatal(err)
	}
	if a, err := h.Remote().Lstat(bg, "f"); err != nil || a.Size != 5 {
		t.Fatalf("lstat once the root exists: %+v, %v", a, err)
	}
}
