package e2e

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"strconv"
	"syscall"
	"testing"
	"time"

	"sshfsm/internal/testenv"
)

const mib = 1 << 20

// content is a reproducible pseudo-random byte stream.
func content(seed uint64) io.Reader {
	var key [32]byte
	key[0] = byte(seed)
	key[1] = byte(seed >> 8)
	return rand.NewChaCha8(key)
}

// writeServerFile writes size bytes of content(seed) to path on the
// server's side and returns their SHA-256.
func writeServerFile(t *testing.T, path string, size int64, seed uint64) [32]byte {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	h := sha256.New()
	w := bufio.NewWriterSize(io.MultiWriter(f, h), mib)
	if _, err := io.CopyN(w, content(seed), size); err != nil {
		t.Fatal(err)
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	return [32]byte(h.Sum(nil))
}

func expected(seed uint64, off, n int64) []byte {
	b := make([]byte, off+n)
	io.ReadFull(content(seed), b)
	return b[off:]
}

// outage kills the host's sshd and everything it serves, and restarts it on
// the same port after d; the returned channel yields the restart's result.
func outage(t *testing.T, h *testenv.Host, d time.Duration) <-chan error {
	t.Logf("%s killing sshd of %s; restarting it in %v", stamp(), h.Alias, d)
	h.Kill()
	done := make(chan error, 1)
	go func() {
		time.Sleep(d)
		err := h.Restart()
		if err != nil {
			t.Logf("%s restarting sshd: %v", stamp(), err)
		} else {
			t.Logf("%s sshd of %s restarted", stamp(), h.Alias)
		}
		done <- err
	}()
	return done
}

func stamp() string { return time.Now().UTC().Format("15:04:05.000") }

func waitRestart(t *testing.T, restarted <-chan error) {
	t.Helper()
	select {
	case err := <-restarted:
		if err != nil {
			t.Fatalf("restarting sshd: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("sshd restart did not finish within 30s")
	}
}

// TestReconnectDuringSequentialRead kills sshd in the middle of reading a
// 256 MiB file; the read must go on after the restart and return exactly
// the file's bytes.
func TestReconnectDuringSequentialRead(t *testing.T) {
	h := testenv.StartHost(t, "127.0.0.2")
	const size = 256 * mib
	want := writeServerFile(t, h.Dir+"/big", size, 1)
	m := mount(t, h, mountSpec{opts: []string{"reconnect"}})

	var restarted <-chan error
	within(t, 120*time.Second, "reading 256 MiB across an sshd restart", func() error {
		f, err := os.Open(m.Path("big"))
		if err != nil {
			return err
		}
		defer f.Close()
		sum := sha256.New()
		buf := make([]byte, mib)
		var total int64
		for {
			n, err := f.Read(buf)
			sum.Write(buf[:n])
			total += int64(n)
			if err == io.EOF {
				break
			}
			if err != nil {
				return fmt.Errorf("read at offset %d: %w", total, err)
			}
			if restarted == nil && total >= 64*mib {
				restarted = outage(t, h, time.Second)
			}
		}
		if total != size {
			return fmt.Errorf("read %d bytes, want %d", total, size)
		}
		if [32]byte(sum.Sum(nil)) != want {
			return errors.New("SHA-256 of the bytes read differs from the file's")
		}
		return nil
	})
	waitRestart(t, restarted)
}

// TestReconnectDuringWrite kills sshd while another process writes a
// 128 MiB file; its writes, fsync and close must succeed and the server
// must hold exactly the bytes written.
func TestReconnectDuringWrite(t *testing.T) {
	h := testenv.StartHost(t, "127.0.0.2")
	m := mount(t, h, mountSpec{opts: []string{"reconnect"}})
	const size = 128 * mib
	w := startHelper(t, "write", m.Path("written"), strconv.Itoa(size), "2", strconv.Itoa(32*mib))
	w.expect(t, "paused", 60*time.Second)
	restarted := outage(t, h, time.Second)
	w.resume(t)
	w.expect(t, "done", 120*time.Second)
	waitRestart(t, restarted)
	checkServerFile(t, h.Dir+"/written", size, 2)
}

// checkServerFile compares the server's file with content(seed).
func checkServerFile(t *testing.T, path string, size int64, seed uint64) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	got := sha256.New()
	n, err := io.Copy(got, f)
	if err != nil {
		t.Fatal(err)
	}
	if n != size || [32]byte(got.Sum(nil)) != contentSum(seed, size) {
		t.Fatalf("server file %s: %d bytes, identical content %v; want %d identical bytes",
			path, n, [32]byte(got.Sum(nil)) == contentSum(seed, size), size)
	}
}

// TestOpenHandlesSurviveReconnect opens a file for reading (here) and one
// for writing (in a helper process), restarts sshd, and uses both handles
// afterwards.
func TestOpenHandlesSurviveReconnect(t *testing.T) {
	h := testenv.StartHost(t, "127.0.0.2")
	const size = 16 * mib
	writeServerFile(t, h.Dir+"/r", size, 3)
	m := mount(t, h, mountSpec{opts: []string{"reconnect"}})

	r, err := os.Open(m.Path("r"))
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	head := make([]byte, 64<<10)
	if _, err := io.ReadFull(r, head); err != nil || !bytes.Equal(head, expected(3, 0, int64(len(head)))) {
		t.Fatalf("reading before the outage: %v", err)
	}
	w := startHelper(t, "write", m.Path("w"), strconv.Itoa(2*mib), "5", strconv.Itoa(mib))
	w.expect(t, "paused", 30*time.Second)

	waitRestart(t, outage(t, h, 500*time.Millisecond))

	w.resume(t)
	within(t, 60*time.Second, "reading through a handle opened before the restart", func() error {
		tail := make([]byte, mib)
		if _, err := r.ReadAt(tail, 12*mib); err != nil {
			return fmt.Errorf("read after restart: %w", err)
		}
		if !bytes.Equal(tail, expected(3, 12*mib, mib)) {
			return errors.New("read after restart returned wrong bytes")
		}
		return nil
	})
	w.expect(t, "done", 60*time.Second)
	checkServerFile(t, h.Dir+"/w", 2*mib, 5)
}

// TestChangedDuringOutageFailsEIO changes a file on the server while sshd is
// down; a handle opened before must then fail with EIO instead of returning
// bytes of the new file as if they belonged to the old one.
func TestChangedDuringOutageFailsEIO(t *testing.T) {
	const size = 16 * mib
	changes := map[string]func(path string) error{
		"size": func(path string) error {
			return os.WriteFile(path, bytes.Repeat([]byte{'x'}, size+4096), 0o644)
		},
		"mtime": func(path string) error {
			st, err := os.Stat(path)
			if err != nil {
				return err
			}
			if err := os.WriteFile(path, bytes.Repeat([]byte{'y'}, size), 0o644); err != nil {
				return err
			}
			old := st.ModTime().Add(-time.Hour)
			return os.Chtimes(path, old, old)
		},
	}
	for _, name := range []string{"size", "mtime"} {
		t.Run(name, func(t *testing.T) {
			h := testenv.StartHost(t, "127.0.0.3")
			writeServerFile(t, h.Dir+"/f", size, 4)
			m := mount(t, h, mountSpec{opts: []string{"reconnect"}})
			f, err := os.Open(m.Path("f"))
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			head := make([]byte, 64<<10)
			if _, err := io.ReadFull(f, head); err != nil {
				t.Fatal(err)
			}

			h.Kill()
			if err := changes[name](h.Dir + "/f"); err != nil {
				t.Fatal(err)
			}
			if err := h.Restart(); err != nil {
				t.Fatal(err)
			}

			within(t, 60*time.Second, "reading a file changed during the outage", func() error {
				buf := make([]byte, mib)
				n, err := f.ReadAt(buf, 12*mib)
				if errors.Is(err, syscall.EIO) {
					return nil
				}
				if err != nil {
					return fmt.Errorf("read returned %w, want EIO", err)
				}
				return fmt.Errorf("read returned %d bytes (%q...), want EIO", n, buf[:8])
			})
		})
	}
}
