package transport

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// sshProc is one running ssh process carrying one SFTP session.
type sshProc struct {
	cmd    *exec.Cmd
	stdin  *os.File // our end of ssh's stdin
	stdout *os.File // our end of ssh's stdout
	errs   *stderrTail
	exited chan struct{} // closed once ssh has been reaped
}

// stderrTail keeps the last lines ssh wrote to stderr and forwards every
// line to a sink (the terminal while dialling, the log afterwards).
type stderrTail struct {
	mu    sync.Mutex // guards lines, sink
	lines []string
	sink  func(line string)
	done  chan struct{} // closed when stderr reached EOF
}

const tailLines = 8

func (t *stderrTail) consume(r io.Reader) {
	defer close(t.done)
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		line := strings.TrimRight(sc.Text(), "\r")
		t.mu.Lock()
		if strings.TrimSpace(line) != "" {
			t.lines = append(t.lines, line)
			if len(t.lines) > tailLines {
				t.lines = t.lines[1:]
			}
		}
		sink := t.sink
		t.mu.Unlock()
		if sink != nil {
			sink(line)
		}
	}
}

func (t *stderrTail) setSink(f func(string)) {
	t.mu.Lock()
	t.sink = f
	t.mu.Unlock()
}

// tail returns the kept lines, after waiting briefly for ssh's last words.
func (t *stderrTail) tail() []string {
	select {
	case <-t.done:
	case <-time.After(200 * time.Millisecond):
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	return append([]string(nil), t.lines...)
}

// sshArgv builds the ssh command line for one channel. batch forbids
// prompts (every channel but the first, and all reconnects).
func sshArgv(o *Options, extra []string, batch bool) []string {
	argv := sshBase(o, extra, batch)
	if o.SFTPServer != "" {
		return append(argv, o.Host, o.SFTPServer)
	}
	return append(argv, "-s", o.Host, "sftp")
}

// sshBase is an ssh command line up to the destination.
func sshBase(o *Options, extra []string, batch bool) []string {
	cmd := o.SSHCommand
	if len(cmd) == 0 {
		cmd = []string{"ssh"}
	}
	argv := append([]string(nil), cmd...)
	argv = append(argv, "-x", "-a", "-oClearAllForwardings=yes")
	if batch {
		argv = append(argv, "-oBatchMode=yes")
	} else if o.Password != "" && !userSetOption(o.SSHArgs, "NumberOfPasswordPrompts") {
		// The same password again would fail again, and count twice more
		// against the server's limit of failed logins.
		argv = append(argv, "-oNumberOfPasswordPrompts=1")
	}
	if o.Port != 0 {
		argv = append(argv, "-p", strconv.Itoa(o.Port))
	}
	if o.User != "" {
		argv = append(argv, "-l", o.User)
	}
	argv = append(argv, o.SSHArgs...)
	return append(argv, extra...)
}

// userSetOption reports whether the ssh arguments set option key
// (case-insensitive), as -oKey=v, -o Key=v or -o "Key v".
func userSetOption(args []string, key string) bool {
	key = strings.ToLower(key)
	for i, a := range args {
		var v string
		switch {
		case a == "-o" && i+1 < len(args):
			v = args[i+1]
		case strings.HasPrefix(a, "-o"):
			v = a[2:]
		default:
			continue
		}
		v = strings.ToLower(strings.TrimSpace(v))
		if strings.HasPrefix(v, key) && len(v) > len(key) &&
			strings.ContainsRune("= \t", rune(v[len(key)])) {
			return true
		}
	}
	return false
}

// startSSH starts ssh with descriptors we own (so reaping never closes them
// under the SFTP reader): a socket for its input, as relay.go explains, and
// pipes for its output and errors. env is its environment (nil: ours).
// interactive keeps ssh in our process group so that it may prompt on the
// terminal.
func startSSH(argv, env []string, interactive bool, sink func(string)) (*sshProc, error) {
	inR, inW, err := socketPair()
	if err != nil {
		return nil, err
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		closeAll(inR, inW)
		return nil, err
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		closeAll(inR, inW, outR, outW)
		return nil, err
	}
	growPipe(outR)
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = env
	cmd.Stdin, cmd.Stdout, cmd.Stderr = inR, outW, errW
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: !interactive}
	err = cmd.Start()
	inR.Close()
	outW.Close()
	errW.Close()
	if err != nil {
		closeAll(inW, outR, errR)
		return nil, err
	}
	p := &sshProc{cmd: cmd, stdin: inW, stdout: outR, exited: make(chan struct{}),
		errs: &stderrTail{sink: sink, done: make(chan struct{})}}
	go p.errs.consume(errR)
	go func() {
		cmd.Wait()
		select { // ssh's children may hold stderr open
		case <-p.errs.done:
		case <-time.After(time.Second):
		}
		errR.Close()
		close(p.exited)
	}()
	return p, nil
}

// pipeSize is what the pipe from ssh and the relay (relay.go) are grown
// to: a 128 KiB write or read answer then fits whole, and neither side
// wakes the other for every 64 KiB (the default). 128 KiB O_DIRECT writes
// at queue depth 4 on loopback: about 20% more throughput and less CPU per
// write.
const pipeSize = 1 << 20

