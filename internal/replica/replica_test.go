package replica

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand"
	"os"
	"path/filepath"
	"sshfsm/internal/testenv"
	"sync"
	"syscall"
	"testing"
	"time"

	"sshfsm/internal/remote"
)

func randomFile(t *testing.T, path string, n int, seed int64) []byte {
	t.Helper()
	b := make([]byte, n)
	rand.New(rand.NewSource(seed)).Read(b)
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return b
}

// equalLatencies makes the set weigh no member by its latency for the
// test: the members are equal, and only a loaded machine's scheduling makes
// their latencies differ, which must not decide the spread a test checks.
func equalLatencies(t *testing.T) {
	old := latencyFloor
	latencyFloor = time.Hour
	t.Cleanup(func() { latencyFloor = old })
}

// readAll reads f to its end in chunks of size bs.
func readAll(t *testing.T, f remote.File, size, bs int) []byte {
	t.Helper()
	out := make([]byte, 0, size)
	buf := make([]byte, bs)
	for off := 0; ; {
		n, err := f.ReadAt(bg, buf, int64(off))
		out = append(out, buf[:n]...)
		off += n
		if err == io.EOF || (err == nil && n == 0) {
			return out
		}
		if err != nil {
			t.Fatalf("read at %d: %v", off, err)
		}
	}
}

// Eight files read in parallel spread over both members, each file staying
// on one member.
func TestSpreadAndLocality(t *testing.T) {
	equalLatencies(t)
	s, fms, dir := newSet(t, 2, Options{})
	const size = 2 << 20
	want := make([][]byte, 8)
	for i := range want {
		want[i] = randomFile(t, filepath.Join(dir, fmt.Sprint("f", i)), size, int64(i))
	}
	var wg sync.WaitGroup
	files := make([]remote.File, 8)
	for i := range files {
		f, err := s.Open(bg, fmt.Sprint("f", i), os.O_RDONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		files[i] = f
	}
	for i, f := range files {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if got := readAll(t, f, size, 128<<10); !bytes.Equal(got, want[i]) {
				t.Errorf("file %d: content differs", i)
			}
		}()
	}
	wg.Wait()
	st := s.Stats()
	total := st[0].BytesRead + st[1].BytesRead
	if total != 8*size {
		t.Fatalf("read %d bytes through the members, want %d", total, 8*size)
	}
	for i, m := range st {
		if share := float64(m.BytesRead) / float64(total); share < 0.3 || share > 0.7 {
			t.Errorf("member %d served %.0f%% of the bytes, want 30–70%%; %+v", i, 100*share, m)
		}
		if m.Handles != 4 {
			t.Errorf("member %d holds %d handles, want 4", i, m.Handles)
		}
		if fms[i].opens.Load() != 4 {
			t.Errorf("member %d: %d opens, want 4 (no re-open while healthy)", i, fms[i].opens.Load())
		}
	}
	for _, f := range files {
		if err := f.Close(bg); err != nil {
			t.Fatal(err)
		}
	}
	if h := s.Stats()[0].Handles + s.Stats()[1].Handles; h != 0 {
		t.Fatalf("%d handles counted after closing all", h)
	}
}

