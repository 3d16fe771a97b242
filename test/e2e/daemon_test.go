package e2e

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"sshfsm/internal/testenv"
)

// children lists the pids whose parent is pid.
func children(pid int) []int {
	var out []int
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		var c int
		if _, err := fmt.Sscanf(e.Name(), "%d", &c); err != nil {
			continue
		}
		stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", c))
		if err != nil {
			continue
		}
		s := string(stat)
		i := strings.LastIndexByte(s, ')')
		var state byte
		var ppid int
		if i < 0 {
			continue
		}
		if _, err := fmt.Sscanf(s[i+2:], "%c %d", &state, &ppid); err == nil && ppid == pid {
			out = append(out, c)
		}
	}
	return out
}

// TestDaemonKilled SIGKILLs the daemon: the dead mount must report an error
// instead of hanging, fusermount3 -u must remove it, the daemon's ssh
// processes must go away, and a new mount on the same point must work.
func TestDaemonKilled(t *testing.T) {
	h := testenv.StartHost(t, "127.0.0.2")
	m := mount(t, h, mountSpec{})
	if err := os.WriteFile(m.Path("kept"), []byte("still here"), 0o644); err != nil {
		t.Fatal(err)
	}
	pid := m.daemonPID()
	if pid == 0 {
		t.Fatalf("no daemon process found serving %s", m.Dir)
	}
	kids := children(pid)
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if !waitExit(pid, testenv.Patience()) {
		t.Fatalf("daemon %d still runs long after SIGKILL", pid)
	}

	within(t, 5*time.Second, "stat on the dead mount", func() error {
		_, err := os.Stat(m.Path("kept"))
		if !errors.Is(err, syscall.ENOTCONN) && !errors.Is(err, syscall.ECONNABORTED) {
			return fmt.Errorf("stat = %v, want ENOTCONN or ECONNABORTED", err)
		}
		return nil
	})
	for _, k := range kids {
		if !waitExit(k, testenv.Patience()) {
			t.Errorf("daemon child %d (%s) still runs long after the daemon died", k, cmdline(k))
		}
	}

	// sshfsm status names the dead mount and how to remove it, and fails,
	// listing every mount or asked about this one, and again when asked
	// twice.
	for _, args := range [][]string{{"status"}, {"status"}, {"status", m.Dir}} {
		var stderr bytes.Buffer
		st := exec.Command(binary(t), args...)
		st.Stderr = &stderr
		err := st.Run()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 6 ||
			!strings.Contains(stderr.String(), m.Dir) || !strings.Contains(stderr.String(), "fusermount3 -uz") {
			t.Errorf("sshfsm %q after the daemon was killed: %v, stderr %q; want exit 6 naming %s and fusermount3 -uz", args, err, stderr.String(), m.Dir)
		}
	}

	out, err := exec.Command("fusermount3", "-u", m.Dir).CombinedOutput()
	if err != nil {
		t.Fatalf("fusermount3 -u %s: %v: %s", m.Dir, err, out)
	}
	if testenv.MountedAt(m.Dir) {
		t.Fatalf("%s is still mounted after fusermount3 -u", m.Dir)
	}

	m.start(t)
	within(t, 30*time.Second, "reading through the new mount", func() error {
		got, err := os.ReadFile(m.Path("kept"))
		if err != nil || string(got) != "still here" {
			return fmt.Errorf("kept = %q, %v; want %q", got, err, "still here")
		}
		return nil
	})
}

func cmdline(pid int) string {
	b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	return strings.TrimSpace(strings.ReplaceAll(string(b), "\x00", " "))
}
