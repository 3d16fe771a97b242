package testenv

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// SSHD is the sshd binary every host runs. It is an absolute path because
// sshd re-executes itself for each connection.
const SSHD = "/usr/sbin/sshd"

// Options configures one throwaway sshd host.
type Options struct {
	Addr   string // loopback address to listen on; "" = 127.0.0.2
	Port   int    // 0 = a free port
	Alias  string // Host alias in the client config; "" = sshfsm-test-<addr with dashes>
	Root   string // directory for keys, configs, log and Dir; "" = a new temp dir that Close removes
	Detach bool   // sshd outlives this process (own session); default: it dies with this process
	// SFTPOnly makes sshd serve SFTP and nothing else (ForceCommand
	// internal-sftp), as hosts that give file access but no shell do.
	SFTPOnly bool
	// LoginShell, a program name or path, is the login user's shell on
	// this host: sshd runs in a mount namespace of its own that sees a
	// copy of /etc/passwd where the user's shell is LoginShell and home
	// Root/home. Needs root.
	LoginShell string
}

// Host is one running sshd on loopback with its own host key, a client key
// that it accepts, and a client ssh_config that verifies its host key.
type Host struct {
	Alias        string // Host alias defined in SSHConfig
	Addr         string // listen address, e.g. 127.0.0.2
	Port         int
	User         string // login user: the user running this process
	SSHConfig    string // client config file: pass as ssh -F
	KnownHosts   string // known_hosts holding this host's key
	IdentityFile string // client private key
	Dir          string // an empty directory to serve
	Root         string // everything of this host lives below here

	sshdConfig, pidFile, logFile string
	ownRoot, detach, sftpOnly    bool
	passwd                       string // the /etc/passwd sshd sees; "" = the machine's

	mu     sync.Mutex    // guards cmd, done and closed
	cmd    *exec.Cmd     // the running sshd, nil when stopped
	done   chan struct{} // closed when cmd has been waited for
	closed bool
}

// live holds every started and not yet closed host, for Main's leak check.
var live = struct {
	sync.Mutex
	hosts map[*Host]bool
}{hosts: map[*Host]bool{}}

// Start runs a new sshd as described by o and returns once it accepts
// connections.
func Start(o Options) (*Host, error) {
	if o.Addr == "" {
		o.Addr = "127.0.0.2"
	}
	if ip := net.ParseIP(o.Addr); ip == nil || !ip.IsLoopback() {
		return nil, fmt.Errorf("testenv: %q is not a loopback address", o.Addr)
	}
	if o.Alias == "" {
		o.Alias = "sshfsm-test-" + strings.NewReplacer(".", "-", ":", "-").Replace(o.Addr)
	}
	if Short() {
		// A test that forgot RequireSSHD fails here, rather than making
		// the quick tier slow or dependent on sshd.
		return nil, errors.New("testenv: a test run with -short starts no sshd: call RequireSSHD first")
	}
	if err := executable(SSHD); err != nil {
		return nil, fmt.Errorf("testenv: %v: install openssh-server (scripts/test.sh does)", err)
	}
	sftpServer, err := findSFTPServer()
	if err != nil {
		return nil, err
	}
	if os.Geteuid() == 0 {
		// sshd's privilege separation directory; tmpfs /run starts without it.
		if err := os.MkdirAll("/run/sshd", 0o755); err != nil {
			return nil, fmt.Errorf("testenv: %w", err)
		}
	}
	h := &Host{Alias: o.Alias, Addr: o.Addr, detach: o.Detach, sftpOnly: o.SFTPOnly}
	if h.User, err = currentUser(); err != nil {
		return nil, err
	}
	if err := h.prepare(o.Root); err != nil {
		return nil, err
	}
	if o.LoginShell != "" {
		if err := h.preparePasswd(o.LoginShell); err != nil {
			h.removeRoot()
			return nil, err
		}
	}
	port := o.Port
	for attempt := 0; ; attempt++ {
		if o.Port == 0 {
			if port, err = freePort(o.Addr); err != nil {
				h.removeRoot()
				return nil, err
			}
		}
		h.Port = port
		if err = h.writeSSHDConfig(sftpServer); err == nil {
			err = h.launch()
		}
		// Another process may take a picked port before sshd binds it.
		if err == nil || o.Port != 0 || attempt == 2 || !strings.Contains(err.Error(), "in use") {
			break
		}
	}
	if err == nil {
		err = h.writeClientFiles()
	}
	if err != nil {
		h.Kill()
		h.removeRoot()
		return nil, err
	}
	live.Lock()
	live.hosts[h] = true
	live.Unlock()
	return h, nil
}

