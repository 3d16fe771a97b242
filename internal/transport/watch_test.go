package transport

import (
	"bufio"
	"context"
	"errors"
	"io"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"sshfsm/internal/testenv"
)

// A stream may stay silent far longer than Options.Timeout, and its
// standard error arrives line by line while it runs.
func TestStreamSilentAndStderr(t *testing.T) {
	th := testenv.StartHost(t, "127.0.0.2")
	h := dialSSH(t, th, func(o *Options) { o.Timeout = time.Second })
	var mu sync.Mutex
	var lines []string
	sawFirst := make(chan struct{})
	errLine := func(l string) {
		mu.Lock()
		lines = append(lines, l)
		mu.Unlock()
		if l == "first" {
			close(sawFirst)
		}
	}
	var out string
	err := h.Stream(bg, "echo first >&2; sleep 2.5; echo done; echo last >&2", func(r io.Reader) error {
		select {
		case <-sawFirst:
		case <-time.After(10 * time.Second):
			return errors.New("the first line of standard error did not come while the command ran")
		}
		b, err := io.ReadAll(r)
		out = string(b)
		return err
	}, errLine)
	if err != nil || out != "done\n" {
		t.Fatalf("stream: %q, %v", out, err)
	}
	mu.Lock()
	defer mu.Unlock()
	if strings.Join(lines, ",") != "first,last" {
		t.Errorf("standard error lines %q", lines)
	}
	if n := h.Stats().Requests["watch"]; n != 1 {
		t.Errorf("counted %d streams", n)
	}
}

// The remote command sees end of file on its standard input when the
// stream stops, whether its reader returns or its context ends: a command
// waiting for that ends on the server too.
func TestStreamStdinEndsRemoteCommand(t *testing.T) {
	th := testenv.StartHost(t, "127.0.0.2")
	h := dialSSH(t, th, nil)
	// sleep stands for a watcher that would never notice on its own.
	cmd := "sleep 300 </dev/null & p=$!; echo $p; read -r line; kill $p"
	for _, how := range []string{"reader returns", "context ends"} {
		ctx, cancel := context.WithCancel(bg)
		pids := make(chan int, 1)
		err := h.Stream(ctx, cmd, func(r io.Reader) error {
			l, err := bufio.NewReader(r).ReadString('\n')
			pid, _ := strconv.Atoi(strings.TrimSpace(l))
			pids <- pid
			// While the stream runs, so does the command.
			time.Sleep(300 * time.Millisecond)
			if pid <= 0 || !running(pid) {
				return errors.New("the command did not wait for its standard input to end")
			}
			if err != nil || how == "reader returns" {
				return err
			}
			cancel()
			_, err = io.Copy(io.Discard, r)
			return err
		}, nil)
		cancel()
		pid := <-pids
		if pid <= 0 {
			t.Fatalf("%s: no pid (%v)", how, err)
		}
		if how == "context ends" && !errors.Is(err, context.Canceled) {
			t.Errorf("%s: error %v", how, err)
		}
		if err != nil && how == "reader returns" {
			t.Errorf("%s: error %v", how, err)
		}
		t0 := time.Now()
		deadline := t0.Add(5 * time.Second)
		for running(pid) {
			if time.Now().After(deadline) {
				syscall.Kill(pid, syscall.SIGKILL)
				t.Fatalf("%s: the remote command's child %d still runs", how, pid)
			}
			time.Sleep(20 * time.Millisecond)
		}
		t.Logf("%s: the remote command ended %v after the stream", how, time.Since(t0).Round(time.Millisecond))
	}
}

func TestStreamWithoutSSH(t *testing.T) {
	h, _, _ := dialTest(t, 1, nil)
	err := h.Stream(bg, "true", func(io.Reader) error { return nil }, nil)
	if !errors.Is(err, ErrNoExec) {
		t.Fatalf("got %v", err)
	}
}

// running reports whether process pid runs (a zombie does not).
func running(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i > 0 && i+2 < len(s) && s[i+2] != 'Z'
}
