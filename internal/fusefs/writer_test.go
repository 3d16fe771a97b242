package fusefs

import (
	"bytes"
	"context"
	"errors"
	"io"
	"math/rand"
	"sync"
	"syscall"
	"testing"
	"time"

	"sshfsm/internal/remote"
)

var bg = context.Background()

// slowFile is a remote file in memory whose writes land after a random
// delay, so that requests sent together finish in any order.
type slowFile struct {
	mu    sync.Mutex
	data  []byte
	sizes []int
	rnd   *rand.Rand
	size  int
}

func (f *slowFile) WriteSize() int { return f.size }

func (f *slowFile) WriteAtOwned(ctx context.Context, p []byte, off int64, done func()) (int, error) {
	defer done()
	return f.WriteAt(ctx, p, off)
}

func (f *slowFile) WriteAt(_ context.Context, p []byte, off int64) (int, error) {
	f.mu.Lock()
	d := time.Duration(f.rnd.Intn(300)) * time.Microsecond
	f.sizes = append(f.sizes, len(p))
	f.mu.Unlock()
	time.Sleep(d)
	f.mu.Lock()
	defer f.mu.Unlock()
	if end := int(off) + len(p); end > len(f.data) {
		f.data = append(f.data, make([]byte, end-len(f.data))...)
	}
	copy(f.data[off:], p)
	return len(p), nil
}

func (f *slowFile) ReadAt(context.Context, []byte, int64) (int, error) { return 0, nil }
func (f *slowFile) Stat(context.Context) (remote.Attr, error)          { return remote.Attr{}, nil }
func (f *slowFile) Truncate(context.Context, int64) error              { return nil }
func (f *slowFile) Sync(context.Context) error                         { return nil }
func (f *slowFile) Close(context.Context) error                        { return nil }

// Small contiguous writes go out as few requests of a whole packet each.
// The server answers nothing until every write is queued: gathered data
// also goes out whenever nothing is in flight, so a server answering
// faster than the writes come would make the count depend on scheduling.
func TestWriterGathersContiguousWrites(t *testing.T) {
	for _, async := range []bool{false, true} {
		t.Run(mode(async), func(t *testing.T) { testWriterGathers(t, async) })
	}
}

func testWriterGathers(t *testing.T, async bool) {
	f := &gateFile{slowFile: slowFile{rnd: rand.New(rand.NewSource(1)), size: 64 << 10}, gate: make(chan struct{})}
	w := newWriter(sending(f, async), &node{}, 8<<20)
	want := make([]byte, 1000*4096)
	rand.New(rand.NewSource(2)).Read(want)
	for off := 0; off < len(want); off += 4096 {
		if err := w.write(bg, want[off:off+4096], int64(off)); err != nil {
			close(f.gate)
			t.Fatal(err)
		}
	}
	close(f.gate)
	if _, err := w.wait(bg); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(f.data, want) {
		t.Fatal("file differs from what was written")
	}
	if n, most := len(f.sizes), len(want)/(64<<10)+2; n > most {
		t.Fatalf("%d requests for %d writes of 4 KiB, want at most %d (packets of 64 KiB)", n, len(want)/4096, most)
	}
	for _, s := range f.sizes {
		if s > 64<<10 {
			t.Fatalf("a request of %d bytes, more than the file's WriteSize", s)
		}
	}
}