// prepare creates the root directory, the keys and Dir.
func (h *Host) prepare(root string) error {
	var err error
	if root == "" {
		if root, err = os.MkdirTemp("", "sshfsm-testenv-"); err != nil {
			return fmt.Errorf("testenv: %w", err)
		}
		h.ownRoot = true
	} else if err = os.MkdirAll(root, 0o700); err != nil {
		return fmt.Errorf("testenv: %w", err)
	}
	if h.Root, err = filepath.Abs(root); err != nil {
		return err
	}
	p := func(name string) string { return filepath.Join(h.Root, name) }
	h.sshdConfig, h.pidFile, h.logFile = p("sshd_config"), p("sshd.pid"), p("sshd.log")
	h.SSHConfig, h.KnownHosts, h.IdentityFile = p("ssh_config"), p("known_hosts"), p("id_ed25519")
	h.Dir = p("srv")
	if err = os.MkdirAll(h.Dir, 0o755); err == nil {
		var clientKey string
		if _, err = writeKeyPair(p("ssh_host_ed25519_key"), "sshfsm-testenv-host"); err == nil {
			clientKey, err = writeKeyPair(h.IdentityFile, "sshfsm-testenv-client")
		}
		if err == nil {
			err = os.WriteFile(p("authorized_keys"), []byte(clientKey+"\n"), 0o600)
		}
	}
	if err != nil {
		h.removeRoot()
		return fmt.Errorf("testenv: %w", err)
	}
	return nil
}

