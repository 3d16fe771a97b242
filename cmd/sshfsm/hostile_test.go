package main

import (
	"crypto/sha256"
	"encoding/hex"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"sshfsm/internal/control"
	"sshfsm/internal/testenv"
)

// hostileName would run "touch PWNED" on the server if a login shell
// parsed a command holding it: in fish, \' inside single quotes is a quote.
const hostileName = `x\'; touch PWNED #`

// fishHost starts a host whose login user's shell is fish.
func fishHost(t *testing.T) *testenv.Host {
	t.Helper()
	testenv.RequireFUSE(t)
	why := ""
	if os.Geteuid() != 0 {
		why = "a login shell of its own needs root"
	} else if _, err := exec.LookPath("fish"); err != nil {
		why = "fish is not installed (scripts/test.sh installs it)"
	}
	switch {
	case why != "" && testenv.InCI():
		t.Fatal(why)
	case why != "":
		t.Skip(why)
	}
	return testenv.StartHostWith(t, testenv.Options{Addr: "127.0.0.2", LoginShell: "fish"})
}

// With fish as the login shell, the remote commands a mount runs (the
// digest of a file, the listing of a tree, the watcher) work on a tree
// whose every name is hostile, and none of the names runs as a command.
func TestRemoteCommandsUnderFish(t *testing.T) {
	privateRuntime(t)
	h := fishHost(t)
	root := filepath.Join(h.Dir, hostileName)
	for _, d := range []string{root, filepath.Join(root, hostileName, hostileName)} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	data := []byte("content of a file with a hostile name\n")
	if err := os.WriteFile(filepath.Join(root, hostileName, "f"+hostileName), data, 0o644); err != nil {
		t.Fatal(err)
	}
	mnt := mountAt(t, mountpoint(t), h.Alias+":"+root, "-F", h.SSHConfig, "-o", "xattr,watch=yes")

	file := filepath.Join(mnt, hostileName, "f"+hostileName)
	if _, err := os.Stat(file); err != nil {
		t.Fatal(err)
	}
	reads := onlyHost(t, statusJSON(t, mnt)).Requests["READ"]
	buf := make([]byte, 64)
	n, err := unix.Getxattr(file, "user.sshfsm.sha256", buf)
	sum := sha256.Sum256(data)
	if err != nil || string(buf[:n]) != hex.EncodeToString(sum[:]) {
		t.Fatalf("user.sshfsm.sha256 = %q, %v; want %x", buf[:n], err, sum)
	}
	if host := onlyHost(t, statusJSON(t, mnt)); host.Requests["exec"] == 0 || host.Requests["READ"] != reads {
		t.Errorf("the digest was not computed on the server: requests %v, READ before %d", host.Requests, reads)
	}
	if b, err := os.ReadFile(file); err != nil || string(b) != string(data) {
		t.Fatalf("read %q, %v", b, err)
	}
	if err := filepath.WalkDir(mnt, func(string, fs.DirEntry, error) error { return nil }); err != nil {
		t.Fatal(err)
	}
	noneRan(t, h.Root)
	testenv.Eventually(t, "the watcher runs on the server", func() bool {
		return onlyHost(t, statusJSON(t, mnt)).Watch == control.WatchActive
	})
	noneRan(t, h.Root)
}

// noneRan fails the test if a command hidden in hostileName ran below
// root, where the host's home and served directory are.
func noneRan(t *testing.T, root string) {
	t.Helper()
	filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.Name() == "PWNED" {
			t.Errorf("a command hidden in a file name ran on the server: %s exists", p)
		}
		return nil
	})
}

// sshfsm status shows the names a server gave (here the directory it
// resolved for the branch) with the bytes that would act on a terminal
// escaped.
func TestStatusEscapesServerNames(t *testing.T) {
	privateRuntime(t)
	h, ssh := sshHost(t)
	name := "d\x1b]0;owned\x07\x1b[2J\xff"
	if err := os.Mkdir(filepath.Join(h.Dir, name), 0o755); err != nil {
		t.Fatal(err)
	}
	mnt := mountAt(t, mountpoint(t), h.Alias+":"+filepath.Join(h.Dir, name), ssh...)
	r := sshfsm(t, 10*time.Second, "status", mnt)
	if r.code != 0 {
		t.Fatalf("status: exit %d, stderr %q", r.code, r.stderr)
	}
	terminalSafe(t, r.stdout)
	// The status travels as JSON, which makes the byte \xff a U+FFFD.
	if !strings.Contains(r.stdout, filepath.Join(h.Dir, `d\x1b]0;owned\a\x1b[2J`)) {
		t.Errorf("status does not show the directory escaped:\n%s", r.stdout)
	}

	// A mount that fails says why, escaped too.
	missing := h.Alias + ":" + filepath.Join(h.Dir, name, "missing")
	r = sshfsm(t, 30*time.Second, append(append([]string(nil), ssh...), missing, mountpoint(t))...)
	if r.code == 0 || !strings.Contains(r.stderr, `\x1b[2J`) {
		t.Fatalf("mount of a missing directory: exit %d, stderr %q", r.code, r.stderr)
	}
	terminalSafe(t, r.stderr)
}

// What a server writes on the standard error of the SFTP session while
// the mount connects (ssh passes it on as it is) reaches the terminal
// with the bytes that would act on it escaped.
func TestMountEscapesServerStderr(t *testing.T) {
	privateRuntime(t)
	h, ssh := sshHost(t)
	server := ""
	for _, p := range []string{"/usr/lib/openssh/sftp-server", "/usr/libexec/openssh/sftp-server",
		"/usr/libexec/sftp-server", "/usr/lib/ssh/sftp-server"} {
		if _, err := os.Stat(p); err == nil {
			server = p
			break
		}
	}
	if server == "" {
		t.Skip("no sftp-server")
	}
	script := filepath.Join(h.Root, "noisy-sftp-server")
	noisy := "#!/bin/sh\nprintf 'hello \\033]0;owned\\007\\033[2J\\n' >&2\nexec " + server + "\n"
	if err := os.WriteFile(script, []byte(noisy), 0o755); err != nil {
		t.Fatal(err)
	}
	mnt := mountpoint(t)
	r := sshfsm(t, 30*time.Second, append(append([]string(nil), ssh...),
		"-o", "sftp_server="+script, h.Alias+":"+h.Dir, mnt)...)
	if r.code != 0 {
		t.Fatalf("mount: exit %d, stderr %q", r.code, r.stderr)
	}
	if !strings.Contains(r.stderr, `hello \x1b]0;owned\a\x1b[2J`) {
		t.Errorf("the server's line is not shown escaped: %q", r.stderr)
	}
	terminalSafe(t, r.stderr)
}