// Overlapping writes, gathered or not, end on the server as they would
// in order, although requests in flight land in any order.
func TestWriterKeepsOverlappingWritesInOrder(t *testing.T) {
	seeds := int64(40)
	if testing.Short() {
		seeds = 4 // both modes still: odd seeds send asynchronously
	}
	for seed := range seeds {
		for _, size := range []int{0, 16 << 10} { // 0: no gathering (not a BufferWriter size)
			f := &slowFile{rnd: rand.New(rand.NewSource(seed)), size: size}
			async := seed%2 == 1
			w := newWriter(sending(f, async && size > 0), &node{}, 1<<20)
			rnd := rand.New(rand.NewSource(seed + 100))
			want := make([]byte, 64<<10)
			f.data = make([]byte, len(want))
			for i := range 300 {
				off := rnd.Intn(len(want) - 1)
				n := 1 + rnd.Intn(min(len(want)-off, 20<<10))
				if i%3 == 0 { // runs of contiguous writes too
					n = min(n, 2048)
				}
				p := bytes.Repeat([]byte{byte(i)}, n)
				copy(want[off:], p)
				if err := w.write(bg, p, int64(off)); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := w.wait(bg); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(f.data, want) {
				t.Fatalf("seed %d, WriteSize %d, %s: file differs from the writes applied in order", seed, size, mode(async && size > 0))
			}
		}
	}
}

// gateFile holds every write until gate is closed.
type gateFile struct {
	slowFile
	gate   chan struct{}
	maxCap int // largest buffer a request came in
}

func (f *gateFile) WriteAtOwned(ctx context.Context, p []byte, off int64, done func()) (int, error) {
	f.mu.Lock()
	f.maxCap = max(f.maxCap, cap(p))
	f.mu.Unlock()
	<-f.gate
	return f.slowFile.WriteAtOwned(ctx, p, off, done)
}

// Scattered small writes pin buffers of their own size class, not whole
// packets: a window of 1 MiB takes 16 scattered 4 KiB writes (64 KiB each)
// while none is answered.
func TestWriterScatteredWritesPinLittle(t *testing.T) {
	for _, async := range []bool{false, true} {
		t.Run(mode(async), func(t *testing.T) { testWriterScattered(t, async) })
	}
}

func testWriterScattered(t *testing.T, async bool) {
	f := &gateFile{slowFile: slowFile{rnd: rand.New(rand.NewSource(1)), size: 256 << 10}, gate: make(chan struct{})}
	w := newWriter(sending(f, async), &node{}, 1<<20)
	ctx, cancel := context.WithTimeout(bg, 2*time.Second)
	defer cancel()
	for i := range 16 {
		if err := w.write(ctx, make([]byte, 4096), int64(i)*1<<20); err != nil {
			close(f.gate)
			t.Fatalf("write %d of 16 scattered ones waited for room: %v", i+1, err)
		}
	}
	close(f.gate)
	if _, err := w.wait(bg); err != nil {
		t.Fatal(err)
	}
	if f.maxCap > 64<<10 {
		t.Fatalf("a scattered 4 KiB write pinned a buffer of %d bytes", f.maxCap)
	}
}

// writeOwner is a test file that can send the caller's buffer.
type writeOwner interface {
	remote.File
	remote.BufferWriter
}

// asyncFile sends each write from a goroutine of its own and reports it
// to done, as the transport does for a file that sends without waiting.
type asyncFile struct{ writeOwner }

func (f asyncFile) WriteAtAsync(p []byte, off int64, release func(), done func(error)) {
	go func() {
		n, err := f.WriteAtOwned(bg, p, off, release)
		if err == nil && n < len(p) {
			err = io.ErrShortWrite
		}
		done(err)
	}()
}

// sending returns f, or f sending without waiting when async is set.
func sending(f writeOwner, async bool) remote.File {
	if async {
		return asyncFile{f}
	}
	return f
}

func mode(async bool) string {
	if async {
		return "async"
	}
	return "waiting"
}

// failingFile fails every write from off on.
type failingFile struct {
	slowFile
	from int64
}

func (f *failingFile) WriteAtOwned(ctx context.Context, p []byte, off int64, done func()) (int, error) {
	if off+int64(len(p)) > f.from {
		done()
		return 0, syscall.ENOSPC
	}
	return f.slowFile.WriteAtOwned(ctx, p, off, done)
}

// A failed write, sent with or without waiting, is reported by the next
// wait (flush, fsync, close) and by every later write.
func TestWriterReportsFailure(t *testing.T) {
	for _, async := range []bool{false, true} {
		t.Run(mode(async), func(t *testing.T) {
			f := &failingFile{slowFile: slowFile{rnd: rand.New(rand.NewSource(1)), size: 64 << 10}, from: 1 << 20}
			w := newWriter(sending(f, async), &node{}, 1<<20)
			var werr error
			for off := int64(0); off < 2<<20 && werr == nil; off += 128 << 10 {
				werr = w.write(bg, make([]byte, 128<<10), off)
			}
			_, err := w.wait(bg)
			if !errors.Is(err, syscall.ENOSPC) {
				t.Fatalf("wait after a failed write = %v, want ENOSPC", err)
			}
			if werr != nil && !errors.Is(werr, syscall.ENOSPC) {
				t.Fatalf("a write after the failure = %v, want ENOSPC", werr)
			}
			if err := w.write(bg, make([]byte, 4096), 0); !errors.Is(err, syscall.ENOSPC) {
				t.Fatalf("a write after the reported failure = %v, want ENOSPC", err)
			}
			if !bytes.Equal(f.data, make([]byte, 1<<20)) {
				t.Fatalf("the file holds %d bytes, want the first MiB written", len(f.data))
			}
		})
	}
}

// heldFailFile holds its first write until gate is closed, then fails it
// as a request the server did not answer; later writes succeed.
type heldFailFile struct {
	slowFile
	gate chan struct{}
	sent int
}

func (f *heldFailFile) WriteAtOwned(ctx context.Context, p []byte, off int64, done func()) (int, error) {
	f.mu.Lock()
	f.sent++
	first := f.sent == 1
	f.mu.Unlock()
	if first {
		<-f.gate
		done()
		return 0, context.DeadlineExceeded
	}
	return f.slowFile.WriteAtOwned(ctx, p, off, done)
}

// Writes queued behind a request that failed (one overlapping it, data
// still gathered) are not sent: the handle reports the failure anyway,
// and sending them would keep flush and fsync waiting for a timeout
// more on the link that just failed to answer.
func TestWriterDropsQueuedWritesAfterFailure(t *testing.T) {
	for _, async := range []bool{false, true} {
		t.Run(mode(async), func(t *testing.T) {
			f := &heldFailFile{slowFile: slowFile{rnd: rand.New(rand.NewSource(1)), size: 64 << 10}, gate: make(chan struct{})}
			w := newWriter(sending(f, async), &node{}, 1<<20)
			for range 3 { // the first is sent, the others overlap it
				if err := w.write(bg, make([]byte, 4096), 0); err != nil {
					t.Fatal(err)
				}
			}
			close(f.gate)
			if _, err := w.wait(bg); !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("wait = %v, want the first write's failure", err)
			}
			f.mu.Lock()
			defer f.mu.Unlock()
			if f.sent != 1 {
				t.Fatalf("%d writes sent, want only the one that failed", f.sent)
			}
		})
	}
}