// A member that hangs before it told a new handle its file's attributes
// (the handle learns them in the background after Open) does not stall
// the move: the re-open does not wait for the hung member's answer within
// the healthy member's attempt, so the healthy member stays in service
// and serves the read.
func TestReadFailoverBeforeAttributes(t *testing.T) {
	s, fms, dir := newSet(t, 2, Options{Timeout: 300 * time.Millisecond})
	want := randomFile(t, filepath.Join(dir, "f"), 1<<20, 2)
	for _, fm := range fms {
		fm.statGate = make(chan struct{})
	}
	f, err := s.Open(bg, "f", os.O_RDONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close(bg)
	on := 0
	if s.Stats()[1].Handles == 1 {
		on = 1
	}
	close(fms[1-on].statGate)
	fms[on].set(hanging)
	got := make([]byte, len(want))
	var n int
	testenv.Returns(t, "a read whose member hangs", func() { n, err = f.ReadAt(bg, got, 0) })
	if n != len(want) || (err != nil && err != io.EOF) {
		t.Fatalf("read after the fault: %d, %v", n, err)
	}
	if !bytes.Equal(got, want) {
		t.Fatal("content differs after failover")
	}
	if st := s.Stats(); st[on].Up || !st[1-on].Up || st[1-on].Handles != 1 {
		t.Fatalf("stats after failover: %+v", st)
	}
}

// A read-only handle whose member breaks mid-file moves to the other one:
// no error, the right bytes, the member taken out.
func TestReadFailover(t *testing.T) {
	for _, fault := range []mode{broken, hanging} {
		t.Run(fmt.Sprint("mode", fault), func(t *testing.T) {
			s, fms, dir := newSet(t, 2, Options{Timeout: 300 * time.Millisecond})
			want := randomFile(t, filepath.Join(dir, "f"), 1<<20, 1)
			f, err := s.Open(bg, "f", os.O_RDONLY, 0)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close(bg)
			got := make([]byte, len(want))
			if _, err := f.ReadAt(bg, got[:1000], 0); err != nil {
				t.Fatal(err)
			}
			// The handle is established: it learned what a move checks
			// (TestReadFailoverBeforeAttributes covers the time before).
			<-f.(*file).learned
			on := 0
			if s.Stats()[1].Handles == 1 {
				on = 1
			}
			fms[on].set(fault)
			var n int
			testenv.Returns(t, "a read whose member failed", func() { n, err = f.ReadAt(bg, got[1000:], 1000) })
			if n != len(want)-1000 || (err != nil && err != io.EOF) {
				t.Fatalf("read after the fault: %d, %v", n, err)
			}
			if !bytes.Equal(got, want) {
				t.Fatal("content differs after failover")
			}
			st := s.Stats()
			if st[on].Up || st[on].Failovers != 1 || st[1-on].Handles != 1 || st[on].Handles != 0 {
				t.Fatalf("stats after failover: %+v", st)
			}
		})
	}
}

// Reads in flight on a member whose Health goes down are cancelled there
// and answered by the other member at once.
func TestInFlightReadMovesWhenHealthDown(t *testing.T) {
	s, fms, dir := newSet(t, 2, Options{})
	randomFile(t, filepath.Join(dir, "f"), 1000, 1)
	fms[0].set(hanging) // without a set timeout: only the health report frees it
	fms[1].set(hanging)
	done := make(chan error, 1)
	go func() {
		_, err := s.Lstat(bg, "f")
		done <- err
	}()
	time.Sleep(50 * time.Millisecond)
	first := 0
	if s.Stats()[1].InFlight == 1 {
		first = 1
	}
	fms[1-first].set(healthy)
	fms[first].setDown(true)
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("lstat: %v", err)
		}
	case <-time.After(2 * time.Second):
		t.Fatal("in-flight lstat not moved off the member reported down")
	}
	waitState(t, s, first, false)
}

// Answers (ENOENT, EACCES …) are passed on and take no member out.
func TestAnswersAreNotFailures(t *testing.T) {
	s, _, _ := newSet(t, 2, Options{})
	for range 10 {
		if _, err := s.Lstat(bg, "missing"); !errors.Is(err, fs.ErrNotExist) {
			t.Fatalf("lstat missing: %v", err)
		}
	}
	if err := s.Rmdir(bg, "missing"); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("rmdir missing: %v", err)
	}
	for i, m := range s.Stats() {
		if !m.Up || m.Failovers != 0 || m.Errors != 0 {
			t.Fatalf("member %d after answers: %+v", i, m)
		}
	}
}

// Namespace changes go to the first member while it is healthy, then to
// the next one.
func TestWritesGoToPrimary(t *testing.T) {
	s, fms, dir := newSet(t, 2, Options{})
	for i := range 5 {
		if err := s.Mkdir(bg, fmt.Sprint("d", i), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if r := s.Stats()[1].Requests; r != 0 {
		t.Fatalf("second member got %d requests, want 0", r)
	}
	fms[0].set(broken)
	if err := s.Mkdir(bg, "after", 0o755); err != nil {
		t.Fatalf("mkdir after the primary broke: %v", err)
	}
	if err := s.Rename(bg, "after", "renamed", false); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(filepath.Join(dir, "renamed")); err != nil || !fi.IsDir() {
		t.Fatalf("renamed: %v", err)
	}
	if s.Stats()[0].Up {
		t.Fatal("broken primary not taken out")
	}
}

// A change whose answer was lost is sent to the next member; "already
// done" answers then mean success. A change that never left (not sent)
// keeps its real answer.
func TestResentChanges(t *testing.T) {
	s, fms, dir := newSet(t, 2, Options{ProbeInterval: time.Hour})
	if err := os.Mkdir(filepath.Join(dir, "old"), 0o755); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "victim"), nil, 0o644)
	fms[0].set(answerLost)
	if err := s.Mkdir(bg, "new", 0o755); err != nil {
		t.Fatalf("mkdir re-sent: %v", err)
	}
	if fi, err := os.Stat(filepath.Join(dir, "new")); err != nil || !fi.IsDir() {
		t.Fatalf("new: %v", err)
	}
	fms[0].set(healthy)
	s.probe(s.members[0], false)
	fms[0].set(answerLost)
	if err := s.Remove(bg, "victim"); err != nil {
		t.Fatalf("remove re-sent: %v", err)
	}
	fms[0].set(healthy)
	s.probe(s.members[0], false)
	fms[0].set(answerLost)
	f, err := s.Open(bg, "excl", os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		t.Fatalf("exclusive create re-sent: %v", err)
	}
	f.Close(bg)
	fms[0].set(healthy)
	s.probe(s.members[0], false)
	fms[0].set(broken) // never reaches the server: the existing dir is an answer
	if err := s.Mkdir(bg, "old", 0o755); !errors.Is(err, fs.ErrExist) {
		t.Fatalf("mkdir of an existing directory, first attempt not sent: %v", err)
	}
}

