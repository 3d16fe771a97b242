package replica

import (
	"bytes"
	"errors"
	"math/rand"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

func chunks(n, size int) [][]byte {
	r := rand.New(rand.NewSource(int64(n * size)))
	out := make([][]byte, n)
	for i := range out {
		out[i] = make([]byte, size)
		r.Read(out[i])
	}
	return out
}

func checkFile(t *testing.T, path string, want [][]byte) {
	t.Helper()
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, bytes.Join(want, nil)) {
		t.Fatalf("%s: %d bytes, not the %d written", path, len(got), len(bytes.Join(want, nil)))
	}
}

// Writes a dying primary acknowledged but never stored are replayed on
// the next member when the handle moves; the in-flight write is re-sent.
func TestWriteFailoverReplays(t *testing.T) {
	for _, fault := range []mode{broken, hanging, answerLost} {
		t.Run(map[mode]string{broken: "broken", hanging: "hanging", answerLost: "answerLost"}[fault], func(t *testing.T) {
			s, fms, dir := newSet(t, 2, Options{Timeout: 300 * time.Millisecond, ProbeInterval: time.Hour})
			f, err := s.Open(bg, "w", os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
			if err != nil {
				t.Fatal(err)
			}
			if s.Stats()[0].Handles != 1 {
				t.Fatal("writable file not opened on the primary")
			}
			data := chunks(4, 100_000)
			fms[0].set(lossy)
			for i, c := range data[:3] {
				if _, err := f.WriteAt(bg, c, int64(i*len(c))); err != nil {
					t.Fatal(err)
				}
			}
			fms[0].set(fault)
			if _, err := f.WriteAt(bg, data[3], 300_000); err != nil {
				t.Fatalf("write across the failover: %v", err)
			}
			if err := f.Sync(bg); err != nil {
				t.Fatal(err)
			}
			if err := f.Close(bg); err != nil {
				t.Fatal(err)
			}
			checkFile(t, filepath.Join(dir, "w"), data)
			if st := s.Stats(); st[0].Up || st[1].BytesWritten != 100_000 {
				t.Fatalf("stats: %+v", st)
			}
		})
	}
}

// Close on a member that fails moves the file first when acknowledged
// writes are not known to be synced.
func TestCloseReplays(t *testing.T) {
	s, fms, dir := newSet(t, 2, Options{ProbeInterval: time.Hour})
	f, err := s.Open(bg, "w", os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	data := chunks(2, 50_000)
	fms[0].set(lossy)
	for i, c := range data {
		if _, err := f.WriteAt(bg, c, int64(i*len(c))); err != nil {
			t.Fatal(err)
		}
	}
	fms[0].set(broken)
	if err := f.Close(bg); err != nil {
		t.Fatalf("close: %v", err)
	}
	checkFile(t, filepath.Join(dir, "w"), data)
}

// A Sync releases the journal; past ReplayLimit the handle syncs itself.
func TestJournalBounded(t *testing.T) {
	s, fms, dir := newSet(t, 2, Options{ReplayLimit: 256 << 10})
	f, err := s.Open(bg, "w", os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	data := chunks(32, 64<<10)
	for i, c := range data {
		if _, err := f.WriteAt(bg, c, int64(i*len(c))); err != nil {
			t.Fatal(err)
		}
		if b := f.(*file).journalBytes(); b > 2*(256<<10) {
			t.Fatalf("journal holds %d bytes", b)
		}
	}
	if n := fms[0].syncs.Load(); n < 4 {
		t.Fatalf("%d implicit syncs for 2 MiB with a 256 KiB limit", n)
	}
	if err := f.Sync(bg); err != nil {
		t.Fatal(err)
	}
	if b := f.(*file).journalBytes(); b != 0 {
		t.Fatalf("journal holds %d bytes after Sync", b)
	}
	// Synced data is not replayed: the file moves with nothing to resend.
	fms[0].set(broken)
	if err := f.Close(bg); err != nil {
		t.Fatal(err)
	}
	checkFile(t, filepath.Join(dir, "w"), data)
}

// With no member left, acknowledged writes not known to be durable make
// Sync and Close fail: never silently.
func TestWritesWithNoMemberLeftFail(t *testing.T) {
	s, fms, _ := newSet(t, 2, Options{ProbeInterval: time.Hour})
	f, err := s.Open(bg, "w", os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt(bg, []byte("hello"), 0); err != nil {
		t.Fatal(err)
	}
	fms[0].set(broken)
	fms[1].set(broken)
	if err := f.Sync(bg); !errors.Is(err, syscall.ENOTCONN) {
		t.Fatalf("sync with no member: %v", err)
	}
	if err := f.Close(bg); !errors.Is(err, syscall.ENOTCONN) {
		t.Fatalf("close with no member and unsynced writes: %v", err)
	}
}

// Truncate is journaled and replayed in order with the writes.
func TestTruncateReplayed(t *testing.T) {
	s, fms, dir := newSet(t, 2, Options{ProbeInterval: time.Hour})
	f, err := s.Open(bg, "w", os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	fms[0].set(lossy)
	data := chunks(1, 10_000)
	f.WriteAt(bg, data[0], 0)
	if err := f.Truncate(bg, 20_000); err != nil {
		t.Fatal(err)
	}
	fms[0].set(broken)
	if err := f.Sync(bg); err != nil {
		t.Fatal(err)
	}
	f.Close(bg)
	checkFile(t, filepath.Join(dir, "w"), [][]byte{data[0], make([]byte, 10_000)})
}
