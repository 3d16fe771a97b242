package contentcache

import (
	"bufio"
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

// The crash test re-runs the test binary as a child that works on a
// cache until it is killed.
const (
	crashChildEnv  = "CONTENTCACHE_CRASH_DIR"
	crashSeedEnv   = "CONTENTCACHE_CRASH_SEED"
	crashWrongData = 3
)

func crashWorkload() *workload { return newWorkload(16, 10) }

// crashChild works on the cache in $CONTENTCACHE_CRASH_DIR with two
// goroutines until killed; it prints "ready" once working and exits with
// crashWrongData if the cache ever gives back wrong bytes.
func crashChild() int {
	seed, _ := strconv.ParseUint(os.Getenv(crashSeedEnv), 10, 64)
	c, err := Open(Options{
		Dir: os.Getenv(crashChildEnv), BlockSize: testBS, MaxSize: 300 << 10, MinFree: 1,
		boot: bootA, touchEvery: time.Nanosecond,
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	w := crashWorkload()
	fmt.Println("ready")
	var wg sync.WaitGroup
	for g := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(seed, uint64(g)))
			for {
				if err := w.step(c, rng); err != nil {
					fmt.Fprintln(os.Stderr, err)
					os.Exit(crashWrongData)
				}
			}
		}()
	}
	wg.Wait()
	return 0
}

func TestCrash(t *testing.T) {
	dir := t.TempDir()
	rng := rand.New(rand.NewPCG(20261122, 1))
	w := crashWorkload()
	const runs = 15
	hits := 0
	for run := range runs {
		runCrashChild(t, dir, run, time.Duration(rng.Int64N(int64(150*time.Millisecond))))
		// Odd runs check as if the machine had rebooted since.
		boot := bootA
		if run%2 == 1 {
			boot = bootB
		}
		c := openCache(t, dir, func(o *Options) { o.boot = boot })
		// checkStore also fills everything; Forget most so that children
		// have work, and count what they stored of those.
		for i, h := range w.checkStore(t, c) {
			if run > 0 && (i+run-1)%3 != 0 {
				hits += h
			}
		}
		for i, k := range w.keys {
			if (i+run)%3 != 0 {
				c.Forget(k.Host, k.Path)
			}
		}
		waitJobs(t, c)
		_ = c.Close()
	}
	t.Logf("children stored %d blocks of files forgotten before they ran", hits)
	if hits == 0 {
		t.Fatal("crash children stored nothing")
	}
}

// runCrashChild starts a child on dir, lets it work for d and kills it
// with SIGKILL.
func runCrashChild(t *testing.T, dir string, seed int, d time.Duration) {
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
	go func() {
		line, _ := bufio.NewReader(out).ReadString('\n')
		ready <- line == "ready\n"
	}()
	select {
	case ok := <-ready:
		if !ok {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
			t.Fatalf("crash child did not start: %s", stderr.String())
		}
	case <-time.After(30 * time.Second):
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		t.Fatal("crash child not ready after 30s")
	}
	time.Sleep(d)
	_ = cmd.Process.Signal(syscall.SIGKILL)
	err = cmd.Wait()
	ws, _ := cmd.ProcessState.Sys().(syscall.WaitStatus)
	if !ws.Signaled() {
		t.Fatalf("crash child ended before it was killed (%v): %s", err, stderr.String())
	}
}
