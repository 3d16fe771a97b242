package transport

import (
	"bytes"
	"context"
	"errors"
	"io"
	"math/rand"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"sshfsm/internal/testenv"
)

func randomFile(t *testing.T, path string, n int) []byte {
	t.Helper()
	b := make([]byte, n)
	rand.New(rand.NewSource(int64(n))).Read(b)
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return b
}

func TestTimeoutRecyclesChannel(t *testing.T) {
	h, ts, _ := dialTest(t, 1, func(o *Options) { o.Timeout = time.Second })
	ts.stream(0).freeze()
	start := time.Now()
	_, err := h.Remote().Stat(bg, "")
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("got %v, want DeadlineExceeded", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("timed out after %v, want ≤ Timeout+1s", d)
	}
	if _, err := h.Remote().Stat(bg, ""); err != nil {
		t.Fatalf("after reconnect: %v", err)
	}
	if ts.count() < 2 || h.Stats().Channels[0].Reconnects < 1 {
		t.Fatalf("channel not replaced: %d streams, %+v", ts.count(), h.Stats().Channels[0])
	}
}

func TestCancellation(t *testing.T) {
	h, ts, dir := dialTest(t, 1, func(o *Options) { o.Timeout = 10 * time.Second })
	randomFile(t, filepath.Join(dir, "f"), 1000)
	f, err := h.Remote().Open(bg, "f", os.O_RDONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	ts.stream(0).freeze()
	ctx, cancel := context.WithCancel(bg)
	time.AfterFunc(100*time.Millisecond, cancel)
	start := time.Now()
	buf := make([]byte, 100)
	_, err = f.ReadAt(ctx, buf, 0)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("got %v after %v, want Canceled, not the timeout's error", err, time.Since(start))
	}
	ctx, cancel = context.WithCancel(bg)
	time.AfterFunc(50*time.Millisecond, cancel)
	if _, err := h.Remote().ReadDir(ctx, ""); !errors.Is(err, context.Canceled) {
		t.Fatalf("readdir: %v", err)
	}
}

func TestReconnectKeepsReadHandle(t *testing.T) {
	h, ts, dir := dialTest(t, 1, nil)
	want := randomFile(t, filepath.Join(dir, "f"), 1<<20)
	// Once its attributes at open are learned: a channel lost before then,
	// after a read was answered, fails the file by design (see file).
	f := openRead(t, h, "f")
	got := make([]byte, len(want))
	half := len(want) / 2
	if n, err := f.ReadAt(bg, got[:half], 0); n != half || err != nil {
		t.Fatal(n, err)
	}
	ts.stream(0).drop()
	if n, err := f.ReadAt(bg, got[half:], int64(half)); n != len(want)-half || (err != nil && err != io.EOF) {
		t.Fatal(n, err)
	}
	if !bytes.Equal(got, want) {
		t.Fatal("data differs after reconnect")
	}
	if h.Stats().Channels[0].Reconnects < 1 {
		t.Fatal("no reconnect counted")
	}
}

func TestReconnectResendsWrites(t *testing.T) {
	h, ts, dir := dialTest(t, 1, nil)
	f, err := h.Remote().Open(bg, "f", os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	want := make([]byte, 3*100_000)
	rand.New(rand.NewSource(1)).Read(want)
	if _, err := f.WriteAt(bg, want[:100_000], 0); err != nil {
		t.Fatal(err)
	}
	// The server executes the next write but its answer never arrives.
	ts.stream(0).freeze()
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		if _, err := f.WriteAt(bg, want[100_000:200_000], 100_000); err != nil {
			t.Error(err)
		}
	}()
	time.Sleep(100 * time.Millisecond)
	ts.stream(0).drop()
	wg.Wait()
	ts.stream(1).drop()
	if _, err := f.WriteAt(bg, want[200_000:], 200_000); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(bg); err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(filepath.Join(dir, "f"))
	if !bytes.Equal(got, want) {
		t.Fatalf("content differs: %d bytes, want %d", len(got), len(want))
	}
}

