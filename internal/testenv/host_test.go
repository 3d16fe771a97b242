package testenv

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestMain(m *testing.M) { Main(m) }

// sshCmd runs ssh or sftp with args and a 20 s limit.
func sshCmd(t *testing.T, stdin string, name string, args ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Stdin = strings.NewReader(stdin)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

func TestTwoHostsSSHAndSFTP(t *testing.T) {
	hosts, shared := StartHosts(t, 2)
	if hosts[0].Port == 0 || hosts[0].Alias == hosts[1].Alias {
		t.Fatalf("hosts not distinct: %+v %+v", hosts[0], hosts[1])
	}
	for i, h := range hosts {
		name := "hello-from-" + h.Alias
		if err := os.WriteFile(filepath.Join(h.Dir, name), []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
		if out, err := sshCmd(t, "", "ssh", append(h.SSHArgs(), h.Alias, "true")...); err != nil {
			t.Fatalf("ssh %s true: %v: %s", h.Alias, err, out)
		}
		// The remote shell sees the host's own address, proving which host answered.
		out, err := sshCmd(t, "", "ssh", "-F", shared, h.Alias, "echo $SSH_CONNECTION")
		if err != nil || !strings.Contains(out, " "+h.Addr+" ") {
			t.Fatalf("host %d via shared config: %v: %q", i, err, out)
		}
		out, err = sshCmd(t, "ls "+h.Dir+"\n", "sftp", "-F", h.SSHConfig, "-b", "-", h.Alias)
		if err != nil || !strings.Contains(out, name) {
			t.Fatalf("sftp ls %s: %v: %s", h.Dir, err, out)
		}
	}
}

func TestHostKeyIsVerified(t *testing.T) {
	a := StartHost(t, "127.0.0.2")
	b := StartHost(t, "127.0.0.3")
	// a's client config with b's host key filed under a's address and port.
	pubB, err := os.ReadFile(filepath.Join(b.Root, "ssh_host_ed25519_key.pub"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	wrong := filepath.Join(dir, "known_hosts")
	line := "[" + a.Addr + "]:" + itoa(a.Port) + " " + string(pubB)
	if err := os.WriteFile(wrong, []byte(line), 0o600); err != nil {
		t.Fatal(err)
	}
	empty := filepath.Join(dir, "empty_known_hosts")
	if err := os.WriteFile(empty, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, kh := range []string{wrong, empty} {
		cfg := strings.Replace(a.ConfigBlock(), a.KnownHosts, kh, 1)
		cfgPath := filepath.Join(dir, "ssh_config")
		if err := os.WriteFile(cfgPath, []byte(cfg), 0o600); err != nil {
			t.Fatal(err)
		}
		out, err := sshCmd(t, "", "ssh", "-F", cfgPath, a.Alias, "true")
		if err == nil || !strings.Contains(out, "Host key verification failed") {
			t.Fatalf("ssh with %s: err=%v, want host key verification failure: %s", filepath.Base(kh), err, out)
		}
	}
}

func TestKillAndRestart(t *testing.T) {
	h := StartHost(t, "127.0.0.4")
	port, pid := h.Port, h.PID()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	session := exec.CommandContext(ctx, "ssh", append(h.SSHArgs(), h.Alias, "echo up; exec sleep 60")...)
	stdout, err := session.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := session.Start(); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 3)
	if _, err := stdout.Read(buf); err != nil || string(buf) != "up\n" {
		t.Fatalf("session did not start: %v %q", err, buf)
	}
	children := descendants(pid)
	if len(children) == 0 {
		t.Fatal("no per-connection sshd process seen")
	}

	h.Kill()
	start := time.Now()
	if err := session.Wait(); err == nil {
		t.Fatal("ssh session survived the host being killed")
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Fatalf("ssh took %v to notice the killed host", d)
	}
	for _, c := range append(children, pid) {
		if Alive(c) {
			t.Fatalf("process %d (%s) of the killed host still runs", c, cmdline(c))
		}
	}
	if h.Running() {
		t.Fatal("Running after Kill")
	}
	if out, err := sshCmd(t, "", "ssh", append(h.SSHArgs(), h.Alias, "true")...); err == nil {
		t.Fatalf("ssh to a killed host succeeded: %s", out)
	}

	if err := h.Restart(); err != nil {
		t.Fatal(err)
	}
	if h.Port != port || h.PID() == pid || !h.Running() {
		t.Fatalf("restart: port %d→%d pid %d→%d", port, h.Port, pid, h.PID())
	}
	if out, err := sshCmd(t, "", "ssh", append(h.SSHArgs(), h.Alias, "true")...); err != nil {
		t.Fatalf("ssh after restart: %v: %s", err, out)
	}
}

func TestStopEndsSessions(t *testing.T) {
	h := StartHost(t, "127.0.0.2")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	session := exec.CommandContext(ctx, "ssh", append(h.SSHArgs(), h.Alias, "exec sleep 60")...)
	if err := session.Start(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool { return len(descendants(h.PID())) > 0 })
	h.Stop()
	if err := session.Wait(); err == nil {
		t.Fatal("ssh session survived Stop")
	}
	if h.Running() {
		t.Fatal("Running after Stop")
	}
}

func TestFreezeAndThaw(t *testing.T) {
	h := StartHost(t, "127.0.0.3")
	h.Freeze()
	start := time.Now()
	out, err := sshCmd(t, "", "ssh", append(h.SSHArgs(), "-o", "ConnectTimeout=1", h.Alias, "true")...)
	if err == nil {
		h.Thaw()
		t.Fatalf("ssh to a frozen host succeeded: %s", out)
	}
	if time.Since(start) < 900*time.Millisecond {
		h.Thaw()
		t.Fatalf("frozen host answered at once (%v): %s", time.Since(start), out)
	}
	h.Thaw()
	if out, err := sshCmd(t, "", "ssh", append(h.SSHArgs(), h.Alias, "true")...); err != nil {
		t.Fatalf("ssh after thaw: %v: %s", err, out)
	}
}

func TestLeakedProcessIsFound(t *testing.T) {
	h := StartHost(t, "127.0.0.2")
	marker := RunEnv + "=" + os.Getenv(RunEnv)
	if os.Getenv(RunEnv) == "" {
		t.Fatal("Main did not set " + RunEnv)
	}
	if !slices.Contains(markedProcs(marker, os.Getenv("TMPDIR")), h.PID()) {
		t.Fatalf("running sshd %d not among the marked processes", h.PID())
	}
	leaks := leaksNow(t.TempDir(), marker)
	if !slices.ContainsFunc(leaks, func(s string) bool { return strings.Contains(s, "host "+h.Alias) }) {
		t.Fatalf("open host not reported: %q", leaks)
	}
	pid := h.PID()
	h.Close()
	if slices.Contains(markedProcs(marker, os.Getenv("TMPDIR")), pid) {
		t.Fatalf("closed host's sshd %d still reported", pid)
	}
	if _, err := os.Stat(h.Root); !os.IsNotExist(err) {
		t.Fatalf("Close left %s: %v", h.Root, err)
	}
}

func TestStartRejectsNonLoopback(t *testing.T) {
	if h, err := Start(Options{Addr: "192.0.2.1"}); err == nil {
		h.Close()
		t.Fatal("Start accepted a non-loopback address")
	}
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not reached within 10s")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func itoa(n int) string { return strconv.Itoa(n) }
