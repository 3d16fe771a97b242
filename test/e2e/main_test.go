// Package e2e mounts the real sshfsm binary against throwaway OpenSSH
// servers on loopback and checks POSIX behaviour, data integrity, reconnects,
// timeouts and daemon death through the kernel's FUSE client.
package e2e

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"sshfsm/internal/netproxy"
	"sshfsm/internal/testenv"
)

// binEnv names a prebuilt mount binary to test instead of building
// ./cmd/sshfsm (any sshfs-compatible command line works, e.g. sshfs).
const binEnv = "SSHFSM_E2E_BIN"

func TestMain(m *testing.M) {
	if helperMain() {
		os.Exit(0)
	}
	testenv.Main(m)
}

var build struct {
	once sync.Once
	path string
	err  error
}

// binary returns the mount binary, building ./cmd/sshfsm on first use into
// the run's temporary directory. Every test here runs it, so this is where
// the package leaves the quick tier (-short).
func binary(t testing.TB) string {
	t.Helper()
	testenv.SkipShort(t, "an end-to-end test of the sshfsm binary")
	build.once.Do(func() {
		if p := os.Getenv(binEnv); p != "" {
			build.path, build.err = exec.LookPath(p)
			return
		}
		dir, err := os.MkdirTemp("", "sshfsm-bin-")
		if err != nil {
			build.err = err
			return
		}
		build.path = filepath.Join(dir, "sshfsm")
		_, file, _, _ := runtime.Caller(0)
		root := filepath.Join(filepath.Dir(file), "..", "..")
		cmd := testenv.GoCommand("build", "-o", build.path, "./cmd/sshfsm")
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			build.err = fmt.Errorf("go build ./cmd/sshfsm: %v\n%s", err, out)
		}
	})
	if build.err != nil {
		t.Fatal(build.err)
	}
	return build.path
}

// Mount is one running mount of the binary under test.
type Mount struct {
	Dir    string // the mountpoint
	Remote string // the local path of the remote directory it shows
	Host   *testenv.Host
	args   []string
}

// mountSpec describes how to mount: SSH arguments, destination and -o
// options; the zero value mounts h's directory with h's own config.
type mountSpec struct {
	sshArgs []string // default h.SSHArgs()
	dest    string   // default h.Alias + ":" + h.Dir
	opts    []string // -o options
}

// mount mounts h (as spec says) on a new directory and unmounts it when the
// test ends, failing the test if the daemon then outlives the mount.
func mount(t *testing.T, h *testenv.Host, spec mountSpec) *Mount {
	t.Helper()
	testenv.RequireFUSE(t)
	m := &Mount{Dir: filepath.Join(t.TempDir(), "mnt"), Remote: h.Dir, Host: h}
	if err := os.Mkdir(m.Dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if spec.sshArgs == nil {
		spec.sshArgs = h.SSHArgs()
	}
	if spec.dest == "" {
		spec.dest = h.Alias + ":" + h.Dir
	}
	m.args = append([]string(nil), spec.sshArgs...)
	if len(spec.opts) > 0 {
		m.args = append(m.args, "-o", strings.Join(spec.opts, ","))
	}
	m.args = append(m.args, spec.dest)
	t.Cleanup(func() { m.unmount(t) })
	m.start(t)
	return m
}

// foregroundEnv, when set, runs every mount in the foreground (-f) as a
// child of the test and shows its log when the test fails.
const foregroundEnv = "SSHFSM_E2E_FOREGROUND"

// start runs the binary, which daemonizes and returns once the mount works.
func (m *Mount) start(t *testing.T) {
	t.Helper()
	if os.Getenv(foregroundEnv) != "" {
		m.startForeground(t)
		return
	}
	bin := binary(t) // building it first is not part of the wait
	ctx, cancel := context.WithTimeout(context.Background(), testenv.Patience())
	defer cancel()
	args := append(append([]string(nil), m.args...), m.Dir)
	cmd := exec.CommandContext(ctx, bin, args...)
	out, err := cmd.CombinedOutput()
	if ctx.Err() != nil {
		t.Fatalf("%s did not return within %v: %s", cmd, testenv.Patience(), out)
	}
	if err != nil {
		t.Fatalf("%s: %v\n%s", cmd, err, out)
	}
	if !testenv.MountedAt(m.Dir) {
		t.Fatalf("%s returned success but nothing is mounted at %s\n%s", cmd, m.Dir, out)
	}
	t.Logf("mounted: %s", strings.Join(args, " "))
}

// unmount unmounts and waits for the daemon to exit.
func (m *Mount) unmount(t *testing.T) {
	if t.Failed() {
		t.Logf("sshd log of %s:\n%s", m.Host.Alias, m.Host.Log())
	}
	pid := m.daemonPID()
	if err := testenv.Unmount(m.Dir); err != nil {
		t.Error(err)
	}
	if pid == 0 {
		return
	}
	// The daemon stores what it fetched last into the disk cache before it
	// exits, which takes its time on a loaded machine.
	if !waitExit(pid, testenv.Patience()) {
		t.Errorf("daemon %d still runs %v after unmounting %s; killing it", pid, testenv.Patience(), m.Dir)
		_ = syscall.Kill(pid, syscall.SIGKILL)
		waitExit(pid, testenv.Patience())
	}
}

// daemonPID finds the process of the binary under test serving m, 0 if none.
func (m *Mount) daemonPID() int {
	bin, err := filepath.EvalSymlinks(build.path)
	if err != nil {
		return 0
	}
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		var pid int
		if _, err := fmt.Sscanf(e.Name(), "%d", &pid); err != nil || pid == os.Getpid() {
			continue
		}
		exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid))
		if err != nil || exe != bin {
			continue
		}
		cmdline, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		for _, a := range strings.Split(string(cmdline), "\x00") {
			if a == m.Dir {
				return pid
			}
		}
	}
	return 0
}

