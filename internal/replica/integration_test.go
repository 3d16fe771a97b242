package replica

import (
	"bytes"
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/sha256"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/metrics"
	"strings"
	"sync"
	"testing"
	"time"

	"sshfsm/internal/fusefs"
	"sshfsm/internal/namespace"
	"sshfsm/internal/testenv"
	"sshfsm/internal/transport"
)

// sshSet is a replica set of real sshd hosts on 127.0.0.2 and .3 serving
// one directory, mounted with FUSE.
type sshSet struct {
	set   *Set
	hosts []*testenv.Host
	th    []*transport.Host
	dir   string // the shared directory
	mnt   string
}

func startSSHSet(t *testing.T) *sshSet {
	t.Helper()
	return startSSHSetWith(t, func(*Options) {})
}

// startSSHSetWith is startSSHSet with the set's options changed by mod.
func startSSHSetWith(t *testing.T, mod func(*Options)) *sshSet {
	t.Helper()
	testenv.RequireFUSE(t)
	hosts, _ := testenv.StartHosts(t, 2)
	ss := &sshSet{hosts: hosts, dir: hosts[0].Dir, mnt: t.TempDir()}
	var ms []Member
	for _, h := range hosts {
		th, err := transport.Dial(bg, transport.Options{Host: h.Alias, SSHArgs: h.SSHArgs(),
			Dir: ss.dir, Conns: 2, Timeout: 5 * time.Second, Reconnect: true, FailFast: true})
		if err != nil {
			t.Fatal(err)
		}
		ss.th = append(ss.th, th)
		ms = append(ms, Member{Name: h.Addr, Remote: th.Remote()})
	}
	logs := &testenv.LogBuffer{}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("replica log:\n%s", logs)
		}
	})
	o := Options{ProbeInterval: 100 * time.Millisecond,
		Logger: slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))}
	mod(&o)
	s, err := New(ms, o)
	if err != nil {
		t.Fatal(err)
	}
	ss.set = s
	t.Cleanup(func() { s.Close() })
	srv, err := fusefs.Mount(ss.mnt, namespace.Single(s), fusefs.Options{
		AttrTimeout: time.Second, EntryTimeout: time.Second, DirCacheTimeout: time.Second,
	}, fusefs.MountOptions{FsName: "replica-test", Subtype: "sshfsm"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := srv.Unmount(); err != nil {
			t.Errorf("unmount: %v", err)
			testenv.Unmount(ss.mnt)
		}
	})
	return ss
}

// bytesRead sums the file data a transport host returned.
func bytesRead(th *transport.Host) uint64 {
	var n uint64
	for _, c := range th.Stats().Channels {
		n += c.BytesRead
	}
	return n
}

// stream writes n bytes of a keyed pseudo-random stream to w (AES-CTR:
// fast, and no block repeats, so misplaced data is caught).
func stream(w io.Writer, seed byte, n int64) error {
	key := bytes.Repeat([]byte{seed}, 16)
	blk, _ := aes.NewCipher(key)
	ctr := cipher.NewCTR(blk, make([]byte, 16))
	buf := make([]byte, 1<<20)
	for n > 0 {
		clear(buf)
		k := min(int64(len(buf)), n)
		ctr.XORKeyStream(buf[:k], buf[:k])
		if _, err := w.Write(buf[:k]); err != nil {
			return err
		}
		n -= k
	}
	return nil
}

// makeFile writes n stream bytes to path and returns their hash.
func makeFile(t *testing.T, path string, seed byte, n int64) []byte {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	h := sha256.New()
	if err := stream(io.MultiWriter(f, h), seed, n); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	return h.Sum(nil)
}

func hashFile(t *testing.T, path string) []byte {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		t.Fatalf("reading %s: %v", path, err)
	}
	return h.Sum(nil)
}

