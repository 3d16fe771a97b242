package main

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"syscall"

	"sshfsm/internal/config"
)

// The background process is this program started again with daemonEnv set;
// it reports readiness on file descriptor readyFD: "ok", or the exit code
// and the error line.
const (
	daemonEnv = "SSHFSM_DAEMON_CHILD"
	readyFD   = 3
)

func isDaemonChild() bool { return os.Getenv(daemonEnv) == "1" }

// runDaemonParent starts the background process and returns once it reports
// the mount ready (exit 0) or failed (its exit code and error line).
func runDaemonParent(args []string) config.ExitCode {
	exe, err := os.Executable()
	if err != nil {
		return fail(os.Stderr, config.Errorf(config.ExitMount, "cannot find own executable: %v", err))
	}
	r, w, err := os.Pipe()
	if err != nil {
		return fail(os.Stderr, config.Errorf(config.ExitMount, "pipe: %v", err))
	}
	cmd := exec.Command(exe, args...)
	cmd.Env = append(os.Environ(), daemonEnv+"=1")
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.ExtraFiles = []*os.File{w}
	// A stop signal to this process (kill, or ^C when the terminal's is
	// not sent to the whole group) stops the background process too, which
	// then reports itself interrupted: it must not mount later, unseen.
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	defer signal.Stop(sigs)
	err = cmd.Start()
	w.Close()
	if err != nil {
		r.Close()
		return fail(os.Stderr, config.Errorf(config.ExitMount, "cannot start background process: %v", err))
	}
	forwarded := make(chan struct{})
	defer close(forwarded)
	go func() {
		for {
			select {
			case sig := <-sigs:
				cmd.Process.Signal(sig)
			case <-forwarded:
				return
			}
		}
	}()
	line, _ := bufio.NewReader(r).ReadString('\n')
	r.Close()
	if line == "ok\n" {
		cmd.Process.Release()
		return config.ExitOK
	}
	werr := cmd.Wait()
	if code, msg, ok := parseReport(line); ok {
		fmt.Fprintf(os.Stderr, "sshfsm: %s\n", printable(msg))
		return code
	}
	return fail(os.Stderr, config.Errorf(config.ExitMount,
		"background process ended before the mount was ready (%v)", werr))
}

// parseReport reads "CODE message".
func parseReport(line string) (config.ExitCode, string, bool) {
	codeText, msg, ok := strings.Cut(strings.TrimSuffix(line, "\n"), " ")
	code, err := strconv.Atoi(codeText)
	if !ok || err != nil || code <= 0 {
		return 0, "", false
	}
	return config.ExitCode(code), msg, true
}

// runDaemonChild connects and mounts with the terminal still attached (so
// ssh can prompt), leaves the terminal's session, reports readiness and
// serves until unmounted or signalled.
func runDaemonChild(args []string) config.ExitCode {
	os.Unsetenv(daemonEnv)
	syscall.CloseOnExec(readyFD)
	ready := os.NewFile(readyFD, "ready")
	report := func(err error) config.ExitCode {
		code := config.CodeOf(err)
		fmt.Fprintf(ready, "%d %s\n", code, oneLine(err.Error()))
		ready.Close()
		return code
	}
	cfg, err := config.Parse(args)
	if err != nil {
		return report(err)
	}
	if err := readPassword(cfg, os.Stdin, os.Stderr); err != nil {
		return report(err)
	}
	log, sink, err := newLog(cfg, os.Stderr)
	if err != nil {
		return report(err)
	}
	sigs := notifySignals(false)
	m, err := mountUnlessSignalled(cfg, log, sigs)
	if err != nil {
		return report(err)
	}
	sink.serving(cfg, true)
	m.logSink.Store(sink)
	m.tree.leaveTerminal()
	if err := detach(); err != nil {
		m.unmount()
		m.close()
		return report(config.Errorf(config.ExitMount, "detach: %v", err))
	}
	fmt.Fprintln(ready, "ok")
	ready.Close()
	m.serve(sigs)
	return config.ExitOK
}

// detach leaves the terminal: a new session, the root directory as working
// directory, and standard input, output and error on /dev/null.
func detach() error {
	signal.Ignore(syscall.SIGHUP)
	if _, err := syscall.Setsid(); err != nil {
		return fmt.Errorf("setsid: %w", err)
	}
	if err := os.Chdir("/"); err != nil {
		return err
	}
	null, err := os.OpenFile(os.DevNull, os.O_RDWR, 0)
	if err != nil {
		return err
	}
	defer null.Close()
	for fd := 0; fd <= 2; fd++ {
		if err := syscall.Dup3(int(null.Fd()), fd, 0); err != nil {
			return fmt.Errorf("redirect fd %d: %w", fd, err)
		}
	}
	return nil
}