// waitExit polls until pid no longer runs (testenv.Alive), at most d.
func waitExit(pid int, d time.Duration) bool {
	return testenv.PollFor(d, func() bool { return !testenv.Alive(pid) })
}

// Path joins names below the mountpoint.
func (m *Mount) Path(names ...string) string {
	return filepath.Join(append([]string{m.Dir}, names...)...)
}

// RemotePath joins names below the served directory, as sshd sees it.
func (m *Mount) RemotePath(names ...string) string {
	return filepath.Join(append([]string{m.Remote}, names...)...)
}

// within runs f in a goroutine and fails the test if it does not return
// within d; a blocked file system call cannot be abandoned any other way.
//
// d is at least testenv.Patience: a wait here detects a hang, it does not
// time the code under test.
func within(t *testing.T, d time.Duration, what string, f func() error) {
	t.Helper()
	d = max(d, testenv.Patience())
	done := make(chan error, 1)
	go func() { done <- f() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	case <-time.After(d):
		t.Fatalf("%s did not finish within %v", what, d)
	}
}

// eventually retries f every 100ms until it succeeds or d passes; each
// attempt itself must finish within d.
// d is at least testenv.Patience.
func eventually(t *testing.T, d time.Duration, what string, f func() error) {
	t.Helper()
	d = max(d, testenv.Patience())
	deadline := time.Now().Add(d)
	var last error
	for {
		done := make(chan error, 1)
		go func() { done <- f() }()
		select {
		case last = <-done:
		case <-time.After(time.Until(deadline)):
			t.Fatalf("%s: an attempt still blocks after %v (previous error: %v)", what, d, last)
		}
		if last == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: still failing after %v: %v", what, d, last)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// startForeground runs the binary with -f and waits for the mount to appear.
func (m *Mount) startForeground(t *testing.T) {
	t.Helper()
	args := append(append([]string{"-f"}, m.args...), m.Dir)
	cmd := exec.Command(binary(t), args...)
	log := &testenv.LogBuffer{}
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() {
		cmd.Wait()
		close(exited)
	}()
	t.Cleanup(func() {
		select {
		case <-exited:
		case <-time.After(15 * time.Second):
			cmd.Process.Kill()
			<-exited
		}
		if t.Failed() {
			t.Logf("log of %s:\n%s", cmd, log.String())
		}
	})
	deadline := time.Now().Add(30 * time.Second)
	for !testenv.MountedAt(m.Dir) {
		select {
		case <-exited:
			t.Fatalf("%s exited before mounting: %v\n%s", cmd, cmd.ProcessState, log.String())
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s did not mount within 30s\n%s", cmd, log.String())
		}
	}
	t.Logf("mounted in the foreground: %s", strings.Join(args, " "))
}

// proxied starts a proxy with options o in front of h and writes an ssh
// config whose alias reaches h through it while still verifying h's host
// key; it returns the proxy, the ssh arguments and the mount's host:dir.
func proxied(t *testing.T, h *testenv.Host, o netproxy.Options) (*netproxy.Proxy, []string, string) {
	t.Helper()
	p, err := netproxy.Listen("127.0.0.1:0", net.JoinHostPort(h.Addr, strconv.Itoa(h.Port)), o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	const alias = "sshfsm-test-proxied"
	cfg := filepath.Join(t.TempDir(), "ssh_config")
	block := h.ConfigBlockVia(alias, "127.0.0.1", p.Port()) + "\tStrictHostKeyChecking yes\n"
	if err := os.WriteFile(cfg, []byte(block), 0o600); err != nil {
		t.Fatal(err)
	}
	return p, []string{"-F", cfg}, alias + ":" + h.Dir
}
