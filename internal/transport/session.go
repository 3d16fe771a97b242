package transport

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// A tree listing run as a command of its own costs a local ssh process, a
// session on the connection, the user's login shell and sh on the server
// before find starts: on a loaded machine about as long as find takes over
// a checkout of a few thousand files. The first listings of a mount come
// one after the other (the root and the level below, then the tree a walk
// enters), each waited for, so tree listings go through one long-lived
// command per host instead: a sh loop running one script per line of its
// standard input.
//
// What keeps it as safe as Exec: the loop itself is started as every
// command is (remoteLine: no login shell parses anything of ours). Each
// line it reads holds a nonce and a script in remoteLine's escaped form
// (only [A-Za-z0-9_./-] and \0NNN, no blank), which the loop's sh decodes
// with printf %b and evaluates in a subshell whose standard input is
// /dev/null. After the script the loop prints an end record: two \001
// bytes, the nonce, a blank, the exit status and a newline. The nonce is
// random, fresh for each script, and known only to the mount and the
// server's sh, so no file name in the output can end a listing early or
// forge its status; the output stays hostile input to its parser. One
// script runs at a time; a listing arriving meanwhile runs as a command of
// its own. Anything unusual (the end of ctx, silence for the timeout, a
// reader that stops before the end, bytes after the end record) ends the
// loop's process; the next listing starts another.

// sessionLoop is the script of the long-lived command.
const sessionLoop = `while read -r n c; do (eval "$(printf %b "$c")") </dev/null; printf '\001\001%s %d\n' "$n" "$?"; done`

// cmdSession is one running sessionLoop.
type cmdSession struct {
	cmd    *exec.Cmd
	in     *os.File // the loop's standard input
	out    *os.File // its standard output
	errs   *stderrTail
	exited chan struct{} // closed once the process is reaped
	// finished counts the commands run to their end record (under
	// execState.sessMu).
	finished int

	killOnce sync.Once
}

// kill ends the loop's process; reads of its output fail.
func (s *cmdSession) kill() {
	s.killOnce.Do(func() {
		s.in.Close()
		s.out.Close()
		s.cmd.Process.Kill()
	})
}

func (s *cmdSession) dead() bool {
	select {
	case <-s.exited:
		return true
	default:
		return false
	}
}

// startSession starts the loop over the host's connection.
func (h *Host) startSession() (*cmdSession, error) {
	argv, err := h.execArgv(sessionLoop)
	if err != nil {
		return nil, err
	}
	inR, inW, err := os.Pipe()
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
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = inR, outW, errW
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		closeAll(inR, inW, outR, outW, errR, errW)
		return nil, fmt.Errorf("%s: %w: %w", h.o.Host, errClosed, syscall.ENOTCONN)
	}
	err = cmd.Start()
	if err == nil {
		h.wg.Add(1)
	}
	h.mu.Unlock()
	closeAll(inR, outW, errW)
	if err != nil {
		closeAll(inW, outR, errR)
		return nil, fmt.Errorf("%s: exec: %w", h.o.Host, err)
	}
	s := &cmdSession{cmd: cmd, in: inW, out: outR, exited: make(chan struct{}),
		errs: &stderrTail{done: make(chan struct{})}}
	go s.errs.consume(errR)
	go func() {
		cmd.Wait()
		errR.Close()
		close(s.exited)
	}()
	go func() {
		defer h.wg.Done()
		select {
		case <-h.ctx.Done():
			s.kill()
		case <-s.exited:
		}
		<-s.exited
	}()
	return s, nil
}

