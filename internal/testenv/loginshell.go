package testenv

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// A host with Options.LoginShell gives the login user another shell
// without touching the machine: sshd starts in a mount namespace of its
// own (Go makes its mounts private), where a copy of /etc/passwd is bound
// over the real one. The namespace ends with sshd and its sessions.

// preparePasswd writes the copy of /etc/passwd in which the login user's
// shell is shell and its home Root/home (a shell may write its state
// there, not in the real home).
func (h *Host) preparePasswd(shell string) error {
	if os.Geteuid() != 0 {
		return fmt.Errorf("testenv: a login shell of its own needs root (a mount namespace)")
	}
	path, err := exec.LookPath(shell)
	if err != nil {
		return fmt.Errorf("testenv: login shell: %w", err)
	}
	if path, err = filepath.Abs(path); err != nil {
		return err
	}
	home := filepath.Join(h.Root, "home")
	if err := os.MkdirAll(home, 0o755); err != nil {
		return fmt.Errorf("testenv: %w", err)
	}
	b, err := os.ReadFile("/etc/passwd")
	if err != nil {
		return fmt.Errorf("testenv: %w", err)
	}
	lines, found := strings.Split(string(b), "\n"), false
	for i, line := range lines {
		f := strings.Split(line, ":")
		if len(f) == 7 && f[0] == h.User {
			f[5], f[6] = home, path
			lines[i], found = strings.Join(f, ":"), true
		}
	}
	if !found {
		return fmt.Errorf("testenv: %s is not in /etc/passwd", h.User)
	}
	h.passwd = filepath.Join(h.Root, "passwd")
	if err := os.WriteFile(h.passwd, []byte(strings.Join(lines, "\n")), 0o644); err != nil {
		return fmt.Errorf("testenv: %w", err)
	}
	return nil
}

// Home is the login user's home directory on the host: Root/home with a
// LoginShell, the user's own otherwise.
func (h *Host) Home() string {
	if h.passwd != "" {
		return filepath.Join(h.Root, "home")
	}
	home, _ := os.UserHomeDir()
	return home
}

// sshdCommand returns the command that runs sshd: through a bind mount of
// the passwd copy with a LoginShell (launch puts it in a new namespace).
func (h *Host) sshdCommand() *exec.Cmd {
	sshd := []string{SSHD, "-D", "-e", "-f", h.sshdConfig}
	if h.passwd == "" {
		return exec.Command(sshd[0], sshd[1:]...)
	}
	// sh becomes sshd (exec): the host's pid stays sshd's.
	return exec.Command("/bin/sh", append([]string{"-c",
		`mount --bind "$0" /etc/passwd && exec "$@"`, h.passwd}, sshd...)...)
}