// growPipe enlarges a pipe, as far as the system allows an unprivileged
// user (fs.pipe-max-size); failing that, the pipe keeps its size.
func growPipe(f *os.File) {
	rc, err := f.SyscallConn() // f.Fd() would make the pipe blocking
	if err != nil {
		return
	}
	rc.Control(func(fd uintptr) {
		if _, err := unix.FcntlInt(fd, unix.F_SETPIPE_SZ, pipeSize); err == nil {
			return
		}
		if b, err := os.ReadFile("/proc/sys/fs/pipe-max-size"); err == nil {
			if n, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && n < pipeSize {
				unix.FcntlInt(fd, unix.F_SETPIPE_SZ, n)
			}
		}
	})
}

// kill ends ssh and closes our pipe ends so every reader and writer fails.
func (p *sshProc) kill() {
	p.cmd.Process.Kill()
	p.stdin.Close()
	p.stdout.Close()
}

// sshDefaults returns the -o options we add unless the user configured
// them: keepalives (so a dead link is noticed), ConnectTimeout, and the
// preferred ciphers.
func sshDefaults(ctx context.Context, o *Options, prefer []string) []string {
	var extra []string
	cfg := sshConfig(ctx, o)
	if !userSetOption(o.SSHArgs, "ServerAliveInterval") && isDefault(cfg, "serveraliveinterval", "0") {
		extra = append(extra, "-oServerAliveInterval=15")
		if !userSetOption(o.SSHArgs, "ServerAliveCountMax") {
			extra = append(extra, "-oServerAliveCountMax=3")
		}
	}
	if !userSetOption(o.SSHArgs, "ConnectTimeout") && isDefault(cfg, "connecttimeout", "none") {
		secs := int((o.Timeout + time.Second - 1) / time.Second)
		extra = append(extra, "-oConnectTimeout="+strconv.Itoa(secs))
	}
	if def := defaultCiphers(ctx, o); !userSetOption(o.SSHArgs, "Ciphers") && cfg["ciphers"] == def {
		if list := cipherList(prefer, def); list != "" {
			extra = append(extra, "-oCiphers="+list)
		}
	}
	return extra
}

// sshConfig runs `ssh -G` for the destination and returns its effective
// configuration (lowercase keys). An empty map when ssh cannot tell.
func sshConfig(ctx context.Context, o *Options) map[string]string {
	argv := sshArgv(o, nil, false) // BatchMode would show ServerAliveInterval 300
	argv = argv[:len(argv)-2]      // drop destination and subsystem
	if o.SFTPServer == "" {
		argv = argv[:len(argv)-1] // "-s"
	}
	argv = append(argv, "-G", o.Host)
	return runSSHG(ctx, argv)
}

// Destination names the machine o reaches as ssh resolves it through
// its configuration (user, host name, port, host key alias): an alias
// that ssh_config points at another machine has another destination. ""
// when ssh cannot tell, or o does not go through ssh.
func Destination(ctx context.Context, o Options) string {
	if o.Dialer != nil {
		return ""
	}
	cfg := sshConfig(ctx, &o)
	if cfg["hostname"] == "" {
		return ""
	}
	return fmt.Sprintf("%s@%s:%s hostkeyalias=%s", cfg["user"], cfg["hostname"], cfg["port"], cfg["hostkeyalias"])
}

var (
	defCiphersOnce sync.Once
	defCiphers     string
)

// defaultCiphers is ssh's built-in cipher list (ssh -G with no config).
func defaultCiphers(ctx context.Context, o *Options) string {
	defCiphersOnce.Do(func() {
		cmd := o.SSHCommand
		if len(cmd) == 0 {
			cmd = []string{"ssh"}
		}
		argv := append(append([]string(nil), cmd...), "-F", "/dev/null", "-G", "localhost")
		defCiphers = runSSHG(ctx, argv)["ciphers"]
	})
	return defCiphers
}

func runSSHG(ctx context.Context, argv []string) map[string]string {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, argv[0], argv[1:]...).Output()
	m := map[string]string{}
	if err != nil {
		return m
	}
	for _, line := range strings.Split(string(out), "\n") {
		k, v, ok := strings.Cut(line, " ")
		if ok {
			m[k] = v
		}
	}
	return m
}

func isDefault(cfg map[string]string, key, def string) bool {
	v, ok := cfg[key]
	return !ok || v == def
}

func closeAll(fs ...*os.File) {
	for _, f := range fs {
		f.Close()
	}
}

// socketPair returns the two ends of a Unix stream socket: ssh's end and
// ours (non-blocking, in the runtime's poller, with a send buffer as large
// as the system allows, so that a writer waiting for room is woken once
// per half of it).
func socketPair() (theirs, ours *os.File, err error) {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, nil, err
	}
	unix.SetsockoptInt(fds[1], unix.SOL_SOCKET, unix.SO_SNDBUF, sockBuffer)
	if err := unix.SetNonblock(fds[1], true); err != nil {
		unix.Close(fds[0])
		unix.Close(fds[1])
		return nil, nil, err
	}
	return os.NewFile(uintptr(fds[0]), "ssh-stdin"), os.NewFile(uintptr(fds[1]), "sftp-out"), nil
}

const sockBuffer = 1 << 20
