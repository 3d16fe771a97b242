package transport

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"sshfsm/internal/privdir"
)

// Remote commands (Exec) run over the SSH connection of channel slot 0:
// a new connection costs a key exchange and an authentication (about
// 0.2 s), a session on an existing one a few milliseconds. Unless the user
// configured multiplexing, the ssh process of slot 0 is started as a
// private ControlMaster whose socket lives in a 0700 directory of ours, a
// fresh socket name each time the slot is (re)connected; Exec then runs
// `ssh -oControlMaster=no -oControlPath=SOCKET host -- command`, which
// only asks the master to open one more session. When the user configured
// their own multiplexing (ControlMaster or ControlPath, in -o options or in
// ssh_config), Exec runs plain `ssh host -- command` in BatchMode and
// relies on their master. With Options.Dialer there is no ssh: no Exec.

// execMode says how a host runs remote commands.
type execMode int

const (
	execNone    execMode = iota // Options.Dialer: no ssh
	execPrivate                 // through our ControlMaster on slot 0
	execUser                    // plain ssh; the user's multiplexing, if any
)

// execState is what a Host keeps to run remote commands.
type execState struct {
	mode execMode
	dir  string       // execPrivate: the 0700 directory of the control sockets
	gen  atomic.Int64 // socket names handed out
	// noTree: the host cannot list trees (no command execution, no GNU
	// find); remembered so that it is not asked again. gnuFind: a tree
	// listing worked, find need not be checked again.
	noTree, gnuFind atomic.Bool
	// The long-lived command loop that runs tree listings (session.go):
	// sessMu is held while it runs one; noSession: the server runs no
	// loop of ours.
	sessMu    sync.Mutex
	sess      *cmdSession
	noSession atomic.Bool
}

// ErrNoExec is the error of Exec on a host reached without ssh.
var ErrNoExec = errors.New("remote commands need ssh")

// errNoMaster is the error of Exec while channel slot 0, which carries the
// shared connection, is down.
var errNoMaster = errors.New("no ssh connection to run a command on")

// ExecError is a remote command that ran and failed. Status 255 is also
// ssh's own failure (the connection was lost).
type ExecError struct {
	Host   string
	Status int
	Stderr string // its last lines of standard error
}

func (e *ExecError) Error() string {
	msg := fmt.Sprintf("%s: remote command exited with status %d", e.Host, e.Status)
	if e.Stderr != "" {
		msg += ": " + e.Stderr
	}
	return msg
}

// maxSocketPath is the longest control socket path we use: ssh binds the
// master to PATH.XXXXXXXXXXXXXXXX first, and sun_path holds 107 bytes.
const maxSocketPath = 88

// setup decides how the host runs commands and creates the socket
// directory of a private master.
func (x *execState) setup(ctx context.Context, o *Options) {
	if o.Dialer != nil {
		return // execNone
	}
	x.mode = execUser
	if userMultiplexes(o) {
		return
	}
	cfg := sshConfig(ctx, o)
	if len(cfg) == 0 || cfg["controlmaster"] != "false" || !isDefault(cfg, "controlpath", "none") {
		// ssh could not tell (a command that is not ssh?) or the user's
		// ssh_config multiplexes.
		return
	}
	for _, parent := range []string{os.TempDir(), "/tmp"} {
		// Room for "/", MkdirTemp's random part, "/c" and the socket number.
		if len(parent)+len(ctlDirPattern()) > maxSocketPath-18 || strings.ContainsAny(parent, " \t\"'%\\") {
			continue
		}
		// ssh's client trusts whatever listens at its ControlPath: in a
		// directory others may change, they could swap ours for theirs.
		if privdir.CheckHolder(parent) != nil {
			continue
		}
		sweepCtlDirs(parent)
		if dir, err := os.MkdirTemp(parent, ctlDirPattern()); err == nil {
			x.mode, x.dir = execPrivate, dir
			return
		}
	}
}

