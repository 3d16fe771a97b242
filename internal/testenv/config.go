package testenv

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
)

// writeSSHDConfig writes the server configuration for the current port.
func (h *Host) writeSSHDConfig(sftpServer string) error {
	p := func(name string) string { return quote(filepath.Join(h.Root, name)) }
	lines := []string{
		"ListenAddress " + h.portString(),
		"HostKey " + p("ssh_host_ed25519_key"),
		"AuthorizedKeysFile " + p("authorized_keys"),
		"PidFile " + quote(h.pidFile),
		"StrictModes no",
		"UsePAM no",
		"PermitRootLogin prohibit-password",
		"PubkeyAuthentication yes",
		"PasswordAuthentication no",
		"KbdInteractiveAuthentication no",
		"HostbasedAuthentication no",
		"GSSAPIAuthentication no",
		"UseDNS no",
		"PrintMotd no",
		"PrintLastLog no",
		"X11Forwarding no",
		"AllowAgentForwarding no",
		"PermitUserEnvironment no",
		"ClientAliveInterval 0",
		"LoginGraceTime 30",
		// Tests open many connections at once and on purpose kill them.
		"MaxStartups 200",
		"MaxSessions 100",
		"Subsystem sftp " + sftpServer,
		// Sessions run commands, and sftp-server, through the login shell;
		// bash reads ~/.bashrc for ssh commands only at shell level 1, and
		// the login user's rc files must not slow down or break the hosts.
		"SetEnv SHLVL=1",
		"LogLevel ERROR",
	}
	if h.sftpOnly {
		lines = append(lines, "ForceCommand internal-sftp")
	}
	if v := sshdVersion(); v >= 908 {
		// OpenSSH 9.8 penalises sources whose sessions end abruptly; reconnect
		// tests do exactly that on purpose.
		lines = append(lines, "PerSourcePenalties no")
	}
	return writeLines(h.sshdConfig, 0o600, lines)
}

// ConfigBlock returns the "Host alias" block of the client config, for
// writing several hosts into one file.
func (h *Host) ConfigBlock() string { return h.block(h.Alias, h.Addr, h.Port) }

// ConfigBlockVia returns a "Host alias" block that reaches this host
// through addr:port (a proxy in front of it), still verifying its host key:
// known_hosts names the key by sshd's own address and port (HostKeyAlias).
func (h *Host) ConfigBlockVia(alias, addr string, port int) string {
	return h.block(alias, addr, port) + "\tHostKeyAlias [" + h.Addr + "]:" + strconv.Itoa(h.Port) + "\n"
}

func (h *Host) block(alias, addr string, port int) string {
	lines := []string{
		"Host " + alias,
		"\tHostName " + addr,
		"\tPort " + strconv.Itoa(port),
		"\tUser " + h.User,
		"\tIdentityFile " + quote(h.IdentityFile),
		"\tIdentitiesOnly yes",
		"\tIdentityAgent none",
		"\tUserKnownHostsFile " + quote(h.KnownHosts),
		"\tGlobalKnownHostsFile /dev/null",
		"\tUpdateHostKeys no",
		"\tCheckHostIP no",
		"\tBatchMode yes",
		"\tControlMaster no",
		"\tControlPath none",
		"\tConnectTimeout 10",
		"\tLogLevel ERROR",
	}
	return strings.Join(lines, "\n") + "\n"
}

// writeClientFiles writes known_hosts and the client config.
func (h *Host) writeClientFiles() error {
	pub, err := os.ReadFile(filepath.Join(h.Root, "ssh_host_ed25519_key.pub"))
	if err != nil {
		return fmt.Errorf("testenv: %w", err)
	}
	pattern := h.Addr
	if h.Port != 22 {
		pattern = "[" + h.Addr + "]:" + strconv.Itoa(h.Port)
	}
	if err := writeLines(h.KnownHosts, 0o600, []string{pattern + " " + strings.TrimSpace(string(pub))}); err != nil {
		return err
	}
	return WriteSSHConfig(h.SSHConfig, h)
}

// WriteSSHConfig writes one client config file that defines the aliases of
// all the given hosts, so that a single -F file reaches all of them.
func WriteSSHConfig(path string, hosts ...*Host) error {
	var b strings.Builder
	for i, h := range hosts {
		if i > 0 {
			b.WriteString("\n")
		}
		b.WriteString(h.ConfigBlock())
	}
	if err := os.WriteFile(path, []byte(b.String()), 0o600); err != nil {
		return fmt.Errorf("testenv: %w", err)
	}
	return nil
}

func writeLines(path string, mode os.FileMode, lines []string) error {
	if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), mode); err != nil {
		return fmt.Errorf("testenv: %w", err)
	}
	return nil
}

// quote protects a path with spaces in an ssh or sshd config line.
func quote(s string) string {
	if strings.ContainsAny(s, " \t") {
		return `"` + s + `"`
	}
	return s
}

var (
	versionOnce sync.Once
	version     int
)

// sshdVersion returns the OpenSSH version of SSHD as major*100+minor, 0 when
// it cannot be told.
func sshdVersion() int {
	versionOnce.Do(func() {
		out, _ := exec.Command(SSHD, "-V").CombinedOutput()
		m := regexp.MustCompile(`OpenSSH_(\d+)\.(\d+)`).FindSubmatch(out)
		if m != nil {
			major, _ := strconv.Atoi(string(m[1]))
			minor, _ := strconv.Atoi(string(m[2]))
			version = major*100 + minor
		}
	})
	return version
}
