package main

import (
	"bytes"
	"context"
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"sshfsm/internal/config"
	"sshfsm/internal/testenv"
)

func TestMain(m *testing.M) { testenv.Main(m) }

var bin struct {
	once sync.Once
	path string
	err  error
}

// binary builds sshfsm once per test run.
func binary(t *testing.T) string {
	t.Helper()
	bin.once.Do(func() {
		dir, err := os.MkdirTemp("", "sshfsm-cli-bin-")
		if err != nil {
			bin.err = err
			return
		}
		bin.path = filepath.Join(dir, "sshfsm")
		out, err := testenv.GoCommand("build", "-o", bin.path, ".").CombinedOutput()
		if err != nil {
			bin.err = errors.New(string(out))
		}
	})
	if bin.err != nil {
		t.Fatalf("go build: %v", bin.err)
	}
	return bin.path
}

type result struct {
	code           int
	stdout, stderr string
	took           time.Duration
}

// sshfsm runs the binary with args and returns once it exits; limit bounds
// how long that may take.
func sshfsm(t *testing.T, limit time.Duration, args ...string) result {
	t.Helper()
	return sshfsmIn(t, limit, "", args...)
}

// sshfsmIn runs sshfsm as sshfsm does, with stdin as its standard input.
func sshfsmIn(t *testing.T, limit time.Duration, stdin string, args ...string) result {
	t.Helper()
	bin := binary(t) // the build does not count against limit
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	if stdin != "" {
		cmd.Stdin = strings.NewReader(stdin)
	}
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	start := time.Now()
	err := cmd.Run()
	r := result{stdout: out.String(), stderr: errb.String(), took: time.Since(start)}
	var ee *exec.ExitError
	switch {
	case ctx.Err() != nil:
		t.Fatalf("sshfsm %q did not exit within %v", args, limit)
	case errors.As(err, &ee):
		r.code = ee.ExitCode()
	case err != nil:
		t.Fatal(err)
	}
	return r
}

// expectFailure checks the exit code and that stderr ends with exactly one
// "sshfsm: " line containing want.
func expectFailure(t *testing.T, r result, code config.ExitCode, want string) {
	t.Helper()
	if r.code != int(code) {
		t.Errorf("exit code %d, want %d; stderr %q", r.code, code, r.stderr)
	}
	lines := strings.Split(strings.TrimRight(r.stderr, "\n"), "\n")
	last := lines[len(lines)-1]
	if !strings.HasPrefix(last, "sshfsm: ") || !strings.Contains(last, want) {
		t.Errorf("last stderr line %q, want \"sshfsm: ...%s...\"", last, want)
	}
	if n := strings.Count(r.stderr, "sshfsm: "); n != 1 {
		t.Errorf("%d sshfsm lines on stderr, want 1: %q", n, r.stderr)
	}
}

func TestUsageErrors(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		args []string
		code config.ExitCode
		want string
	}{
		{nil, config.ExitUsage, "missing [user@]host:[dir] and mountpoint arguments"},
		{[]string{"h:"}, config.ExitUsage, "missing mountpoint argument"},
		{[]string{"-o", "nosuchoption", "h:", dir}, config.ExitUsage, `unknown option "nosuchoption"`},
		{[]string{"-q", "h:", dir}, config.ExitUsage, "unknown option -q"},
		{[]string{"-o", "max_conns=many", "h:", dir}, config.ExitUsage, `bad value "many" for option max_conns`},
		{[]string{"host", dir}, config.ExitUsage, `bad remote directory "host": expected [user@]host:[dir] (for the remote home directory: host:)`},
		{[]string{dir, "h:"}, config.ExitUsage, "arguments in the wrong order"},
		{[]string{"[::1:x", dir}, config.ExitUsage, "missing ']'"},
		{[]string{"--config", file, dir}, config.ExitUsage, file + ": no [[branch]] table"},
		{[]string{"--config", dir + "/nope.toml"}, config.ExitUsage, "config file " + dir + "/nope.toml does not exist"},
		{[]string{"h:", filepath.Join(dir, "missing")}, config.ExitMountpoint,
			"does not exist; create it first (mkdir " + filepath.Join(dir, "missing") + ")"},
		{[]string{"h:", file}, config.ExitMountpoint, "is not a directory; give an existing directory"},
		{[]string{"h:", "/proc"}, config.ExitMountpoint,
			"is already a mountpoint (proc); unmount it first (umount /proc) or give another directory"},
		{[]string{"-f", "h:", "/proc"}, config.ExitMountpoint, "is already a mountpoint"},
	}
	for _, tc := range cases {
		r := sshfsm(t, 10*time.Second, tc.args...)
		expectFailure(t, r, tc.code, tc.want)
	}
	// The id map files are read after the FUSE device is checked.
	testenv.RequireFUSEDevice(t)
	r := sshfsm(t, 10*time.Second, "-o", "idmap=file,uidfile="+file+"x", "h:", dir)
	expectFailure(t, r, config.ExitUsage, "idmap:")
}

