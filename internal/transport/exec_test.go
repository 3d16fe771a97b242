package transport

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"sshfsm/internal/testenv"
)

// dialSSH dials a real sshd with the test defaults and closes it at the end.
func dialSSH(t *testing.T, th *testenv.Host, mod func(*Options)) *Host {
	t.Helper()
	o := sshOptions(th)
	if mod != nil {
		mod(&o)
	}
	h, err := Dial(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	waitUp(t, h, o.Conns)
	return h
}

// output runs command and returns its standard output.
func output(ctx context.Context, h *Host, command string) (string, error) {
	var out []byte
	err := h.Exec(ctx, command, func(r io.Reader) error {
		var err error
		out, err = io.ReadAll(r)
		return err
	})
	return string(out), err
}

// hostileNames are file names a shell command line must survive.
var hostileNames = []string{
	"plain", "with space", "tab\there", "new\nline", `back\slash`, "single'quote",
	`double"quote`, "'", "''", `\'`, "$HOME", "$(echo pwned)", "`id`", "semi;colon",
	"amp&", "pipe|", "star*", "question?", "[bracket]", "-dash", "--", "~tilde",
	"trailing\\", "non-utf8-\xff\xfe", "#hash", "!bang", "percent%s", "\x01ctl", "ünïcödé",
}

func TestExecQuotesHostileStrings(t *testing.T) {
	th := testenv.StartHost(t, "127.0.0.2")
	h := dialSSH(t, th, nil)
	if h.x.mode != execPrivate {
		t.Fatalf("exec mode %d, want the private master", h.x.mode)
	}
	for _, s := range hostileNames {
		got, err := output(bg, h, "printf '%s' "+shellQuote(s))
		if err != nil || got != s {
			t.Errorf("%q came back as %q (%v)", s, got, err)
		}
	}
	if n := h.Stats().Requests["exec"]; n != uint64(len(hostileNames)) {
		t.Errorf("exec counted %d times, want %d", n, len(hostileNames))
	}
}

// Commands share slot 0's connection: the same client port every time.
func TestExecUsesTheMasterConnection(t *testing.T) {
	th := testenv.StartHost(t, "127.0.0.2")
	h := dialSSH(t, th, nil)
	first, err := output(bg, h, `echo "$SSH_CONNECTION"`)
	if err != nil || strings.TrimSpace(first) == "" {
		t.Fatalf("%q %v", first, err)
	}
	for range 3 {
		if again, err := output(bg, h, `echo "$SSH_CONNECTION"`); err != nil || again != first {
			t.Fatalf("connection %q then %q (%v): not multiplexed", first, again, err)
		}
	}
	sock := h.masterSocket()
	if st, err := os.Stat(sock); err != nil || st.Mode()&os.ModeSocket == 0 {
		t.Fatalf("control socket %q: %v", sock, err)
	}
	if st, _ := os.Stat(h.x.dir); st.Mode().Perm() != 0o700 {
		t.Errorf("socket directory mode %v", st.Mode())
	}
	h.Close()
	if _, err := os.Stat(h.x.dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("socket directory left after Close: %v", err)
	}
}

func TestExecStatusAndStderr(t *testing.T) {
	th := testenv.StartHost(t, "127.0.0.2")
	h := dialSSH(t, th, func(o *Options) { o.Conns = 1 })
	out, err := output(bg, h, "echo out; echo oops >&2; exit 3")
	var ee *ExecError
	if !errors.As(err, &ee) || ee.Status != 3 || ee.Stderr != "oops" || out != "out\n" {
		t.Fatalf("got %q, %v", out, err)
	}
}

// remoteProcs lists the processes whose command line holds marker and,
// unless cwd is "", whose working directory is cwd (the test's sshd runs
// on this machine).
func remoteProcs(marker, cwd string) []string {
	var found []string
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil || !strings.Contains(string(b), marker) {
			continue
		}
		if wd, _ := os.Readlink(filepath.Join("/proc", e.Name(), "cwd")); cwd == "" || wd == cwd {
			found = append(found, e.Name()+": "+strings.ReplaceAll(string(b), "\x00", " "))
		}
	}
	return found
}

// sshChildren counts our ssh processes.
func sshChildren() int {
	n := 0
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		comm, err := os.ReadFile(filepath.Join("/proc", e.Name(), "comm"))
		stat, err2 := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil || err2 != nil || strings.TrimSpace(string(comm)) != "ssh" {
			continue
		}
		var pid, ppid int
		var name, state string
		fmt.Sscanf(string(stat), "%d %s %s %d", &pid, &name, &state, &ppid)
		if ppid == os.Getpid() {
			n++
		}
	}
	return n
}

