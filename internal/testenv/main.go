package testenv

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"sshfsm/internal/mountinfo"
	"strings"
	"testing"
	"time"
)

// RunEnv is the environment variable Main sets to a value unique to one test
// binary run; every process the tests start inherits it, which is how Main
// recognises the processes they leave behind.
const RunEnv = "SSHFSM_TESTENV_RUN"

// watched are the process names that must not outlive a test run.
var watched = map[string]bool{
	"sshd": true, "sshd-session": true, "sshd-auth": true,
	"ssh": true, "sftp-server": true, "sshfsm": true,
}

// Main runs the tests of a package and exits. Use it as
//
//	func TestMain(m *testing.M) { testenv.Main(m) }
//
// It points TMPDIR at a fresh directory for the run, and afterwards fails
// the run, naming the culprits, if a host was not closed, anything is still
// mounted below that directory, or an ssh, sshd, sftp-server or sshfsm
// process started by the tests still runs. It then removes what was left.
func Main(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	marker := fmt.Sprintf("%d-%d", os.Getpid(), time.Now().UnixNano())
	_ = os.Setenv(RunEnv, marker)
	tmp, err := os.MkdirTemp("", "sshfsm-t")
	if err != nil {
		fmt.Fprintln(os.Stderr, "testenv:", err)
		return 1
	}
	if tmp, err = filepath.EvalSymlinks(tmp); err != nil {
		fmt.Fprintln(os.Stderr, "testenv:", err)
		return 1
	}
	_ = os.Setenv("TMPDIR", tmp)
	// Mounts started by the tests keep their disk caches in the run's
	// directory, never the user's.
	userCacheHome, userCacheHomeSet = os.LookupEnv("XDG_CACHE_HOME")
	_ = os.Setenv("XDG_CACHE_HOME", filepath.Join(tmp, "cache"))

	flag.Parse() // so that abortBeforeTimeout sees -test.timeout
	stop := abortBeforeTimeout(tmp)
	code := m.Run()
	stop()

	leaks := Leaks(tmp, RunEnv+"="+marker, 5*time.Second)
	if len(leaks) > 0 {
		fmt.Fprintln(os.Stderr, "testenv: FAIL: the tests left these behind:")
		for _, l := range leaks {
			fmt.Fprintln(os.Stderr, "\t"+l)
		}
		code = 1
	}
	if cleanup(tmp, RunEnv+"="+marker) {
		_ = os.RemoveAll(tmp)
	} else {
		fmt.Fprintf(os.Stderr, "testenv: %s is left in place: something is still mounted below it\n", tmp)
		code = 1
	}
	return code
}

// XDG_CACHE_HOME as Main found it, for GoCommand.
var (
	userCacheHome    string
	userCacheHomeSet bool
)

// GoCommand returns a go command for a test to run, e.g. the build of the
// binary under test. It finds the user's build cache: Main points
// XDG_CACHE_HOME at the run's directory, where go would find an empty
// cache and compile every package again, minutes on a loaded machine.
func GoCommand(args ...string) *exec.Cmd {
	cmd := exec.Command("go", args...)
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "XDG_CACHE_HOME=") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	if userCacheHomeSet {
		cmd.Env = append(cmd.Env, "XDG_CACHE_HOME="+userCacheHome)
	}
	return cmd
}

// Leaks lists, one line each, the hosts not closed, the mounts below dir and
// the watched processes whose environment holds marker (RunEnv=value). It
// polls for up to settle for them to go away before reporting.
func Leaks(dir, marker string, settle time.Duration) []string {
	deadline := time.Now().Add(settle)
	for {
		leaks := leaksNow(dir, marker)
		if len(leaks) == 0 || time.Now().After(deadline) {
			return leaks
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func leaksNow(dir, marker string) []string {
	var out []string
	live.Lock()
	for h := range live.hosts {
		out = append(out, fmt.Sprintf("host %s (%s) was not closed", h.Alias, h.portString()))
	}
	live.Unlock()
	for _, m := range mountsBelow(dir) {
		out = append(out, fmt.Sprintf("mount %s at %s (%s)", m.FSType, m.Point, m.Source))
	}
	for _, pid := range markedProcs(marker, dir) {
		out = append(out, fmt.Sprintf("process %d: %s", pid, cmdline(pid)))
	}
	sort.Strings(out)
	return out
}

// cleanup closes leftover hosts, unmounts leftover mounts and kills leftover
// processes; it reports whether nothing is mounted below dir any more.
func cleanup(dir, marker string) bool {
	live.Lock()
	var hosts []*Host
	for h := range live.hosts {
		hosts = append(hosts, h)
	}
	live.Unlock()
	for _, h := range hosts {
		h.Close()
	}
	for _, m := range mountsBelow(dir) {
		// A leftover mount may be served by this very process, with a
		// request still waiting on it: unanswered, the process could never
		// exit.
		_ = mountinfo.AbortFUSE(m.Point)
		_ = Unmount(m.Point)
	}
	killTrees(markedProcs(marker, dir))
	return len(mountsBelow(dir)) == 0
}

func mountsBelow(dir string) []Mount {
	ms, _ := Mounts()
	var out []Mount
	for _, m := range ms {
		if strings.HasPrefix(m.Point, dir+"/") {
			out = append(out, m)
		}
	}
	return out
}

// markedProcs returns the live watched processes carrying marker, the sshd
// processes whose command line names a file below dir (sshd rewrites its
// environment area for its process title) and everything below those,
// except this process.
func markedProcs(marker, dir string) []int {
	seen := map[int]bool{}
	var out []int
	add := func(pid int) {
		if !seen[pid] && pid != os.Getpid() {
			seen[pid] = true
			out = append(out, pid)
		}
	}
	for _, p := range procs() {
		if p.state == 'Z' || !watched[p.comm] {
			continue
		}
		sshdHere := strings.HasPrefix(p.comm, "sshd") && strings.Contains(cmdline(p.pid), dir+"/")
		if sshdHere || environHas(p.pid, marker) {
			add(p.pid)
			for _, d := range descendants(p.pid) {
				add(d)
			}
		}
	}
	return out
}