func TestInformational(t *testing.T) {
	r := sshfsm(t, 10*time.Second, "--man")
	if r.code != 0 || r.stdout != config.ManPage() {
		t.Errorf("--man: exit %d, output differs from config.ManPage()", r.code)
	}
	r = sshfsm(t, 10*time.Second, "-h")
	if r.code != 0 || r.stdout != config.Help() || r.stderr != "" {
		t.Errorf("-h: exit %d, stderr %q", r.code, r.stderr)
	}
	r = sshfsm(t, 10*time.Second, "--version")
	if r.code != 0 || !strings.HasPrefix(r.stdout, "sshfsm version ") {
		t.Errorf("--version: exit %d, output %q", r.code, r.stdout)
	}
	version := r.stdout
	r = sshfsm(t, 10*time.Second, "help")
	if r.code != 0 || r.stdout != config.Help() || r.stderr != "" {
		t.Errorf("help: exit %d, stderr %q", r.code, r.stderr)
	}
	r = sshfsm(t, 10*time.Second, "version")
	if r.code != 0 || r.stdout != version {
		t.Errorf("version: exit %d, output %q, want %q", r.code, r.stdout, version)
	}
	// With more arguments, help is a host name like any other.
	r = sshfsm(t, 10*time.Second, "help", "mnt")
	if r.code == 0 || r.stdout == config.Help() {
		t.Errorf("help mnt: exit %d; want the error of a bad remote directory", r.code)
	}
}

// freePort returns a TCP port on 127.0.0.1 that nothing listens on.
func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

func TestConnectionRefused(t *testing.T) {
	testenv.RequireFUSEDevice(t)
	port := freePort(t)
	for _, fg := range []string{"-o", "-f"} {
		args := []string{"-p", strconv.Itoa(port), "-o", "BatchMode=yes", "127.0.0.1:", t.TempDir()}
		if fg == "-f" {
			args = append(args, "-f")
		}
		r := sshfsm(t, 10*time.Second, args...)
		expectFailure(t, r, config.ExitConnect, "cannot connect to 127.0.0.1: ")
		if !strings.Contains(strings.ToLower(r.stderr), "connection refused") || r.took > 5*time.Second {
			t.Errorf("took %v, stderr %q", r.took, r.stderr)
		}
		// One line: ssh's own, which ours repeats, is not printed as well.
		if n := strings.Count(strings.TrimSpace(r.stderr), "\n") + 1; n != 1 {
			t.Errorf("%s: %d lines on stderr, want 1: %q", fg, n, r.stderr)
		}
	}
}

// TestUnreachable: a peer that accepts TCP but never speaks SSH, as a host
// behind a dead link does; the mount gives up within its timeout. Only
// loopback is used: tests never send traffic elsewhere.
func TestUnreachable(t *testing.T) {
	testenv.RequireFUSEDevice(t)
	port := silentPeer(t)
	r := sshfsm(t, 20*time.Second, "-p", port, "-o", "timeout=2,BatchMode=yes", "127.0.0.1:", t.TempDir())
	expectFailure(t, r, config.ExitConnect, "cannot connect to 127.0.0.1")
	if r.took > 8*time.Second {
		t.Errorf("took %v", r.took)
	}
}

// silentPeer listens on loopback, accepts TCP connections and never
// answers on them; it returns the port.
func silentPeer(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var held []net.Conn
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			held = append(held, c)
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range held {
			c.Close()
		}
	})
	return strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
}

func TestCheckFUSE(t *testing.T) {
	err := checkFUSE(filepath.Join(t.TempDir(), "no-fuse"))
	var ce *config.Error
	if !errors.As(err, &ce) || ce.Code != config.ExitMount || !strings.Contains(err.Error(), "modprobe fuse") {
		t.Errorf("missing device: %v, want exit %d and a hint", err, config.ExitMount)
	}
	testenv.RequireFUSEDevice(t)
	if err := checkFUSE(fuseDevice); err != nil {
		t.Fatalf("%s: %v (the machine's FUSE device should be usable for these tests)", fuseDevice, err)
	}
}

func TestCheckAllowOther(t *testing.T) {
	dir := t.TempDir()
	conf := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	off := conf("off", "# mount_max = 1000\n#user_allow_other\n")
	on := conf("on", "mount_max = 1000\n  user_allow_other  \n")
	missing := filepath.Join(dir, "missing")
	other := &config.Config{}
	other.FUSE.AllowOther = true
	root := &config.Config{}
	root.FUSE.AllowRoot = true
	for _, c := range []struct {
		name string
		cfg  *config.Config
		euid int
		conf string
		want string // "" = allowed
	}{
		{"no option", &config.Config{}, 1000, off, ""},
		{"root user", other, 0, off, ""},
		{"permitted", other, 1000, on, ""},
		{"commented out", other, 1000, off, "allow_other needs user_allow_other"},
		{"no fuse.conf", other, 1000, missing, "allow_other needs user_allow_other"},
		{"allow_root", root, 1000, off, "allow_root needs user_allow_other"},
	} {
		err := checkAllowOther(c.cfg, c.euid, c.conf)
		if c.want == "" {
			if err != nil {
				t.Errorf("%s: %v", c.name, err)
			}
			continue
		}
		var ce *config.Error
		if !errors.As(err, &ce) || ce.Code != config.ExitMount || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: %v; want one line with %q, exit %d", c.name, err, c.want, config.ExitMount)
		}
	}
}