func TestChangedUnderneathIsEIO(t *testing.T) {
	h, ts, dir := dialTest(t, 1, nil)
	p := filepath.Join(dir, "f")
	randomFile(t, p, 5000)
	rf, err := h.Remote().Open(bg, "f", os.O_RDONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	wf, err := h.Remote().Open(bg, "f", os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	<-rf.(*file).learned
	<-wf.(*file).learned
	if _, err := wf.WriteAt(bg, []byte("abc"), 0); err != nil {
		t.Fatal(err)
	}
	os.Truncate(p, 10)
	ts.stream(0).drop()
	buf := make([]byte, 10)
	for range 2 {
		if _, err := rf.ReadAt(bg, buf, 0); !errors.Is(err, syscall.EIO) {
			t.Fatalf("read after change: %v, want EIO", err)
		}
	}
	if _, err := wf.WriteAt(bg, []byte("abc"), 3); !errors.Is(err, syscall.EIO) {
		t.Fatalf("write after change: %v, want EIO", err)
	}
}

func TestNoReconnectFailsENOTCONN(t *testing.T) {
	h, ts, _ := dialTest(t, 1, func(o *Options) { o.Reconnect = false })
	ts.stream(0).drop()
	if _, err := h.Remote().Stat(bg, ""); !errors.Is(err, syscall.ENOTCONN) {
		t.Fatalf("got %v, want ENOTCONN", err)
	}
}

func TestWaitsForReconnect(t *testing.T) {
	h, ts, _ := dialTest(t, 1, func(o *Options) { o.Timeout = 5 * time.Second })
	ts.setRefuse(true)
	ts.stream(0).drop()
	time.AfterFunc(600*time.Millisecond, func() { ts.setRefuse(false) })
	if _, err := h.Remote().Stat(bg, ""); err != nil {
		t.Fatalf("call during outage: %v", err)
	}
}

// TestRequestCutsRedialWait: while the server refuses, the waits between
// redials grow past the timeout. A request made once the server is back
// does not wait for the next redial, which would come after its timeout:
// a request waiting for a channel has the redial made early, and is
// answered.
func TestRequestCutsRedialWait(t *testing.T) {
	h, ts, _ := dialTest(t, 1, func(o *Options) { o.Timeout = 3 * time.Second })
	ts.setRefuse(true)
	ts.stream(0).drop()
	// Refused redials wait 0.25, 0.5, 1, 2 and 4 s after one another:
	// after the sixth the wait is 8 s.
	testenv.Eventually(t, "six redials refused", func() bool { return ts.refusedDials() >= 6 })
	ts.setRefuse(false)
	if _, err := h.Remote().Stat(bg, ""); err != nil {
		t.Fatalf("a request once the server is back: %v", err)
	}
}

func TestSplitReadUsesSeveralChannels(t *testing.T) {
	h, _, dir := dialTest(t, 3, nil)
	want := randomFile(t, filepath.Join(dir, "f"), 1<<20+123)
	f := openRead(t, h, "f")
	got := make([]byte, len(want)+1000)
	n, err := f.ReadAt(bg, got, 0)
	if n != len(want) || err != io.EOF || !bytes.Equal(got[:n], want) {
		t.Fatalf("split read: %d %v equal=%v", n, err, bytes.Equal(got[:n], want))
	}
	used := 0
	for _, c := range h.Stats().Channels {
		if c.BytesRead > 0 {
			used++
		}
	}
	if used < 2 {
		t.Fatalf("read served by %d channel(s): %+v", used, h.Stats().Channels)
	}
}

// A split read whose answers on one channel are lost when that channel
// dies mid-read gets the lost pieces from another channel: the caller
// sees the whole file, no error.
func TestSplitReadSurvivesChannelLoss(t *testing.T) {
	h, ts, dir := dialTest(t, 2, nil)
	want := randomFile(t, filepath.Join(dir, "f"), 1<<20)
	f := openRead(t, h, "f")
	got := make([]byte, len(want))
	if n, err := f.ReadAt(bg, got, 0); n != len(want) || !bytes.Equal(got, want) {
		t.Fatalf("first read (opens the file on both channels): %d %v", n, err)
	}
	if raws := len(f.raws); raws != 2 {
		t.Fatalf("%d raw handles, want one per channel", raws)
	}
	ts.stream(1).hold()
	type result struct {
		n   int
		err error
	}
	done := make(chan result, 1)
	clear(got)
	go func() {
		n, err := f.ReadAt(bg, got, 0)
		done <- result{n, err}
	}()
	deadline := time.Now().Add(5 * time.Second)
	for h.Stats().Channels[1].Outstanding == 0 {
		if time.Now().After(deadline) {
			t.Fatal("no request reached channel 1")
		}
		time.Sleep(time.Millisecond)
	}
	ts.stream(1).drop()
	r := <-done
	if r.n != len(want) || (r.err != nil && r.err != io.EOF) || !bytes.Equal(got, want) {
		t.Fatalf("read across the loss of a channel: %d %v equal=%v", r.n, r.err, bytes.Equal(got, want))
	}
}

// A server may answer a READ with fewer bytes than asked although the file
// goes on (pkg/sftp's server sends at most 32 KiB): a split read asks
// again for the rest instead of taking the short answer for the end.
func TestSplitReadShortAnswers(t *testing.T) {
	h, _, dir := dialTest(t, 2, nil)
	want := randomFile(t, filepath.Join(dir, "f"), 1<<20+5000)
	setMaxPacket(h, 64<<10) // twice what this server answers
	f := openRead(t, h, "f")
	for _, off := range []int{0, 1000} {
		got := make([]byte, 1<<20)
		n, err := f.ReadAt(bg, got, int64(off))
		if n != len(got) || err != nil || !bytes.Equal(got, want[off:off+n]) {
			t.Fatalf("read at %d: %d %v equal=%v", off, n, err, bytes.Equal(got[:n], want[off:off+n]))
		}
	}
	if raws := len(f.raws); raws != 2 {
		t.Fatalf("%d raw handles, want one per channel", raws)
	}
}

func TestRequestCounters(t *testing.T) {
	h, _, _ := dialTest(t, 1, nil)
	before := h.Stats().Requests
	h.Remote().Stat(bg, "")
	h.Remote().Lstat(bg, "")
	h.Remote().ReadDir(bg, "")
	h.Remote().Rename(bg, "a", "b", false)
	after := h.Stats().Requests
	for _, k := range []string{"STAT", "LSTAT", "OPENDIR", "READDIR", "posix-rename@openssh.com"} {
		if after[k] <= before[k] {
			t.Errorf("%s not counted: %d → %d", k, before[k], after[k])
		}
	}
	if after["WRITE"] != 0 {
		t.Errorf("WRITE counted without writes")
	}
}

// A read-only file whose channel dies before its attributes at open were
// learned takes the re-opened file's as reference when no read had been
// answered yet, and fails with EIO when one had (it might mix two versions).
func TestReopenBeforeAttributesLearned(t *testing.T) {
	for _, readFirst := range []bool{false, true} {
		h, ts, dir := dialTest(t, 1, nil)
		want := randomFile(t, filepath.Join(dir, "f"), 5000)
		rf, err := h.Remote().Open(bg, "f", os.O_RDONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		f := rf.(*file)
		<-f.learned
		f.mu.Lock()
		f.knownOK = false // as if the FSTAT after open had never been answered
		f.mu.Unlock()
		f.mu.Lock()
		f.readAny = readFirst
		f.mu.Unlock()
		ts.stream(0).drop()
		got := make([]byte, len(want))
		n, err := f.ReadAt(bg, got, 0)
		switch {
		case readFirst && !errors.Is(err, syscall.EIO):
			t.Errorf("a read was sent before: got %d %v, want EIO", n, err)
		case !readFirst && (n != len(want) || (err != nil && err != io.EOF) || !bytes.Equal(got, want)):
			t.Errorf("no read before: got %d %v, want the file", n, err)
		}
		f.Close(bg)
	}
}

// A read sent past pkg/sftp that gets no answer fails at its deadline
// (the channel's watchdog, not a timer per read), the channel is replaced,
// and the file reads again on the new one.
func TestRawReadTimeoutRecyclesChannel(t *testing.T) {
	h, ts, dir := dialTest(t, 1, func(o *Options) { o.Timeout = time.Second })
	want := randomFile(t, filepath.Join(dir, "f"), 10_000)
	f, err := h.Remote().Open(bg, "f", os.O_RDONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close(bg)
	if raws := len(f.(*file).raws); raws != 1 {
		t.Fatalf("%d raw handles: reads would not go past pkg/sftp", raws)
	}
	ts.stream(0).freeze()
	start := time.Now()
	buf := make([]byte, 4096)
	_, err = f.ReadAt(bg, buf, 0)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("read on a frozen channel: %v, want DeadlineExceeded", err)
	}
	if d := time.Since(start); d < 900*time.Millisecond || d > 2500*time.Millisecond {
		t.Fatalf("read failed after %v, want about Timeout (1s)", d)
	}
	n, err := f.ReadAt(bg, buf, 100)
	if err != nil || n != len(buf) || !bytes.Equal(buf, want[100:100+len(buf)]) {
		t.Fatalf("read after the channel was replaced: %d %v", n, err)
	}
	if h.Stats().Channels[0].Reconnects < 1 {
		t.Fatalf("channel not replaced: %+v", h.Stats().Channels[0])
	}
}

// A handle that grew its file past the size it was opened at reads back
// all it wrote: a read of more than one packet is not cut at the first
// packet's end. Both with the packet size the server answers in full, and
// with a larger one that the server answers short in mid-file.
func TestReadPastSizeAtOpen(t *testing.T) {
	for _, packet := range []int{0, 64 << 10} {
		h, _, dir := dialTest(t, 1, nil)
		randomFile(t, filepath.Join(dir, "f"), 1000)
		f, err := h.Remote().Open(bg, "f", os.O_RDWR, 0)
		if err != nil {
			t.Fatal(err)
		}
		<-f.(*file).learned
		if packet != 0 {
			setMaxPacket(h, packet) // twice what this server answers
		}
		want := make([]byte, 200_000)
		rand.New(rand.NewSource(7)).Read(want)
		if n, err := f.WriteAt(bg, want, 0); n != len(want) || err != nil {
			t.Fatalf("write: %d %v", n, err)
		}
		for _, off := range []int{0, 1000, 40_000} {
			got := make([]byte, 150_000)
			n, err := f.ReadAt(bg, got, int64(off))
			if n != len(got) || err != nil || !bytes.Equal(got, want[off:off+n]) {
				t.Errorf("packet %d: read of %d at %d: %d bytes, %v, equal %v",
					packet, len(got), off, n, err, bytes.Equal(got[:n], want[off:off+n]))
			}
		}
		f.Close(bg)
	}
}

// A read-only handle of a file that grew on the server since it was
// opened reads the new bytes too, as a local read would: a read of more
// than one packet is not cut at the first packet's end.
func TestReadFileGrownOnServer(t *testing.T) {
	h, _, dir := dialTest(t, 1, nil)
	randomFile(t, filepath.Join(dir, "f"), 1000)
	f := openRead(t, h, "f")
	want := randomFile(t, filepath.Join(dir, "f"), 200_000)
	got := make([]byte, 150_000)
	n, err := f.ReadAt(bg, got, 0)
	if n != len(got) || err != nil || !bytes.Equal(got, want[:n]) {
		t.Errorf("read of %d: %d bytes, %v, equal %v", len(got), n, err, bytes.Equal(got[:n], want[:n]))
	}
}