// Eight readers through the mount, open at the same time, spread over both
// sshd hosts. Every file is open on a server before any is read through:
// how many readers overlap then depends on the mount, not on how the
// test's goroutines happen to be scheduled on a busy machine (a reader
// that finished before the next one opened would leave its member idle,
// and the next pick would rightly go there again).
func TestSSHParallelReadersSpread(t *testing.T) {
	equalLatencies(t)
	// No latency probes: they too are work of the moment (see below).
	ss := startSSHSetWith(t, func(o *Options) { o.ProbeInterval = time.Hour })
	const size = 16 << 20
	sums := make([][]byte, 8)
	for i := range sums {
		sums[i] = makeFile(t, filepath.Join(ss.dir, fmt.Sprint("f", i)), byte(i), size)
	}
	// Every file is opened, and read from once (the mount opens a
	// read-only file on the server at its first read), one after another
	// while the others stay open, each once the set is idle: the lookup,
	// read ahead and attribute fetch an open starts are work of the moment
	// that would weigh on the next pick, so the picks weigh open files
	// alone.
	idle := func() bool {
		for _, m := range ss.set.Stats() {
			if m.InFlight > 0 {
				return false
			}
		}
		return true
	}
	files := make([]*os.File, len(sums))
	t.Cleanup(func() {
		for _, f := range files {
			if f != nil {
				f.Close()
			}
		}
	})
	for i := range files {
		testenv.Eventually(t, "no call in flight", idle)
		f, err := os.Open(filepath.Join(ss.mnt, fmt.Sprint("f", i)))
		if err != nil {
			t.Fatal(err)
		}
		files[i] = f
		testenv.Eventually(t, "no call in flight", idle)
		if _, err := f.ReadAt(make([]byte, 1), 0); err != nil {
			t.Fatalf("first read of f%d: %v", i, err)
		}
	}
	var wg sync.WaitGroup
	for i, f := range files {
		wg.Add(1)
		go func() {
			defer wg.Done()
			h := sha256.New()
			if _, err := io.Copy(h, f); err != nil {
				t.Errorf("reading f%d: %v", i, err)
			} else if !bytes.Equal(h.Sum(nil), sums[i]) {
				t.Errorf("f%d: content differs", i)
			}
		}()
	}
	wg.Wait()
	a, b := bytesRead(ss.th[0]), bytesRead(ss.th[1])
	t.Logf("bytes read: %s %d, %s %d; set: %+v", ss.hosts[0].Addr, a, ss.hosts[1].Addr, b, ss.set.Stats())
	if a+b < 8*size {
		t.Fatalf("hosts served %d bytes, want ≥ %d", a+b, 8*size)
	}
	for i, n := range []uint64{a, b} {
		if share := float64(n) / float64(a+b); share < 0.3 || share > 0.7 {
			t.Errorf("host %s served %.0f%% of the bytes, want 30–70%%", ss.hosts[i].Addr, 100*share)
		}
	}
}

// serving returns the index of the member holding the open handle.
func serving(t *testing.T, s *Set) int {
	t.Helper()
	for i, m := range s.Stats() {
		if m.Handles > 0 {
			return i
		}
	}
	t.Fatal("no member holds a handle")
	return -1
}

// progressWriter counts bytes and closes reached once past mark.
type progressWriter struct {
	w       io.Writer
	n, mark int64
	reached chan struct{}
	once    sync.Once
}

func (p *progressWriter) Write(b []byte) (int, error) {
	n, err := p.w.Write(b)
	if p.n += int64(n); p.n >= p.mark {
		p.once.Do(func() { close(p.reached) })
	}
	return n, err
}

// Killing the sshd of the host serving a 1 GiB sequential read through
// the mount: the read completes, no error, the right bytes.
func TestSSHKillDuringRead(t *testing.T) {
	ss := startSSHSet(t)
	const size = 1 << 30
	want := makeFile(t, filepath.Join(ss.dir, "big"), 7, size)
	f, err := os.Open(filepath.Join(ss.mnt, "big"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	h := sha256.New()
	pw := &progressWriter{w: h, mark: size / 3, reached: make(chan struct{})}
	done := make(chan error, 1)
	go func() {
		_, err := io.Copy(pw, f)
		done <- err
	}()
	select {
	case <-pw.reached:
	case err := <-done:
		t.Fatalf("read ended before the kill: %v", err)
	case <-time.After(2 * time.Minute):
		t.Fatal("read too slow")
	}
	victim := serving(t, ss.set)
	start := time.Now()
	ss.hosts[victim].Kill()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("read across the kill: %v", err)
		}
	case <-time.After(2 * time.Minute):
		t.Fatal("read did not finish after the kill")
	}
	t.Logf("rest of the read after killing %s: %v", ss.hosts[victim].Addr, time.Since(start))
	if !bytes.Equal(h.Sum(nil), want) {
		t.Fatal("content read across the kill differs")
	}
	st := ss.set.Stats()
	if st[victim].Up || st[1-victim].Handles != 1 {
		t.Fatalf("stats after the kill: %+v", st)
	}
	// The killed host rejoins once it serves again: at the transport's
	// next reconnect attempt (its backoff reaches 30 s).
	if err := ss.hosts[victim].Restart(); err != nil {
		t.Fatal(err)
	}
	waitStateFor(t, ss.set, victim, true, 45*time.Second)
}