// userMultiplexes reports whether the ssh arguments configure
// multiplexing: -M, -S path, or a ControlMaster or ControlPath option.
func userMultiplexes(o *Options) bool {
	args := append(append([]string(nil), o.SSHCommand...), o.SSHArgs...)
	if len(o.SSHCommand) > 0 {
		args = args[1:]
	}
	if userSetOption(args, "ControlMaster") || userSetOption(args, "ControlPath") {
		return true
	}
	for i := 0; i < len(args); i++ {
		a := args[i]
		if len(a) < 2 || a[0] != '-' || a == "--" {
			continue
		}
		for j := 1; j < len(a); j++ {
			switch {
			case a[j] == 'M' || a[j] == 'S':
				return true
			case strings.IndexByte("BbcDEeFIiJLlmOopQRWw", a[j]) >= 0:
				// The rest of the word, or the next word, is its value.
				if j == len(a)-1 {
					i++
				}
				j = len(a)
			}
		}
	}
	return false
}

// masterArgs returns the ssh options that make slot's ssh process a
// private master, and its socket path ("" for none).
func (h *Host) masterArgs(slot int) ([]string, string) {
	if slot != 0 || h.x.mode != execPrivate {
		return h.extra, ""
	}
	sock := filepath.Join(h.x.dir, "c"+strconv.FormatInt(h.x.gen.Add(1), 10))
	extra := append(append([]string(nil), h.extra...),
		"-oControlMaster=yes", "-oControlPath="+sock, "-oControlPersist=no")
	return extra, sock
}

// dropSocket removes the socket of a master that has exited (killed, it
// could not remove it itself).
func (h *Host) dropSocket(sock string) {
	if sock != "" {
		os.Remove(sock)
	}
}

// removeExecDir removes the socket directory once every channel is gone.
func (h *Host) removeExecDir() {
	if h.x.dir != "" {
		os.RemoveAll(h.x.dir)
	}
}

// masterSocket returns the control socket of slot 0's live channel.
func (h *Host) masterSocket() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	if c := h.chans[0]; c != nil && !c.isDead() {
		return c.ctlPath
	}
	return ""
}

// execArgv builds the ssh command line that runs command on the host.
func (h *Host) execArgv(command string) ([]string, error) {
	extra := h.extra
	switch h.x.mode {
	case execNone:
		return nil, fmt.Errorf("%s: %w", h.o.Host, ErrNoExec)
	case execPrivate:
		sock := h.masterSocket()
		if sock == "" {
			return nil, fmt.Errorf("%s: %w: %w", h.o.Host, errNoMaster, syscall.ENOTCONN)
		}
		extra = append(append([]string(nil), extra...), "-oControlPath="+sock)
	}
	argv := sshBase(&h.o, extra, true)
	// Before the user's arguments, where it wins: a command never becomes
	// a master (one that would outlive it with ControlPersist).
	n := max(len(h.o.SSHCommand), 1)
	argv = append(argv[:n:n], append([]string{"-oControlMaster=no"}, argv[n:]...)...)
	line, err := remoteLine(command)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", h.o.Host, err)
	}
	return append(argv, h.o.Host, "--", line), nil
}

// Exec runs command, a POSIX sh script (quote every path in it with
// shellQuote), with sh on the host, whatever the user's login shell is
// (remoteLine), and passes its standard output to read as it arrives.
// Standard input is empty; the last lines of standard error go
// into the error of a command that fails (*ExecError). The command is
// killed when ctx ends, when the host is closed, when read returns an
// error, and when it writes nothing for Options.Timeout (the link is
// presumed dead). Exec returns once the local ssh process has exited.
func (h *Host) Exec(ctx context.Context, command string, read func(io.Reader) error) error {
	return h.runCommand(ctx, command, commandOpts{kind: "exec", idle: h.o.Timeout}, read)
}

// commandOpts are what tell Exec and Stream apart.
type commandOpts struct {
	kind    string        // the request counter it counts in
	idle    time.Duration // silence on standard output that kills it
	stdin   bool          // standard input held open until the output is read
	errLine func(string)  // receives each line of standard error; may be nil
}