// All members down: calls fail at once with ENOTCONN; after one comes
// back it rejoins and serves.
func TestAllDownThenRejoin(t *testing.T) {
	s, fms, _ := newSet(t, 2, Options{})
	changed := s.Changed()
	fms[0].setDown(true)
	fms[1].setDown(true)
	waitState(t, s, 0, false)
	waitState(t, s, 1, false)
	select {
	case <-changed:
	case <-time.After(time.Second):
		t.Fatal("Changed not fired")
	}
	if s.Up() {
		t.Fatal("set Up with every member down")
	}
	// The set has no timeout: a call that waited for a member would wait
	// for ever.
	var err error
	testenv.Returns(t, "lstat with every member down", func() { _, err = s.Lstat(bg, "") })
	if !errors.Is(err, syscall.ENOTCONN) || !errors.Is(err, ErrNoMember) {
		t.Fatalf("lstat with all down: %v", err)
	}
	if err := s.Mkdir(bg, "x", 0o755); !errors.Is(err, syscall.ENOTCONN) {
		t.Fatalf("mkdir with all down: %v", err)
	}
	fms[1].setDown(false)
	waitState(t, s, 1, true)
	if _, err := s.Lstat(bg, ""); err != nil {
		t.Fatalf("after rejoin: %v", err)
	}
	if st := s.Stats()[1]; st.Rejoins != 1 {
		t.Fatalf("rejoins = %d", st.Rejoins)
	}
}

// A member whose health stays up but whose probe fails stays out; it
// rejoins once the probe answers.
func TestRejoinNeedsProbe(t *testing.T) {
	s, fms, _ := newSet(t, 2, Options{ProbeTimeout: 100 * time.Millisecond})
	fms[0].set(broken)
	if err := s.Mkdir(bg, "d", 0o755); err != nil {
		t.Fatal(err)
	}
	waitState(t, s, 0, false)
	time.Sleep(200 * time.Millisecond)
	if s.Stats()[0].Up {
		t.Fatal("rejoined although its probe fails")
	}
	fms[0].set(healthy)
	waitState(t, s, 0, true)
	if err := s.Mkdir(bg, "e", 0o755); err != nil {
		t.Fatal(err)
	}
	if r := s.Stats()[0].Rejoins; r != 1 {
		t.Fatalf("rejoins = %d", r)
	}
}

// A probe answered before its member was taken out, but seen after, does
// not bring the member back: only a probe sent after the fault can.
func TestStaleProbeDoesNotRejoin(t *testing.T) {
	s, fms, _ := newSet(t, 2, Options{ProbeInterval: time.Hour})
	answered, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	fms[0].lstatAnswered = func() {
		once.Do(func() {
			close(answered)
			<-release
		})
	}
	m := s.members[0]
	done := make(chan struct{})
	go func() {
		defer close(done)
		s.probe(m, false)
	}()
	<-answered
	s.takeOut(m, errInjected)
	close(release)
	<-done
	if st := s.Stats()[0]; st.Up || st.Rejoins != 0 {
		t.Fatalf("a probe answered before the take-out brought the member back: %+v", st)
	}
	s.probe(m, false)
	if st := s.Stats()[0]; !st.Up || st.Rejoins != 1 {
		t.Fatalf("a probe after the take-out did not bring the member back: %+v", st)
	}
}

// A read-only file that changed underneath fails with EIO rather than
// mixing versions after a move.
func TestChangedFileFailsEIO(t *testing.T) {
	s, fms, dir := newSet(t, 2, Options{})
	randomFile(t, filepath.Join(dir, "f"), 100_000, 1)
	f, err := s.Open(bg, "f", os.O_RDONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close(bg)
	if _, err := f.ReadAt(bg, make([]byte, 1000), 0); err != nil {
		t.Fatal(err)
	}
	time.Sleep(50 * time.Millisecond) // the attributes are learned in the background
	randomFile(t, filepath.Join(dir, "f"), 50_000, 2)
	on := 0
	if s.Stats()[1].Handles == 1 {
		on = 1
	}
	fms[on].set(broken)
	if _, err := f.ReadAt(bg, make([]byte, 1000), 1000); !errors.Is(err, syscall.EIO) {
		t.Fatalf("read of a changed file after failover: %v, want EIO", err)
	}
}