func TestExecCancelKillsCommand(t *testing.T) {
	th := testenv.StartHost(t, "127.0.0.2")
	h := dialSSH(t, th, nil)
	before := sshChildren()
	marker := fmt.Sprintf("sshfsm-cancel-%d", time.Now().UnixNano())
	ctx, cancel := context.WithCancel(bg)
	started := make(chan struct{})
	var took time.Duration
	err := h.Exec(ctx, ": "+marker+"; while :; do echo tick; sleep 0.05; done", func(r io.Reader) error {
		buf := make([]byte, 5)
		if _, err := io.ReadFull(r, buf); err != nil {
			return err
		}
		close(started)
		cancel()
		start := time.Now()
		_, err := io.Copy(io.Discard, r)
		took = time.Since(start)
		return err
	})
	<-started
	if !errors.Is(err, context.Canceled) || took > time.Second {
		t.Fatalf("got %v; the read went on %v after the cancel", err, took)
	}
	if n := sshChildren(); n != before {
		t.Errorf("%d ssh processes, %d before the command", n, before)
	}
	deadline := time.Now().Add(3 * time.Second)
	for len(remoteProcs(marker, "")) > 0 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if left := remoteProcs(marker, ""); len(left) > 0 {
		t.Errorf("remote command still running: %q", left)
	}
}

func TestExecIdleLimit(t *testing.T) {
	th := testenv.StartHost(t, "127.0.0.2")
	h := dialSSH(t, th, func(o *Options) { o.Timeout = time.Second })
	start := time.Now()
	_, err := output(bg, h, "echo first; sleep 4; echo late")
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("got %v after %v", err, time.Since(start))
	}
}

func TestExecAfterReconnect(t *testing.T) {
	th := testenv.StartHost(t, "127.0.0.2")
	h := dialSSH(t, th, nil)
	old := h.masterSocket()
	th.Kill()
	if err := th.Restart(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for h.Stats().Channels[0].Reconnects == 0 || !h.Stats().Channels[0].Up {
		if time.Now().After(deadline) {
			t.Fatal("slot 0 did not reconnect")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if sock := h.masterSocket(); sock == old || sock == "" {
		t.Fatalf("socket %q after reconnect, %q before", sock, old)
	}
	if _, err := os.Stat(old); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("old socket left: %v", err)
	}
	if out, err := output(bg, h, "echo back"); err != nil || out != "back\n" {
		t.Fatalf("after reconnect: %q %v", out, err)
	}
}

func TestExecWithoutSSH(t *testing.T) {
	h, _, _ := dialTest(t, 1, nil)
	if _, err := output(bg, h, "true"); !errors.Is(err, ErrNoExec) {
		t.Fatalf("exec over a Dialer: %v", err)
	}
}

func TestUserMultiplexes(t *testing.T) {
	cases := []struct {
		cmd, args []string
		want      bool
	}{
		{nil, []string{"-F", "cfg", "-C"}, false},
		{nil, []string{"-oControlMaster=auto"}, true},
		{nil, []string{"-o", "ControlPath /x/%C"}, true},
		{nil, []string{"-S", "/x/sock"}, true},
		{nil, []string{"-CM"}, true},
		{nil, []string{"-F", "-S"}, false}, // a config file named -S
		{nil, []string{"-oServerAliveInterval=5", "-p2222"}, false},
		{[]string{"ssh", "-M"}, nil, true},
		{[]string{"/usr/bin/ssh"}, []string{"-lSam"}, false},
	}
	for _, c := range cases {
		o := Options{SSHCommand: c.cmd, SSHArgs: c.args}
		if got := userMultiplexes(&o); got != c.want {
			t.Errorf("%q %q: %v, want %v", c.cmd, c.args, got, c.want)
		}
	}
}

// With multiplexing in the user's ssh_config, commands run as plain ssh.
func TestExecUserConfiguredMultiplexing(t *testing.T) {
	th := testenv.StartHost(t, "127.0.0.2")
	short, err := os.MkdirTemp("/tmp", "sshfsm-mux-") // socket paths are short
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(short)
	cfg := altConfig(t, th, "ControlMaster no", "ControlMaster auto",
		"ControlPath none", "ControlPath "+filepath.Join(short, "%p"))
	h := dialSSH(t, th, func(o *Options) { o.SSHArgs = []string{"-F", cfg} })
	if h.x.mode != execUser || h.x.dir != "" {
		t.Fatalf("mode %d dir %q, want the user's multiplexing", h.x.mode, h.x.dir)
	}
	if out, err := output(bg, h, "echo hi"); err != nil || out != "hi\n" {
		t.Fatalf("%q %v", out, err)
	}
}
