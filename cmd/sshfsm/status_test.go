package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"sshfsm/internal/config"
	"sshfsm/internal/control"
)

// privateRuntime points XDG_RUNTIME_DIR, for this test and the sshfsm
// processes it starts, at a fresh directory, so that only the test's own
// mounts are seen. Its path is short: socket paths are limited.
func privateRuntime(t *testing.T) string {
	t.Helper()
	xdg, err := os.MkdirTemp("", "rt")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(xdg) })
	t.Setenv("XDG_RUNTIME_DIR", xdg)
	return filepath.Join(xdg, "sshfsm")
}

// statusJSON runs sshfsm status --json mnt and decodes its output.
func statusJSON(t *testing.T, mnt string) control.Status {
	t.Helper()
	r := sshfsm(t, 10*time.Second, "status", "--json", mnt)
	if r.code != 0 || r.stderr != "" {
		t.Fatalf("status --json: exit %d, stderr %q", r.code, r.stderr)
	}
	var st control.Status
	if err := json.Unmarshal([]byte(r.stdout), &st); err != nil {
		t.Fatalf("status --json does not parse: %v\n%s", err, r.stdout)
	}
	return st
}

func onlyHost(t *testing.T, st control.Status) control.Host {
	t.Helper()
	if len(st.Branches) != 1 || len(st.Branches[0].Hosts) != 1 {
		t.Fatalf("want one branch with one host: %+v", st.Branches)
	}
	return st.Branches[0].Hosts[0]
}

