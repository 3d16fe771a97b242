package journal

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// The crash test re-runs the test binary as a child that appends to a
// journal and marks changes done, under load, until it is killed.
const (
	crashChildEnv = "JOURNAL_CRASH_DIR"
	crashSeedEnv  = "JOURNAL_CRASH_SEED"
)

// crashOptions: small segments and spill size, so that a run rotates,
// removes segments and spills.
func crashOptions(dir string) Options {
	return Options{Dir: dir, SegmentSize: 32 << 10, SpillSize: 700}
}

// crashChange is the change named path: everything in it follows from
// the path, so that a replayed change can be checked whole, and one never
// appended cannot pass. path is /r<run>/g<goroutine>/<n>-<op>-<size>.
func crashChange(path string) (Change, bool) {
	f := strings.Split(path, "-")
	if len(f) != 3 {
		return Change{}, false
	}
	size, err := strconv.Atoi(f[2])
	if err != nil || size < 0 || size > 1<<20 {
		return Change{}, false
	}
	c := Change{Host: "u@h:22", Branch: "/srv", Path: path}
	switch f[1] {
	case "write":
		c.Op, c.Offset, c.Data = Write, int64(size)*3, content(path, size)
	case "create":
		c.Op, c.Mode, c.Flags = Create, 0o644, uint32(size)
	case "rename":
		c.Op, c.NewPath, c.Flags = Rename, path+".to", 1
	case "setattr":
		c.Op, c.Attr = Setattr, Attr{Set: SetMode | SetMtime, Mode: 0o600, Mtime: int64(size) * 1e9}
	default:
		return Change{}, false
	}
	return c, true
}

var crashOps = []string{"write", "write", "write", "create", "rename", "setattr"}

// crashChild appends and marks done in the journal in $JOURNAL_CRASH_DIR
// until killed. It prints "ready", then "A <seq> <path>" once an Append
// returned, "d <seq>" before a Done and "D <seq>" once it returned; a
// line is one write, whole.
func crashChild() int {
	seed, _ := strconv.ParseUint(os.Getenv(crashSeedEnv), 10, 64)
	j, replayed, err := Open(crashOptions(os.Getenv(crashChildEnv)))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	acked := make(chan uint64, 1<<16)
	for _, c := range replayed {
		acked <- c.Seq
	}
	say := func(format string, args ...any) {
		_, _ = os.Stdout.WriteString(fmt.Sprintf(format, args...))
	}
	say("ready\n")
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(seed, uint64(g)))
			for n := 0; ; n++ {
				size := rng.IntN(1500)
				path := fmt.Sprintf("/r%d/g%d/%d-%s-%d", seed, g, n, crashOps[rng.IntN(len(crashOps))], size)
				c, _ := crashChange(path)
				seq, err := j.Append(context.Background(), c)
				if err != nil {
					fmt.Fprintln(os.Stderr, err)
					os.Exit(1)
				}
				say("A %d %s\n", seq, path)
				acked <- seq
			}
		}()
	}
	go func() {
		rng := rand.New(rand.NewPCG(seed, 99))
		for {
			var seqs []uint64
			for range 1 + rng.IntN(6) {
				if s := <-acked; rng.IntN(3) != 0 {
					seqs = append(seqs, s)
				}
			}
			if len(seqs) == 0 {
				continue
			}
			var b strings.Builder
			for _, s := range seqs {
				fmt.Fprintf(&b, "d %d\n", s)
			}
			say("%s", b.String())
			if err := j.Done(seqs...); err != nil {
				fmt.Fprintln(os.Stderr, err)
				os.Exit(1)
			}
			b.Reset()
			for _, s := range seqs {
				fmt.Fprintf(&b, "D %d\n", s)
			}
			say("%s", b.String())
		}
	}()
	wg.Wait()
	return 0
}