// Killing the primary's sshd a third into a 1 GiB write through the
// mount, then fsync: the file is byte-identical to what was written, and
// the writes kept for replay stay within the handle's bound, far below the
// size of the file.
func TestSSHKillDuringWrite(t *testing.T) {
	ss := startSSHSet(t)
	const size = 1 << 30
	heap := watchHeap()
	defer heap.stop()
	begin := time.Now()
	// The data goes through dd, a process of its own. This process serves
	// the mount: had it the file open, the ssh it starts in place of the
	// killed connection would close its copy of the descriptor at exec,
	// which sends a FLUSH, which waits for the writes, which wait for that
	// connection. No real mount meets that deadlock: its daemon has no
	// file of its own mount open.
	out := filepath.Join(ss.mnt, "out")
	dd := exec.Command("dd", "of="+out, "bs=1M", "iflag=fullblock", "status=none")
	in, err := dd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	var ddErr bytes.Buffer
	dd.Stderr = &ddErr
	if err := dd.Start(); err != nil {
		t.Fatal(err)
	}
	defer dd.Process.Kill()
	h := sha256.New()
	pw := &progressWriter{w: io.MultiWriter(in, h), mark: size / 3, reached: make(chan struct{})}
	done := make(chan error, 1)
	go func() {
		err := stream(pw, 9, size)
		in.Close()
		if werr := dd.Wait(); err == nil && werr != nil {
			err = fmt.Errorf("dd: %v: %s", werr, bytes.TrimSpace(ddErr.Bytes()))
		}
		done <- err
	}()
	select {
	case <-pw.reached:
	case err := <-done:
		t.Fatalf("write ended before the kill: %v", err)
	case <-time.After(2 * time.Minute):
		t.Fatal("write too slow")
	}
	victim := serving(t, ss.set)
	if victim != 0 {
		t.Fatalf("file written through member %d, want the primary", victim)
	}
	ss.hosts[victim].Kill()
	ctx, cancel := context.WithTimeout(bg, 2*time.Minute)
	defer cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("write across the kill: %v", err)
		}
	case <-ctx.Done():
		t.Fatal("write did not finish after the kill")
	}
	f, err := os.OpenFile(out, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		t.Fatalf("fsync: %v", err)
	}
	if err := f.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
	if got := hashFile(t, filepath.Join(ss.dir, "out")); !bytes.Equal(got, h.Sum(nil)) {
		t.Fatal("file differs from what was written")
	}
	if st := ss.set.Stats(); st[0].Up || st[1].BytesWritten == 0 {
		t.Fatalf("stats after the kill: %+v", st)
	}
	peak := heap.stop()
	t.Logf("%d MiB written and synced across the kill in %v; peak live heap %d MiB, peak RSS %s",
		size>>20, time.Since(begin).Round(time.Millisecond), peak>>20, peakRSS())
	// A handle keeps at most twice ReplayLimit of acknowledged writes; the
	// rest of the process (FUSE and SFTP buffers) is far below that.
	if limit := uint64(2*DefaultReplayLimit + 64<<20); peak > limit {
		t.Errorf("live heap reached %d MiB writing %d MiB, want at most %d MiB", peak>>20, size>>20, limit>>20)
	}
}

// heapWatch samples the live heap (as of the latest garbage collection)
// until stopped, keeping the peak.
type heapWatch struct {
	done chan struct{}
	peak chan uint64
	once sync.Once
	max  uint64
}

func watchHeap() *heapWatch {
	w := &heapWatch{done: make(chan struct{}), peak: make(chan uint64, 1)}
	go func() {
		s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
		var peak uint64
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for {
			metrics.Read(s)
			peak = max(peak, s[0].Value.Uint64())
			select {
			case <-w.done:
				w.peak <- peak
				return
			case <-tick.C:
			}
		}
	}()
	return w
}

// stop ends the sampling and returns the peak; later calls return it too.
func (w *heapWatch) stop() uint64 {
	w.once.Do(func() {
		close(w.done)
		w.max = <-w.peak
	})
	return w.max
}

// peakRSS is this process's peak resident set size (VmHWM), for the log.
func peakRSS() string {
	status, _ := os.ReadFile("/proc/self/status")
	for _, line := range strings.Split(string(status), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			return strings.TrimSpace(v)
		}
	}
	return "unknown"
}