// sessionExec runs command, a read-only one (a tree listing), as Exec
// does, through the host's long-lived loop. ran is false when it did not
// run it to the end: the loop is busy, cannot start, or ended before the
// command's end record (the caller runs it again with Exec, which a
// read-only command allows, and Exec's error then says what happened). A
// loop that never finished a command is not tried again: the server
// runs no loop of ours (ForceCommand, a restricted shell).
func (h *Host) sessionExec(ctx context.Context, command string, read func(io.Reader) error) (ran bool, err error) {
	if h.x.mode == execNone || h.x.noSession.Load() || strings.IndexByte(command, 0) >= 0 ||
		!h.x.sessMu.TryLock() {
		return false, nil
	}
	defer h.x.sessMu.Unlock()
	s := h.x.sess
	if s == nil || s.dead() {
		if s, err = h.startSession(); err != nil {
			return false, nil
		}
		h.x.sess = s
	}
	var nonce [16]byte
	rand.Read(nonce[:])
	n := hex.EncodeToString(nonce[:])
	line := n + " " + octalEscape(command, len(command)*5+8)[0] + "\n"
	if _, err := s.in.Write([]byte(line)); err != nil {
		h.dropSession(s)
		return false, nil
	}
	defer func() {
		if ran { // else the Exec that runs it again counts it
			h.reqs.add("exec")
		}
	}()
	er := &endReader{f: s.out, idle: h.o.Timeout, mark: []byte("\001\001" + n + " ")}
	stop := context.AfterFunc(ctx, s.kill)
	rerr := read(er)
	if rerr == nil && !er.ended {
		_, rerr = io.Copy(io.Discard, er)
	}
	cancelled := !stop()
	switch {
	case cancelled && ctx.Err() != nil:
		h.dropSession(s)
		return true, fmt.Errorf("%s: exec: %w", h.o.Host, ctx.Err())
	case h.ctx.Err() != nil && rerr != nil:
		h.dropSession(s)
		return true, fmt.Errorf("%s: exec: %w: %w", h.o.Host, errClosed, syscall.ENOTCONN)
	case errors.Is(rerr, os.ErrDeadlineExceeded):
		h.dropSession(s)
		return true, fmt.Errorf("%s: exec: no output for %v: %w", h.o.Host, h.o.Timeout, context.DeadlineExceeded)
	case rerr != nil && !er.failed:
		// The reader refused the output (a listing past its size
		// limit): as Exec, its error.
		h.dropSession(s)
		return true, fmt.Errorf("%s: %w", h.o.Host, rerr)
	case rerr != nil:
		if s.finished == 0 {
			h.x.noSession.Store(true)
		}
		h.dropSession(s)
		return false, nil
	}
	s.finished++
	if er.trailing {
		h.dropSession(s)
	}
	if er.status != 0 {
		return true, &ExecError{Host: h.o.Host, Status: er.status}
	}
	return true, nil
}

// dropSession ends s, the host's loop, and returns once its ssh process
// is gone; the next command starts another. h.x.sessMu is held.
func (h *Host) dropSession(s *cmdSession) {
	s.kill()
	<-s.exited
	if h.x.sess == s {
		h.x.sess = nil
	}
}

// errSessionLost is the end of the loop's output before an end record.
var errSessionLost = errors.New("remote command loop ended")

// endReader reads one script's output from the loop: everything up to
// its end record, then io.EOF with the status kept.
type endReader struct {
	f    *os.File
	idle time.Duration
	mark []byte // the end record's start: \001\001, the nonce, a blank

	pend     []byte // read, not yet handed out
	buf      []byte
	ended    bool
	status   int
	trailing bool // bytes followed the end record
	failed   bool // the output ended, stalled or broke the protocol
}

func (r *endReader) Read(p []byte) (int, error) {
	n, err := r.read(p)
	if err != nil && err != io.EOF {
		r.failed = true
	}
	return n, err
}

func (r *endReader) read(p []byte) (int, error) {
	for {
		if r.ended {
			return 0, io.EOF
		}
		if i := bytes.Index(r.pend, r.mark); i >= 0 {
			if i > 0 {
				n := copy(p, r.pend[:i])
				r.pend = r.pend[n:]
				return n, nil
			}
			rest := r.pend[len(r.mark):]
			if nl := bytes.IndexByte(rest, '\n'); nl >= 0 {
				st, err := strconv.Atoi(string(rest[:nl]))
				if err != nil || st < 0 || st > 255 {
					return 0, fmt.Errorf("remote command loop: bad end record %q", rest[:nl])
				}
				r.ended, r.status = true, st
				r.trailing = len(rest) > nl+1
				r.pend = nil
				return 0, io.EOF
			}
			if len(rest) > 8 {
				return 0, fmt.Errorf("remote command loop: bad end record %q", rest)
			}
		} else if keep := len(r.mark) - 1; len(r.pend) > keep {
			// What cannot be the start of the end record goes out.
			n := copy(p, r.pend[:len(r.pend)-keep])
			r.pend = r.pend[n:]
			return n, nil
		}
		if err := r.fill(); err != nil {
			return 0, err
		}
	}
}

// fill reads more output, failing after idle without any.
func (r *endReader) fill() error {
	if r.buf == nil {
		r.buf = make([]byte, 64<<10)
	}
	if err := r.f.SetReadDeadline(time.Now().Add(r.idle)); err != nil {
		return err
	}
	n, err := r.f.Read(r.buf)
	r.pend = append(r.pend, r.buf[:n]...)
	switch {
	case n > 0:
		return nil
	case err == io.EOF:
		return errSessionLost
	case err != nil:
		return err
	}
	return nil
}
