package transport

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// Reads of one request go past pkg/sftp (the handle string is found) and
// return what pkg/sftp would: full buffers, short reads at the end with
// io.EOF, io.EOF past the end, and errors for a closed file.
func TestRawReads(t *testing.T) {
	h, _, dir := dialTest(t, 2, nil)
	want := randomFile(t, filepath.Join(dir, "f"), 100_000)
	f, err := h.Remote().Open(bg, "f", os.O_RDONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	tf := f.(*file)
	tf.mu.Lock()
	raws := len(tf.raws)
	tf.mu.Unlock()
	if raws != 1 {
		t.Fatalf("%d raw handles known, want 1: pkg/sftp's File no longer keeps its handle where handleOf looks", raws)
	}
	before := h.Stats().Requests["READ"]
	for _, c := range []struct {
		off, n int
		want   int
		eof    bool
	}{
		{0, 4096, 4096, false},
		{99_000, 4096, 1000, true},
		{100_000, 10, 0, true},
		{5, 70_000, 70_000, false},
	} {
		buf := make([]byte, c.n)
		n, err := f.ReadAt(bg, buf, int64(c.off))
		if n != c.want || (err == io.EOF) != c.eof || (err != nil && err != io.EOF) {
			t.Fatalf("read %d at %d: %d %v, want %d (eof %v)", c.n, c.off, n, err, c.want, c.eof)
		}
		if !bytes.Equal(buf[:n], want[c.off:c.off+n]) {
			t.Fatalf("read %d at %d: wrong data", c.n, c.off)
		}
	}
	if got := h.Stats().Requests["READ"] - before; got < 4 {
		t.Fatalf("%d READ requests counted, want at least 4", got)
	}
	if err := f.Close(bg); err != nil {
		t.Fatal(err)
	}
	if _, err := f.ReadAt(bg, make([]byte, 10), 0); err == nil {
		t.Fatal("read after close succeeded")
	}
}

// A short answer that reaches the size the file had at open is its end:
// no second READ asks what lies beyond (one round trip per small file, as
// grep and builds read them). A short answer before that size, a file that
// grew after open, and a file whose size at open said nothing (0, as in
// /proc) are read on.
func TestShortReadAtKnownEnd(t *testing.T) {
	h, _, dir := dialTest(t, 1, nil)
	setMaxPacket(h, 64<<10) // this server answers at most 32 KiB
	small := randomFile(t, filepath.Join(dir, "small"), 5000)
	large := randomFile(t, filepath.Join(dir, "large"), 100_000)
	randomFile(t, filepath.Join(dir, "grows"), 5000)
	if err := os.WriteFile(filepath.Join(dir, "empty"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	read := func(f *file, n int, off int64, want []byte, reads uint64) {
		t.Helper()
		before := h.Stats().Requests["READ"]
		buf := make([]byte, n)
		got, err := f.ReadAt(bg, buf, off)
		if err != nil && err != io.EOF {
			t.Fatalf("%s: read %d at %d: %v", f.name, n, off, err)
		}
		if !bytes.Equal(buf[:got], want) {
			t.Fatalf("%s: read %d at %d: got %d bytes, want %d", f.name, n, off, got, len(want))
		}
		if sent := h.Stats().Requests["READ"] - before; sent != reads {
			t.Fatalf("%s: read %d at %d sent %d READs, want %d", f.name, n, off, sent, reads)
		}
	}

	read(openRead(t, h, "small"), 16384, 0, small, 1)
	read(openRead(t, h, "small"), 16384, 1000, small[1000:], 1)
	// 32 KiB answered of 64 KiB asked, far from the end: asked again.
	read(openRead(t, h, "large"), 64<<10, 0, large[:64<<10], 2)

	grows := openRead(t, h, "grows")
	more := append(bytes.Clone(small), bytes.Repeat([]byte("x"), 3000)...)
	if err := os.WriteFile(filepath.Join(dir, "grows"), more, 0o644); err != nil {
		t.Fatal(err)
	}
	read(grows, 16384, 0, more, 1)

	empty := openRead(t, h, "empty")
	if err := os.WriteFile(filepath.Join(dir, "empty"), small, 0o644); err != nil {
		t.Fatal(err)
	}
	read(empty, 16384, 0, small, 2)
}

// Writes of one packet go past pkg/sftp and land where they should;
// larger ones take pkg/sftp's path; both are counted as WRITE requests.
func TestRawWrites(t *testing.T) {
	h, _, dir := dialTest(t, 2, nil)
	f, err := h.Remote().Open(bg, "w", os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	want := make([]byte, 300_000)
	for i := range want {
		want[i] = byte(i * 7)
	}
	before := h.Stats().Requests["WRITE"]
	for _, c := range []struct{ off, n int }{{0, 4096}, {4096, 20000}, {24096, 200000}, {224096, 75904}} {
		if n, err := f.WriteAt(bg, want[c.off:c.off+c.n], int64(c.off)); n != c.n || err != nil {
			t.Fatalf("write %d at %d: %d %v", c.n, c.off, n, err)
		}
	}
	if err := f.Close(bg); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(filepath.Join(dir, "w"))
	if err != nil || !bytes.Equal(got, want) {
		t.Fatalf("file differs (%d bytes, %v)", len(got), err)
	}
	if n := h.Stats().Requests["WRITE"] - before; n < 4 {
		t.Fatalf("%d WRITE requests counted, want at least 4", n)
	}
}

// Reads in flight when their session ends fail as a lost connection, never
// as the end of the file: the caller then reads again on a new channel.
func TestRawReadsSessionEndIsNotEOF(t *testing.T) {
	r := newRawReads()
	l := getLease(10)
	q := &rawReq{dest: l.b[:10], l: l, done: make(chan struct{})}
	l.hold()
	if _, err := r.add(q); err != nil {
		t.Fatal(err)
	}
	r.fail(io.EOF)
	<-q.done
	if errors.Is(q.err, io.EOF) || isAnswer(q.err) || !errors.Is(q.err, syscall.ENOTCONN) {
		t.Fatalf("read in flight got %v: want a lost connection, not an answer", q.err)
	}
	if _, err := r.add(&rawReq{done: make(chan struct{})}); errors.Is(err, io.EOF) || err == nil {
		t.Fatalf("read after the end: %v", err)
	}
	l.release()
}