// launch starts sshd and waits until it listens.
func (h *Host) launch() error {
	_ = os.Remove(h.pidFile)
	logf, err := os.OpenFile(h.logFile, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return fmt.Errorf("testenv: %w", err)
	}
	defer logf.Close()
	start, _ := logf.Seek(0, 2)
	cmd := h.sshdCommand()
	cmd.Stdout, cmd.Stderr = logf, logf
	if h.detach {
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	} else {
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	}
	if h.passwd != "" {
		cmd.SysProcAttr.Unshareflags = syscall.CLONE_NEWNS
	}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("testenv: start sshd: %w", err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	h.mu.Lock()
	h.cmd, h.done = cmd, done
	h.mu.Unlock()
	// sshd writes its pid file once its listening socket is bound.
	deadline := time.Now().Add(15 * time.Second)
	for {
		if _, err := os.Stat(h.pidFile); err == nil {
			return nil
		}
		select {
		case <-done:
			h.mu.Lock()
			h.cmd = nil
			h.mu.Unlock()
			return fmt.Errorf("testenv: sshd on %s:%d exited: %s", h.Addr, h.Port, h.logSince(start))
		case <-time.After(5 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			h.Kill()
			return fmt.Errorf("testenv: sshd on %s:%d did not start within 15s: %s", h.Addr, h.Port, h.logSince(start))
		}
	}
}

// logSince returns the sshd log written after offset, trimmed to one line.
func (h *Host) logSince(off int64) string {
	b, _ := os.ReadFile(h.logFile)
	if int64(len(b)) < off {
		off = 0
	}
	s := strings.TrimSpace(strings.ReplaceAll(string(b[off:]), "\n", "; "))
	if s == "" {
		return "no output"
	}
	return s
}

// Log returns everything sshd wrote to its log so far.
func (h *Host) Log() string {
	b, _ := os.ReadFile(h.logFile)
	return string(b)
}

// SSHArgs returns the ssh arguments that select this host's client config.
func (h *Host) SSHArgs() []string { return []string{"-F", h.SSHConfig} }

// PID returns the pid of the listening sshd, 0 when it is not running.
func (h *Host) PID() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.cmd == nil || isClosed(h.done) {
		return 0
	}
	return h.cmd.Process.Pid
}

// Running reports whether the listening sshd is up.
func (h *Host) Running() bool { return h.PID() != 0 }

func isClosed(c chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

// Kill kills sshd and every session process below it with SIGKILL, as a
// crashed or powered-off host would vanish.
func (h *Host) Kill() {
	h.mu.Lock()
	cmd, done := h.cmd, h.done
	h.cmd = nil
	h.mu.Unlock()
	if cmd == nil {
		return
	}
	// Once reaped, the pid may belong to another process already.
	if !isClosed(done) {
		killTree(cmd.Process.Pid)
	}
	<-done
}

// Stop asks sshd and its sessions to terminate (SIGTERM), and kills whatever
// is left after two seconds.
func (h *Host) Stop() {
	pid := h.PID()
	if pid == 0 {
		return
	}
	tree := map[int]bool{pid: true}
	for _, d := range descendants(pid) {
		tree[d] = true
	}
	for p := range tree {
		_ = syscall.Kill(p, syscall.SIGTERM)
	}
	waitGone(tree, 2*time.Second)
	h.Kill()
}

// Freeze suspends sshd and its sessions (SIGSTOP): connections stay open but
// nothing answers, as on a link that silently drops packets.
func (h *Host) Freeze() { h.signalTree(syscall.SIGSTOP) }

// Thaw resumes a frozen host.
func (h *Host) Thaw() { h.signalTree(syscall.SIGCONT) }

func (h *Host) signalTree(sig syscall.Signal) {
	pid := h.PID()
	if pid == 0 {
		return
	}
	_ = syscall.Kill(pid, sig)
	for _, d := range descendants(pid) {
		_ = syscall.Kill(d, sig)
	}
}

// Restart kills sshd if it runs and starts it again on the same address,
// port and keys.
func (h *Host) Restart() error {
	h.mu.Lock()
	closed := h.closed
	h.mu.Unlock()
	if closed {
		return errors.New("testenv: restart of a closed host")
	}
	h.Kill()
	return h.launch()
}

// Close kills sshd and its sessions and removes the host's files when
// Start created its root directory.
func (h *Host) Close() {
	h.mu.Lock()
	h.closed = true
	h.mu.Unlock()
	h.Kill()
	live.Lock()
	delete(live.hosts, h)
	live.Unlock()
	h.removeRoot()
}

func (h *Host) removeRoot() {
	if h.ownRoot && h.Root != "" {
		_ = os.RemoveAll(h.Root)
	}
}

// freePort returns a TCP port on addr that nothing listens on right now.
func freePort(addr string) (int, error) {
	l, err := net.Listen("tcp", net.JoinHostPort(addr, "0"))
	if err != nil {
		return 0, fmt.Errorf("testenv: no free port on %s: %w", addr, err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func currentUser() (string, error) {
	if u, err := user.Current(); err == nil && u.Username != "" {
		return u.Username, nil
	}
	if u := os.Getenv("USER"); u != "" {
		return u, nil
	}
	return "", fmt.Errorf("testenv: cannot tell the name of uid %d", os.Getuid())
}

// sftpServers are the places distributions install OpenSSH's sftp-server.
var sftpServers = []string{
	"/usr/lib/openssh/sftp-server",
	"/usr/libexec/openssh/sftp-server",
	"/usr/libexec/sftp-server",
	"/usr/lib/ssh/sftp-server",
}

func findSFTPServer() (string, error) {
	for _, p := range sftpServers {
		if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() {
			return p, nil
		}
	}
	return "", fmt.Errorf("testenv: sftp-server not found in %s: install openssh-server", strings.Join(sftpServers, ", "))
}

// portString is host:port with brackets for IPv6.
func (h *Host) portString() string { return net.JoinHostPort(h.Addr, strconv.Itoa(h.Port)) }
