package testenv

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// A host with a LoginShell runs commands with that shell, SFTP still
// works, and the machine's /etc/passwd stays as it was.
func TestLoginShell(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("a login shell of its own needs root")
	}
	if _, err := exec.LookPath("fish"); err != nil {
		t.Skip("fish is not installed (scripts/test.sh installs it)")
	}
	before, err := os.ReadFile("/etc/passwd")
	if err != nil {
		t.Fatal(err)
	}
	h := StartHostWith(t, Options{Addr: "127.0.0.2", LoginShell: "fish"})
	// fish knows $version; sh does not, and has no "; and".
	out, err := sshCmd(t, "", "ssh", append(h.SSHArgs(), h.Alias, "set -q version; and echo fish $HOME")...)
	if err != nil || strings.TrimSpace(out) != "fish "+h.Home() {
		t.Fatalf("remote command: %v: %q, want fish %s", err, out, h.Home())
	}
	if err := os.WriteFile(filepath.Join(h.Dir, "f"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err = sshCmd(t, "ls "+h.Dir+"\n", "sftp", "-F", h.SSHConfig, "-b", "-", h.Alias)
	if err != nil || !strings.Contains(out, "/f") {
		t.Fatalf("sftp ls %s: %v: %s", h.Dir, err, out)
	}
	if after, _ := os.ReadFile("/etc/passwd"); string(after) != string(before) {
		t.Fatal("the machine's /etc/passwd changed")
	}
}
