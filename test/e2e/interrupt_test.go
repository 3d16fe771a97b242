package e2e

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"syscall"
	"testing"
	"time"

	"sshfsm/internal/testenv"
)

// TestInterruptedCallsTakeNoEffect interrupts read, unlink, mkdir and rename
// with a stream of harmless signals (SIGURG, which the Go runtime uses for
// preemption and which makes the kernel send FUSE interrupts). The mount
// ignores interrupts for such signals, so no call may fail with EINTR; and
// if one did, it must have changed nothing on the server.
func TestInterruptedCallsTakeNoEffect(t *testing.T) {
	h := testenv.StartHost(t, "127.0.0.2")
	m := mount(t, h, mountSpec{})
	const n = 200
	for i := range n {
		if err := os.WriteFile(h.Dir+fmt.Sprintf("/u%d", i), []byte(fmt.Sprint(i)), 0o644); err != nil {
			t.Fatal(err)
		}
	}

	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	pid, tid := os.Getpid(), syscall.Gettid()
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-stop:
				return
			default:
			}
			syscall.Tgkill(pid, tid, syscall.SIGURG)
			time.Sleep(20 * time.Microsecond)
		}
	}()
	defer func() { close(stop); <-done }()

	exists := func(p string) bool {
		_, err := os.Lstat(p)
		return err == nil
	}
	interrupted := 0
	deadline := time.Now().Add(60 * time.Second)
	for i := 0; i < n && time.Now().Before(deadline); i++ {
		ops := []struct {
			name string
			call func() error
			done func() bool // whether the server shows the call's effect; nil for a read
		}{
			{"read", func() error { return readRaw(m.Path(fmt.Sprintf("u%d", i)), fmt.Sprint(i)) }, nil},
			{"unlink", func() error { return syscall.Unlink(m.Path(fmt.Sprintf("u%d", i))) },
				func() bool { return !exists(h.Dir + fmt.Sprintf("/u%d", i)) }},
			{"mkdir", func() error { return syscall.Mkdir(m.Path(fmt.Sprintf("d%d", i)), 0o755) },
				func() bool { return exists(h.Dir + fmt.Sprintf("/d%d", i)) }},
			{"rename", func() error {
				return syscall.Rename(m.Path(fmt.Sprintf("d%d", i)), m.Path(fmt.Sprintf("r%d", i)))
			}, func() bool { return exists(h.Dir + fmt.Sprintf("/r%d", i)) }},
		}
		for _, op := range ops {
			var err error
			eintr := 0
			for {
				err = op.call()
				if !errors.Is(err, syscall.EINTR) {
					break
				}
				interrupted++
				eintr++
				if op.done != nil && op.done() {
					t.Fatalf("%s #%d returned EINTR but the server shows it done", op.name, i)
				}
			}
			if err != nil && eintr > 0 {
				t.Fatalf("%s #%d: %v on retrying after %d EINTR: an interrupted call took effect after all", op.name, i, err, eintr)
			}
			if err != nil {
				t.Fatalf("%s #%d: %v", op.name, i, err)
			}
			if op.done != nil && !op.done() {
				t.Fatalf("%s #%d succeeded but the server does not show it", op.name, i)
			}
		}
	}
	if interrupted > 0 {
		t.Errorf("%d calls returned EINTR for SIGURG (none had taken effect)", interrupted)
	}
}

// readRaw reads path with the system calls themselves (package os would
// retry EINTR) and checks that it holds want.
func readRaw(path, want string) error {
	fd, err := syscall.Open(path, syscall.O_RDONLY, 0)
	if err != nil {
		return err
	}
	defer syscall.Close(fd)
	buf := make([]byte, len(want)+1)
	n, err := syscall.Read(fd, buf)
	if err != nil {
		return err
	}
	if string(buf[:n]) != want {
		return fmt.Errorf("read %q, want %q", buf[:n], want)
	}
	return nil
}