// TestCrash kills a child appending under load at random points, many
// times over the same journal: every change whose Append returned and
// whose Done did not comes back, whole; nothing done comes back; and
// nothing comes back that the child did not append.
func TestCrash(t *testing.T) {
	dir := t.TempDir()
	rng := rand.New(rand.NewPCG(20261128, 2))
	pending := map[uint64]string{} // acknowledged, not done: must come back
	done := map[uint64]bool{}      // done: must not
	seen := map[uint64]bool{}      // acknowledged or replayed before: back only if pending
	var doing map[uint64]bool      // being done at the kill: may come back or not
	const runs = 15
	appended, replayedUnacked, doneAtKill := 0, 0, 0
	for run := range runs {
		lines := runCrashChild(t, dir, run, time.Duration(rng.Int64N(int64(300*time.Millisecond))))
		doing = map[uint64]bool{}
		for _, l := range lines {
			f := strings.Fields(l)
			seq, err := strconv.ParseUint(f[1], 10, 64)
			if err != nil {
				t.Fatalf("child said %q", l)
			}
			switch f[0] {
			case "A":
				pending[seq] = f[2]
				seen[seq] = true
				appended++
			case "d":
				doing[seq] = true
			case "D":
				delete(pending, seq)
				delete(doing, seq)
				done[seq] = true
			}
		}

		j, got, err := Open(crashOptions(dir))
		if err != nil {
			t.Fatalf("run %d: open after kill: %v", run, err)
		}
		back := map[uint64]bool{}
		for i := range got {
			c := &got[i]
			if back[c.Seq] {
				t.Fatalf("run %d: change %d replayed twice", run, c.Seq)
			}
			back[c.Seq] = true
			if done[c.Seq] {
				t.Fatalf("run %d: change %d replayed after its Done returned", run, c.Seq)
			}
			if _, ok := pending[c.Seq]; !ok && seen[c.Seq] {
				t.Fatalf("run %d: change %d came back after it was gone", run, c.Seq)
			}
			if p, ok := pending[c.Seq]; ok && p != c.Path {
				t.Fatalf("run %d: change %d replayed as %s, appended as %s", run, c.Seq, c.Path, p)
			} else if !ok {
				replayedUnacked++ // appended, killed before Append returned
			}
			checkCrashChange(t, j, c)
		}
		for seq, p := range pending {
			if !back[seq] && !doing[seq] {
				t.Fatalf("run %d: acknowledged change %d (%s) lost", run, seq, p)
			}
			if !back[seq] {
				doneAtKill++
			}
		}
		// What came back is the journal's now: the next child drains it.
		pending = map[uint64]string{}
		for i := range got {
			pending[got[i].Seq] = got[i].Path
			seen[got[i].Seq] = true
		}
		if err := j.Close(); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("%d appends acknowledged, %d done; in flight at the kill: %d appends that came back, %d dones that held",
		appended, len(done), replayedUnacked, doneAtKill)
	if appended == 0 || len(done) == 0 {
		t.Fatal("crash children appended or drained nothing")
	}
}

// checkCrashChange checks a replayed change against the one its path
// names.
func checkCrashChange(t *testing.T, j *Journal, c *Change) {
	t.Helper()
	want, ok := crashChange(c.Path)
	if !ok {
		t.Fatalf("replayed change %d of a path never appended: %q", c.Seq, c.Path)
	}
	if c.Op == Write {
		data, err := j.Data(c)
		if err != nil {
			t.Fatalf("change %d: %v", c.Seq, err)
		}
		if !bytes.Equal(data, want.Data) {
			t.Fatalf("change %d (%s): wrong data", c.Seq, c.Path)
		}
	}
	got := *c
	got.Seq, got.At, got.Data, got.Len, got.Spill, got.SpillCRC = 0, 0, nil, 0, "", 0
	want.Data = nil
	if fmt.Sprintf("%+v", got) != fmt.Sprintf("%+v", want) {
		t.Fatalf("change %d back as %+v, want %+v", c.Seq, got, want)
	}
}

// runCrashChild starts a child on dir, lets it work for d after it is
// ready, kills it with SIGKILL and returns the lines it printed.
func runCrashChild(t *testing.T, dir string, seed int, d time.Duration) []string {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), crashChildEnv+"="+dir, crashSeedEnv+"="+strconv.Itoa(seed))
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	ready := make(chan bool, 1)
	var lines []string
	read := make(chan struct{})
	go func() {
		defer close(read)
		r := bufio.NewReader(out)
		first, _ := r.ReadString('\n')
		ready <- first == "ready\n"
		for {
			l, err := r.ReadString('\n')
			if err != nil {
				return // a line cut short was never written whole: never
			}
			lines = append(lines, strings.TrimSuffix(l, "\n"))
		}
	}()
	if !<-ready {
		_ = cmd.Process.Kill()
		<-read
		_ = cmd.Wait()
		t.Fatalf("crash child did not start: %s", stderr.String())
	}
	time.Sleep(d) // a random point of the child's work, not a wait for anything
	_ = cmd.Process.Signal(syscall.SIGKILL)
	<-read
	err = cmd.Wait()
	ws, _ := cmd.ProcessState.Sys().(syscall.WaitStatus)
	if !ws.Signaled() {
		t.Fatalf("crash child ended before it was killed (%v): %s", err, stderr.String())
	}
	return lines
}
