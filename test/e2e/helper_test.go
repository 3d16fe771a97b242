package e2e

import (
	"bufio"
	"crypto/sha256"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// helperEnv makes the test binary act as a small client process instead of
// running tests. Work that holds a file of the mount open with unwritten
// data runs there: every fork of a process closes its close-on-exec
// descriptors in the child, and closing a FUSE file flushes it, so a test
// process holding such a file could not start sshd while the link is down.
//
//	read PATH                        catch SIGINT, print "ready TID", read
//	                                 PATH once with raw system calls on thread
//	                                 TID, print what they returned
//	read-stay PATH                   read, then wait for stdin to close
//	write PATH SIZE SEED PAUSE       write SIZE bytes of content(SEED); after
//	                                 PAUSE bytes print "paused" and wait for a
//	                                 line on stdin; fsync, close, print "done"
const helperEnv = "SSHFSM_E2E_HELPER"

// helperMain runs the helper and reports whether it did.
func helperMain() bool {
	args := strings.Fields(os.Getenv(helperEnv))
	if len(args) == 0 {
		return false
	}
	switch args[0] {
	case "read":
		helperRead(args[1])
	case "read-stay":
		helperRead(args[1])
		io.Copy(io.Discard, os.Stdin) // live on, as an editor or a shell would
	case "write":
		size, _ := strconv.ParseInt(args[2], 10, 64)
		seed, _ := strconv.ParseUint(args[3], 10, 64)
		pause, _ := strconv.ParseInt(args[4], 10, 64)
		if err := helperWrite(args[1], size, seed, pause); err != nil {
			fmt.Println("error:", err)
			os.Exit(1)
		}
		fmt.Println("done")
	default:
		fmt.Println("error: unknown helper", args[0])
		os.Exit(2)
	}
	return true
}

func helperRead(path string) {
	// The signal must reach the thread blocked in the file system, as it
	// does in a single-threaded program; "ready TID" names that thread.
	runtime.LockOSThread()
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGINT)
	fmt.Printf("ready %d\n", syscall.Gettid())
	fd, err := syscall.Open(path, syscall.O_RDONLY, 0)
	if err != nil {
		fmt.Printf("open: %s\n", errnoName(err))
		return
	}
	buf := make([]byte, 1<<20)
	n, err := syscall.Read(fd, buf)
	if err != nil {
		fmt.Printf("read: %s\n", errnoName(err))
	} else {
		fmt.Printf("read: %d bytes\n", n)
	}
	syscall.Close(fd)
}

func helperWrite(path string, size int64, seed uint64, pause int64) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	src := content(seed)
	buf := make([]byte, mib)
	for total := int64(0); total < size; {
		if total == pause {
			fmt.Println("paused")
			if _, err := bufio.NewReader(os.Stdin).ReadString('\n'); err != nil {
				return fmt.Errorf("waiting to resume: %w", err)
			}
		}
		n := min(int64(len(buf)), size-total)
		if total < pause {
			n = min(n, pause-total)
		}
		io.ReadFull(src, buf[:n])
		if _, err := f.Write(buf[:n]); err != nil {
			f.Close()
			return fmt.Errorf("write at offset %d: %w", total, err)
		}
		total += n
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("fsync: %w", err)
	}
	return f.Close()
}

func errnoName(err error) string {
	if e, ok := err.(syscall.Errno); ok {
		switch e {
		case syscall.EINTR:
			return "EINTR"
		case syscall.EIO:
			return "EIO"
		case syscall.ETIMEDOUT:
			return "ETIMEDOUT"
		}
		return fmt.Sprintf("errno %d (%v)", int(e), e)
	}
	return err.Error()
}

// helper is a running helper process.
type helper struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	lines chan string // its output, one line each; closed when it exits
}

// startHelper runs the test binary as a helper with the given arguments;
// the helper is killed when the test ends.
func startHelper(t *testing.T, args ...string) *helper {
	t.Helper()
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), helperEnv+"="+strings.Join(args, " "))
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	h := &helper{cmd: cmd, stdin: stdin, lines: make(chan string, 16)}
	exited := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			h.lines <- sc.Text()
		}
		cmd.Wait()
		close(h.lines)
		close(exited)
	}()
	t.Cleanup(func() {
		cmd.Process.Kill()
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			t.Errorf("helper %d did not exit 10s after SIGKILL", cmd.Process.Pid)
		}
	})
	return h
}

// expect waits up to d for the helper's next line and fails unless it is
// want.
func (h *helper) expect(t *testing.T, want string, d time.Duration) {
	t.Helper()
	select {
	case got, ok := <-h.lines:
		if !ok {
			t.Fatalf("helper exited (%v) while %q was expected", h.cmd.ProcessState, want)
		}
		if got != want {
			t.Fatalf("helper printed %q, want %q", got, want)
		}
	case <-time.After(d):
		t.Fatalf("helper did not print %q within %v", want, d)
	}
}

// next waits up to d for the helper's next line.
func (h *helper) next(t *testing.T, d time.Duration) string {
	t.Helper()
	select {
	case got, ok := <-h.lines:
		if !ok {
			t.Fatalf("helper exited (%v) while output was expected", h.cmd.ProcessState)
		}
		return got
	case <-time.After(d):
		t.Fatalf("helper printed nothing within %v", d)
	}
	return ""
}

func (h *helper) resume(t *testing.T) {
	t.Helper()
	if _, err := io.WriteString(h.stdin, "go\n"); err != nil {
		t.Fatal(err)
	}
}

// contentSum is the SHA-256 of the first size bytes of content(seed).
func contentSum(seed uint64, size int64) [32]byte {
	h := sha256.New()
	io.CopyN(h, content(seed), size)
	return [32]byte(h.Sum(nil))
}