// runCommand runs command over the host's connection, hands its standard
// output to read and returns once the local ssh process has exited.
func (h *Host) runCommand(ctx context.Context, command string, o commandOpts, read func(io.Reader) error) error {
	argv, err := h.execArgv(command)
	if err != nil {
		return err
	}
	var inR, inW *os.File // nil without stdin: /dev/null
	if o.stdin {
		if inR, inW, err = os.Pipe(); err != nil {
			return err
		}
		defer inW.Close()
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		closeAll(inR)
		return err
	}
	defer outR.Close()
	errR, errW, err := os.Pipe()
	if err != nil {
		closeAll(inR, outW)
		return err
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	if inR != nil {
		cmd.Stdin = inR
	}
	cmd.Stdout, cmd.Stderr = outW, errW
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	err = cmd.Start()
	closeAll(inR, outW, errW)
	if err != nil {
		errR.Close()
		return fmt.Errorf("%s: exec: %w", h.o.Host, err)
	}
	h.reqs.add(o.kind)
	r := &runningCmd{cmd: cmd, exited: make(chan struct{}), killed: make(chan struct{}),
		out:  &idleReader{f: outR, idle: o.idle},
		errs: &stderrTail{done: make(chan struct{}), sink: o.errLine}}
	go r.errs.consume(errR)
	go func() {
		r.err = cmd.Wait()
		// The master may hold our stderr a little longer. A command that
		// was killed (its caller's deadline, a dead link) is not waited
		// for: its stderr explains nothing, and the caller must get its
		// answer by its deadline.
		select {
		case <-r.errs.done:
		case <-r.killed:
		case <-time.After(time.Second):
		}
		errR.Close()
		close(r.exited)
	}()
	go r.watch(ctx, h.ctx)
	if rerr := read(r.out); rerr != nil {
		r.kill(rerr)
	}
	if inW != nil {
		inW.Close() // end of file on the remote standard input: the command stops
	}
	outR.Close() // a command still writing gets EPIPE
	<-r.exited
	return h.execResult(r)
}

// runningCmd is one Exec's ssh process.
type runningCmd struct {
	cmd    *exec.Cmd
	out    *idleReader
	errs   *stderrTail
	exited chan struct{} // closed once reaped; err is then set
	err    error
	killed chan struct{} // closed by kill

	mu  sync.Mutex // guards why
	why error      // why kill was called first
}

// watch kills the command when ctx or the host ends first.
func (r *runningCmd) watch(ctx, host context.Context) {
	select {
	case <-ctx.Done():
		r.kill(fmt.Errorf("exec: %w", ctx.Err()))
	case <-host.Done():
		r.kill(fmt.Errorf("exec: %w: %w", errClosed, syscall.ENOTCONN))
	case <-r.exited:
	}
}

// kill ends the command and the read of its output. The ssh master, which
// holds our end of the output too, may keep it open a little longer.
func (r *runningCmd) kill(why error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.why != nil {
		return
	}
	r.why = why
	close(r.killed)
	r.out.stop()
	r.cmd.Process.Kill() // after reaping, a harmless ErrProcessDone
}

// execResult explains how an Exec ended.
func (h *Host) execResult(r *runningCmd) error {
	r.mu.Lock()
	why := r.why
	r.mu.Unlock()
	switch {
	case errors.Is(why, os.ErrDeadlineExceeded):
		return fmt.Errorf("%s: exec: no output for %v: %w", h.o.Host, h.o.Timeout, context.DeadlineExceeded)
	case why != nil:
		return fmt.Errorf("%s: %w", h.o.Host, why)
	}
	var ee *exec.ExitError
	if errors.As(r.err, &ee) {
		return &ExecError{Host: h.o.Host, Status: ee.ExitCode(), Stderr: strings.Join(r.errs.tail(), "\n")}
	}
	if r.err != nil {
		return fmt.Errorf("%s: exec: %w", h.o.Host, r.err)
	}
	return nil
}

// errStopped is what a read of a killed command's output returns.
var errStopped = errors.New("command stopped")

// idleReader fails a read that waits longer than idle for data, and every
// read once stopped.
type idleReader struct {
	f    *os.File
	idle time.Duration
	// mu orders stop against the deadline a Read sets.
	mu      sync.Mutex
	stopped bool
}

func (r *idleReader) Read(p []byte) (int, error) {
	r.mu.Lock()
	if r.stopped {
		r.mu.Unlock()
		return 0, errStopped
	}
	err := r.f.SetReadDeadline(time.Now().Add(r.idle))
	r.mu.Unlock()
	if err != nil {
		return 0, err
	}
	return r.f.Read(p)
}

// stop wakes a Read in progress (the deadline passes) and fails later ones.
func (r *idleReader) stop() {
	r.mu.Lock()
	r.stopped = true
	r.f.SetReadDeadline(time.Now())
	r.mu.Unlock()
}

// add counts one request that is not an SFTP packet ("exec").
func (r *reqCounters) add(name string) {
	r.mu.Lock()
	if r.ext == nil {
		r.ext = map[string]uint64{}
	}
	r.ext[name]++
	r.mu.Unlock()
}
