package testenv

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// proc is one entry of /proc.
type proc struct {
	pid   int
	ppid  int
	comm  string
	state byte
}

// procs lists every process visible in /proc.
func procs() []proc {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var out []proc
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if p, ok := readProc(pid); ok {
			out = append(out, p)
		}
	}
	return out
}

// readProc parses /proc/pid/stat; ok is false when the process is gone.
func readProc(pid int) (proc, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return proc{}, false
	}
	// pid (comm) state ppid ...; comm may hold spaces and parentheses.
	open, closing := bytes.IndexByte(b, '('), bytes.LastIndexByte(b, ')')
	if open < 0 || closing < open {
		return proc{}, false
	}
	f := strings.Fields(string(b[closing+1:]))
	if len(f) < 2 {
		return proc{}, false
	}
	ppid, _ := strconv.Atoi(f[1])
	return proc{pid: pid, ppid: ppid, comm: string(b[open+1 : closing]), state: f[0][0]}, true
}

// Alive reports whether process pid still runs: it exists and is not a
// zombie, or it is a zombie whose other threads are still exiting. A
// thread group's leader turns zombie before its other threads have
// exited, and until they have they hold the process's files, /dev/fuse
// among them: a request the kernel hands one of them fails with EIO, not
// with the ENOTCONN of a connection that is gone.
func Alive(pid int) bool {
	p, ok := readProc(pid)
	switch {
	case !ok || p.state == 'X':
		return false
	case p.state != 'Z':
		return true
	}
	tasks, err := os.ReadDir("/proc/" + strconv.Itoa(pid) + "/task")
	return err == nil && len(tasks) > 1
}

// descendants returns every live process below pid, children first.
func descendants(pid int) []int {
	kids := map[int][]int{}
	for _, p := range procs() {
		if p.state != 'Z' {
			kids[p.ppid] = append(kids[p.ppid], p.pid)
		}
	}
	var out []int
	queue := []int{pid}
	for len(queue) > 0 {
		cur := queue[0]
		queue = queue[1:]
		for _, k := range kids[cur] {
			out = append(out, k)
			queue = append(queue, k)
		}
	}
	return out
}

// killTree stops pid and every process below it, then kills them all with
// SIGKILL, so no process of the tree can fork a survivor in between. It waits
// up to five seconds for the processes to disappear.
func killTree(pid int) { killTrees([]int{pid}) }

// killTrees is killTree for several roots at once: all are stopped before
// any is killed, so that no pid of the set is reused in between.
func killTrees(roots []int) {
	stopped := map[int]bool{}
	for _, p := range roots {
		stopped[p] = true
		_ = syscall.Kill(p, syscall.SIGSTOP)
	}
	for range 5 {
		grew := false
		for _, root := range roots {
			for _, d := range descendants(root) {
				if !stopped[d] {
					stopped[d] = true
					grew = true
					_ = syscall.Kill(d, syscall.SIGSTOP)
				}
			}
		}
		if !grew {
			break
		}
	}
	for p := range stopped {
		_ = syscall.Kill(p, syscall.SIGKILL)
	}
	waitGone(stopped, 5*time.Second)
}

// waitGone polls until no pid of set is alive or d has passed.
func waitGone(set map[int]bool, d time.Duration) {
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		left := false
		for p := range set {
			if Alive(p) {
				left = true
				break
			}
		}
		if !left {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// environHas reports whether process pid carries the environment entry kv.
func environHas(pid int, kv string) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/environ")
	if err != nil {
		return false
	}
	for _, e := range bytes.Split(b, []byte{0}) {
		if string(e) == kv {
			return true
		}
	}
	return false
}

// cmdline returns the NUL-separated argv of pid joined by spaces.
func cmdline(pid int) string {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(bytes.ReplaceAll(b, []byte{0}, []byte{' '})))
}

// KillSSHD kills the sshd whose pid is in pidFile, with all its sessions,
// provided it still runs with config file cfg (a recycled pid is left alone).
// A missing pid file is not an error.
func KillSSHD(pidFile, cfg string) error {
	b, err := os.ReadFile(pidFile)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	} else if err != nil {
		return err
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		return errors.New("bad pid file " + pidFile)
	}
	if cfg, err = filepath.Abs(cfg); err != nil {
		return err
	}
	if Alive(pid) && strings.Contains(cmdline(pid), cfg) {
		killTree(pid)
	}
	return nil
}
