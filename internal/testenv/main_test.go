package testenv

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hanwen/go-fuse/v2/fs"
)

const leakHelperEnv = "SSHFSM_TESTENV_LEAK_HELPER"

// TestLeakHelper leaves a host, an ssh process and (where FUSE works) a mount
// behind; it only runs as the child of TestMainFailsOnLeaks.
func TestLeakHelper(t *testing.T) {
	if os.Getenv(leakHelperEnv) == "" {
		t.Skip("helper for TestMainFailsOnLeaks")
	}
	h, err := Start(Options{Addr: "127.0.0.3"})
	if err != nil {
		t.Fatal(err)
	}
	ssh := exec.Command("ssh", append(h.SSHArgs(), h.Alias, "exec sleep 60")...)
	if err := ssh.Start(); err != nil {
		t.Fatal(err)
	}
	fmt.Printf("LEAKPID=%d\nLEAKPID=%d\n", h.PID(), ssh.Process.Pid)
	if os.Getenv(leakHelperEnv) == "fuse" {
		mnt := filepath.Join(os.TempDir(), "mnt")
		if err := os.Mkdir(mnt, 0o755); err != nil {
			t.Fatal(err)
		}
		root, err := fs.NewLoopbackRoot(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		if _, err := fs.Mount(mnt, root, &fs.Options{}); err != nil {
			t.Fatal(err)
		}
	}
}

func TestMainFailsOnLeaks(t *testing.T) {
	RequireSSHD(t)
	mode := "nofuse"
	if fuseMissing() == "" {
		mode = "fuse"
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestLeakHelper$", "-test.count=1")
	cmd.Env = append(os.Environ(), leakHelperEnv+"="+mode)
	out, err := cmd.CombinedOutput()
	if err == nil {
		t.Fatalf("Main exited 0 despite leaks:\n%s", out)
	}
	want := []string{"left these behind", "host sshfsm-test-127-0-0-3", "process "}
	if mode == "fuse" {
		want = append(want, "mount fuse")
	}
	for _, w := range want {
		if !strings.Contains(string(out), w) {
			t.Errorf("report lacks %q:\n%s", w, out)
		}
	}
	// Main also removed what it reported.
	for _, m := range regexp.MustCompile(`LEAKPID=(\d+)`).FindAllStringSubmatch(string(out), -1) {
		pid, _ := strconv.Atoi(m[1])
		if Alive(pid) {
			t.Errorf("leaked process %d still runs: %s", pid, cmdline(pid))
		}
	}
}