// TestStatusOfMount follows a mount's status through I/O, the loss of its
// host and its unmount.
func TestStatusOfMount(t *testing.T) {
	rt := privateRuntime(t)
	h, ssh := sshHost(t)
	data := strings.Repeat("status", 200000)
	if err := os.WriteFile(filepath.Join(h.Dir, "big"), []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
	mnt := mountAt(t, mountpoint(t), h.Alias+":"+h.Dir, ssh...)

	// Some I/O: a listing, a read, a write, a miss. A mount of one host
	// lists a directory by a tree listing (exec), which tells the
	// server's inode numbers, where it can.
	listed := func() uint64 {
		r := onlyHost(t, statusJSON(t, mnt)).Requests
		return r["OPENDIR"] + r["exec"]
	}
	before := listed()
	if _, err := os.ReadDir(mnt); err != nil {
		t.Fatal(err)
	}
	if listed() == before {
		t.Errorf("the listing is in no request counter")
	}
	if b, err := os.ReadFile(filepath.Join(mnt, "big")); err != nil || len(b) != len(data) {
		t.Fatalf("read: %d bytes, %v", len(b), err)
	}
	if err := os.WriteFile(filepath.Join(mnt, "new"), []byte("written"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(mnt, "missing")); !os.IsNotExist(err) {
		t.Fatalf("stat of a missing name: %v", err)
	}

	st := statusJSON(t, mnt)
	pids := serving(mnt)
	if st.Mount.Mountpoint != mnt || len(pids) != 1 || st.Mount.PID != pids[0] || st.Mount.Program != version {
		t.Errorf("mount %+v; serving pids %v", st.Mount, pids)
	}
	if b := st.Branches[0]; b.Kind != control.KindSingle || b.Dir != h.Dir || b.ReadOnly {
		t.Errorf("branch %+v", b)
	}
	host := onlyHost(t, st)
	if host.Name != h.Alias || host.State != control.StateUp || host.ChannelsUp < 1 || host.Channels != 4 {
		t.Errorf("host %s: state %s, channels %d/%d", host.Name, host.State, host.ChannelsUp, host.Channels)
	}
	if host.Requests["READ"] == 0 || host.Requests["WRITE"] == 0 ||
		host.BytesRead < uint64(len(data)) || host.BytesWritten < 7 || host.LatencyMillis <= 0 {
		t.Errorf("counters after I/O: requests %v, read %d, written %d, latency %v ms",
			host.Requests, host.BytesRead, host.BytesWritten, host.LatencyMillis)
	}
	if c := st.Cache; !c.Enabled || c.ListingHits+c.ListingMisses == 0 || c.NegativeHits == 0 || c.ListingRatio < 0 {
		t.Errorf("cache %+v", c)
	}

	r := sshfsm(t, 10*time.Second, "status", mnt)
	for _, want := range []string{mnt + "  (pid ", "HOST", h.Alias, " up ", "requests: ", "READ ", "listing hits "} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("status output lacks %q:\n%s", want, r.stdout)
		}
	}
	r = sshfsm(t, 10*time.Second, "status", "--json")
	var all []control.Status
	if err := json.Unmarshal([]byte(r.stdout), &all); err != nil || r.code != 0 || len(all) != 1 || all[0].Mount.Mountpoint != mnt {
		t.Errorf("status --json of all mounts: exit %d, %v:\n%s", r.code, err, r.stdout)
	}

	h.Kill()
	deadline := time.Now().Add(15 * time.Second)
	for host = onlyHost(t, statusJSON(t, mnt)); host.State != control.StateReconnecting; host = onlyHost(t, statusJSON(t, mnt)) {
		if time.Now().After(deadline) {
			t.Fatalf("host still %s (%d/%d channels) after sshd was killed", host.State, host.ChannelsUp, host.Channels)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if host.ChannelsUp != 0 {
		t.Errorf("reconnecting with %d channels up", host.ChannelsUp)
	}

	sockets, _ := filepath.Glob(filepath.Join(rt, "*"))
	if len(sockets) != 2 {
		t.Errorf("runtime directory holds %v, want a socket and its sidecar", sockets)
	}
	if out, err := exec.Command("fusermount3", "-u", mnt).CombinedOutput(); err != nil {
		t.Fatalf("fusermount3 -u: %v: %s", err, out)
	}
	waitGone(t, mnt)
	if left, _ := filepath.Glob(filepath.Join(rt, "*")); len(left) != 0 {
		t.Errorf("left after unmount: %v", left)
	}
	r = sshfsm(t, 10*time.Second, "status", mnt)
	expectFailure(t, r, config.ExitMountpoint, mnt+" is not an sshfsm mount")
}

// TestStatusReconnectOff: without reconnect a host that lost its
// channels is down for good. A daemon ended by SIGTERM removes its socket.
func TestStatusReconnectOff(t *testing.T) {
	rt := privateRuntime(t)
	h, ssh := sshHost(t)
	mnt := mountAt(t, mountpoint(t), h.Alias+":"+h.Dir, append(ssh, "-o", "noreconnect,max_conns=1")...)
	h.Kill()
	deadline := time.Now().Add(15 * time.Second)
	for host := onlyHost(t, statusJSON(t, mnt)); host.State != control.StateDown; host = onlyHost(t, statusJSON(t, mnt)) {
		if time.Now().After(deadline) {
			t.Fatalf("host still %s after sshd was killed", host.State)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if opts := strings.Join(statusJSON(t, mnt).Mount.Options, ","); !strings.Contains(opts, "max_conns=1,") || !strings.Contains(opts, "noreconnect") {
		t.Errorf("options summary %q", opts)
	}
	pids := serving(mnt)
	if len(pids) != 1 {
		t.Fatalf("serving pids %v", pids)
	}
	syscall.Kill(pids[0], syscall.SIGTERM)
	waitGone(t, mnt)
	if left, _ := filepath.Glob(filepath.Join(rt, "*")); len(left) != 0 {
		t.Errorf("left after SIGTERM: %v", left)
	}
}

func TestStatusWithoutMounts(t *testing.T) {
	privateRuntime(t)
	r := sshfsm(t, 10*time.Second, "status")
	if r.code != 0 || r.stdout != "no sshfsm mounts\n" || r.stderr != "" {
		t.Errorf("status: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
	r = sshfsm(t, 10*time.Second, "status", "--json")
	if r.code != 0 || r.stdout != "[]\n" {
		t.Errorf("status --json: exit %d, stdout %q", r.code, r.stdout)
	}
}

func TestStatusOfOtherPaths(t *testing.T) {
	privateRuntime(t)
	dir := t.TempDir()
	cases := []struct {
		args []string
		code config.ExitCode
		want string
	}{
		{[]string{"status", dir}, config.ExitMountpoint, dir + " is not an sshfsm mount"},
		{[]string{"status", "/proc"}, config.ExitMountpoint, "/proc is not an sshfsm mount (it is a proc mount)"},
		{[]string{"status", "--json", "/proc"}, config.ExitMountpoint, "/proc is not an sshfsm mount"},
		{[]string{"status", dir, dir}, config.ExitUsage, "sshfsm status takes at most one mountpoint, got 2 arguments"},
		{[]string{"status", "--yaml"}, config.ExitUsage, "unknown option --yaml (see sshfsm status --help)"},
	}
	for _, tc := range cases {
		r := sshfsm(t, 10*time.Second, tc.args...)
		expectFailure(t, r, tc.code, tc.want)
		if r.stdout != "" {
			t.Errorf("%q: stdout %q", tc.args, r.stdout)
		}
	}
	r := sshfsm(t, 10*time.Second, "status", "--help")
	if r.code != 0 || r.stdout != config.SubcommandHelp("status") {
		t.Errorf("status --help: exit %d, %q", r.code, r.stdout)
	}
}

// TestStatusStoppedDaemon: a daemon that cannot answer (stopped) costs the
// client its timeout and one clear line, never a hang.
func TestStatusStoppedDaemon(t *testing.T) {
	privateRuntime(t)
	h, ssh := sshHost(t)
	mnt := mountAt(t, mountpoint(t), h.Alias+":"+h.Dir, ssh...)
	pids := serving(mnt)
	if len(pids) != 1 {
		t.Fatalf("serving pids %v", pids)
	}
	syscall.Kill(pids[0], syscall.SIGSTOP)
	defer syscall.Kill(pids[0], syscall.SIGCONT)
	// kill returns before every thread has stopped; a busy machine lets
	// the daemon answer one more query meanwhile.
	if !waitStopped(pids[0], 5*time.Second) {
		t.Fatalf("daemon %d not stopped 5s after SIGSTOP", pids[0])
	}
	for _, args := range [][]string{{"status", mnt}, {"status"}} {
		r := sshfsm(t, 15*time.Second, args...)
		expectFailure(t, r, config.ExitMount, "the sshfsm serving "+mnt+" (pid "+strconv.Itoa(pids[0])+") is not answering (no reply within 3s)")
		if r.took > 6*time.Second {
			t.Errorf("%q took %v", args, r.took)
		}
	}
}

// waitStopped waits until every thread of pid is stopped (state T).
func waitStopped(pid int, d time.Duration) bool {
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		tasks, _ := filepath.Glob(filepath.Join("/proc", strconv.Itoa(pid), "task", "*", "stat"))
		stopped := len(tasks) > 0
		for _, f := range tasks {
			b, err := os.ReadFile(f)
			i := bytes.LastIndexByte(b, ')')
			if err != nil || i < 0 || i+2 >= len(b) || (b[i+2] != 'T' && b[i+2] != 't') {
				stopped = false
				break
			}
		}
		if stopped {
			return true
		}
		time.Sleep(10 * time.Millisecond)
	}
	return false
}
