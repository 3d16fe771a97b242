package journal

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"sync"
	"testing"

	"sshfsm/internal/testenv"
)

// everyKind is one change of each kind, with every field its kind uses.
func everyKind() []Change {
	return []Change{
		{Op: Mkdir, Host: "u@h1:22", Branch: "/srv", Path: "/d", Mode: 0o755},
		{Op: Create, Host: "u@h1:22", Branch: "/srv", Path: "/d/f", Mode: 0o644, Flags: 0o1101},
		{Op: Write, Host: "u@h1:22", Branch: "/srv", Path: "/d/f", Offset: 7, Data: []byte("hello")},
		{Op: Write, Host: "u@h1:22", Branch: "/srv", Path: "/d/f", Offset: 1 << 33, Data: content("big", 3000)},
		{Op: Setattr, Host: "u@h1:22", Branch: "/srv", Path: "/d/f", Attr: Attr{
			Set: SetMode | SetUID | SetGID | SetSize | SetAtime | SetMtime, Mode: 0o600, UID: 1000, GID: 100,
			Size: 12, Atime: 1700000000123456789, Mtime: -5}},
		{Op: Setattr, Host: "u@h1:22", Branch: "/srv", Path: "/d", Attr: Attr{Set: SetMtime, Mtime: 42}},
		{Op: Symlink, Host: "u@h1:22", Branch: "/srv", Path: "/d/l", Target: "../weird\nname\x00"},
		{Op: Link, Host: "u@h1:22", Branch: "/srv", Path: "/d/f", NewPath: "/d/g"},
		{Op: Rename, Host: "u@h2:22", Branch: "/home", Path: "/d", NewPath: "/e", Flags: 1},
		{Op: Unlink, Host: "u@h1:22", Branch: "/srv", Path: "/e/g"},
		{Op: Rmdir, Host: "u@h1:22", Branch: "/srv", Path: "/e"},
		{Op: Write, Host: "u@h1:22", Branch: "/srv", Path: "/empty", Offset: 3},
	}
}

// sameChanges compares what a journal gave back with what was appended
// (Seq and At as Append set them; write data through Data).
func sameChanges(t *testing.T, j *Journal, got []Change, want []Change, seqs []uint64) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%d changes back, want %d", len(got), len(want))
	}
	for i := range got {
		g, w := got[i], want[i]
		if g.Seq != seqs[i] {
			t.Fatalf("change %d has seq %d, want %d", i, g.Seq, seqs[i])
		}
		if w.Op == Write {
			data, err := j.Data(&g)
			if err != nil {
				t.Fatalf("data of change %d: %v", i, err)
			}
			if !bytes.Equal(data, w.Data) || g.Len != int64(len(w.Data)) {
				t.Fatalf("change %d: %d bytes back (Len %d), want %d", i, len(data), g.Len, len(w.Data))
			}
		}
		g.Seq, g.At, g.Data, g.Len, g.Spill, g.SpillCRC = 0, 0, nil, 0, "", 0
		w.Data = nil
		if !reflect.DeepEqual(g, w) {
			t.Fatalf("change %d back as\n%+v\nwant\n%+v", i, g, w)
		}
	}
}

func TestAppendReplay(t *testing.T) {
	dir := t.TempDir()
	j, got := openJournal(t, dir, func(o *Options) { o.SpillSize = 1024 })
	if len(got) != 0 {
		t.Fatalf("a new journal holds %d changes", len(got))
	}
	want := everyKind()
	var seqs []uint64
	for _, c := range want {
		seqs = append(seqs, appendChange(t, j, c))
	}
	if len(spillFiles(t, dir)) != 1 {
		t.Fatalf("spill files: %d, want 1 (the 3000-byte write)", len(spillFiles(t, dir)))
	}
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	j, got = openJournal(t, dir, func(o *Options) { o.SpillSize = 1024 })
	sameChanges(t, j, got, want, seqs)
	// Sequence numbers go on after a reopen.
	if s := appendChange(t, j, Change{Op: Unlink, Path: "/x"}); s <= seqs[len(seqs)-1] {
		t.Fatalf("seq %d after reopen, last was %d", s, seqs[len(seqs)-1])
	}
}

func TestDoneIsNotReplayed(t *testing.T) {
	dir := t.TempDir()
	j, _ := openJournal(t, dir, func(o *Options) { o.SpillSize = 16 })
	var seqs []uint64
	for i := range 6 {
		seqs = append(seqs, appendChange(t, j, Change{Op: Write, Path: "/f", Offset: int64(i), Data: content(string(rune('a'+i)), 20*i)}))
	}
	if err := j.Done(seqs[1], seqs[4]); err != nil {
		t.Fatal(err)
	}
	if err := j.Done(seqs[1]); err == nil {
		t.Fatal("a second Done of one change accepted")
	}
	if err := j.Done(seqs[5] + 100); err == nil {
		t.Fatal("Done of a change never appended accepted")
	}
	if st := j.Stats(); st.Entries != 4 {
		t.Fatalf("Stats: %+v, want 4 entries", st)
	}
	j.crash()

	j, got := openJournal(t, dir, nil)
	var back []uint64
	for _, c := range got {
		back = append(back, c.Seq)
	}
	if want := []uint64{seqs[0], seqs[2], seqs[3], seqs[5]}; !reflect.DeepEqual(back, want) {
		t.Fatalf("replayed %v, want %v", back, want)
	}
	// The spill files of the changes done are gone; the others stay.
	if n := len(spillFiles(t, dir)); n != 3 {
		t.Fatalf("%d spill files, want 3", n)
	}
	if err := j.Done(back...); err != nil {
		t.Fatal(err)
	}
	if n := len(spillFiles(t, dir)); n != 0 {
		t.Fatalf("%d spill files after everything is done", n)
	}
	if st := j.Stats(); st.Entries != 0 || st.Bytes != 0 || st.Oldest != 0 {
		t.Fatalf("Stats after everything is done: %+v", st)
	}
}

func TestBusy(t *testing.T) {
	dir := t.TempDir()
	openJournal(t, dir, nil)
	if _, _, err := Open(Options{Dir: dir}); !errors.Is(err, ErrBusy) {
		t.Fatalf("second open: %v, want ErrBusy", err)
	}
}

func TestSegmentsRotateAndGo(t *testing.T) {
	dir := t.TempDir()
	small := func(o *Options) { o.SegmentSize = 16 << 10; o.SpillSize = 2000 }
	j, _ := openJournal(t, dir, small)
	var seqs []uint64
	for i := range 60 {
		seqs = append(seqs, appendChange(t, j, Change{Op: Write, Path: "/f", Data: content(string(rune(i)), 1500+50*i)}))
	}
	if n := len(segFiles(t, dir)); n < 4 {
		t.Fatalf("%d segments after 60 batches of 4 KiB or more in 16 KiB segments", n)
	}
	// Draining from the front frees whole segments; one change left in
	// the first keeps every later one, since their done records may be
	// needed.
	if err := j.Done(seqs[1:]...); err != nil {
		t.Fatal(err)
	}
	if n := len(segFiles(t, dir)); n < 4 {
		t.Fatalf("%d segments while the first still holds a change", n)
	}
	j.crash()
	j, got := openJournal(t, dir, small)
	if len(got) != 1 || got[0].Seq != seqs[0] {
		t.Fatalf("replayed %d changes, want only %d", len(got), seqs[0])
	}
	if err := j.Done(seqs[0]); err != nil {
		t.Fatal(err)
	}
	if n := len(segFiles(t, dir)); n != 1 {
		t.Fatalf("%d segments when everything is done, want the active one", n)
	}
	if n := len(spillFiles(t, dir)); n != 0 {
		t.Fatalf("%d spill files when everything is done", n)
	}
	s := appendChange(t, j, Change{Op: Mkdir, Path: "/again"})
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	_, got = openJournal(t, dir, small)
	if len(got) != 1 || got[0].Seq != s || got[0].Path != "/again" {
		t.Fatalf("after a drain and a reopen: %+v", got)
	}
}

// lastSegment is the newest segment file holding records, after crash.
func lastSegment(t *testing.T, dir string) string {
	t.Helper()
	segs := segFiles(t, dir)
	return segs[len(segs)-1]
}

// TestTornTail: a batch cut short by a crash, in any way, is dropped and
// the batches before it come back whole.
func TestTornTail(t *testing.T) {
	for _, tc := range []struct {
		name string
		tear func(t *testing.T, data []byte, last int) []byte // last: where the last batch starts
		kept bool                                             // the last batch's records are whole: it stays
	}{
		{"cut inside the header", func(t *testing.T, d []byte, last int) []byte { return d[:last+10] }, false},
		{"cut inside a record", func(t *testing.T, d []byte, last int) []byte { return d[:last+100] }, false},
		{"cut at a block", func(t *testing.T, d []byte, last int) []byte { return d[:last+blockSize] }, false},
		{"a block of zeros", func(t *testing.T, d []byte, last int) []byte {
			clear(d[last+blockSize : last+2*blockSize])
			return d
		}, false},
		{"header zeroed", func(t *testing.T, d []byte, last int) []byte {
			clear(d[last : last+batchHeaderLen])
			return d
		}, false},
		{"padding cut", func(t *testing.T, d []byte, last int) []byte {
			return d[:last+batchHeaderLen+int(binary.LittleEndian.Uint32(d[last+4:]))]
		}, true},
		{"garbage after it", func(t *testing.T, d []byte, last int) []byte {
			d[last+50] ^= 1
			return append(d, content("junk", 3*blockSize)...)
		}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			j, _ := openJournal(t, dir, nil)
			var want []uint64
			for i := range 3 {
				want = append(want, appendChange(t, j, Change{Op: Write, Path: "/f", Data: content(string(rune(i)), 100)}))
			}
			// The last batch: several records, more than one block.
			var last int
			j.o.onCommit = func(int) { last = int(j.segSize) }
			g := appendChange(t, j, Change{Op: Write, Path: "/g", Data: content("x", 6000)})
			if tc.kept {
				want = append(want, g)
			}
			j.crash()
			seg := lastSegment(t, dir)
			data, err := os.ReadFile(seg)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(seg, tc.tear(t, data, last), 0o600); err != nil {
				t.Fatal(err)
			}
			j, got := openJournal(t, dir, nil)
			var back []uint64
			for _, c := range got {
				back = append(back, c.Seq)
			}
			if !reflect.DeepEqual(back, want) {
				t.Fatalf("replayed %v, want %v", back, want)
			}
			// The journal goes on, and so does it after another crash.
			s := appendChange(t, j, Change{Op: Mkdir, Path: "/after"})
			j.crash()
			_, got = openJournal(t, dir, nil)
			if len(got) != len(want)+1 || got[len(got)-1].Seq != s {
				t.Fatalf("after the torn tail and another crash: %d changes", len(got))
			}
		})
	}
}

// TestCorrupt: an acknowledged record that cannot be read back fails the
// open; it is never skipped.
func TestCorrupt(t *testing.T) {
	for _, tc := range []struct {
		name   string
		damage func(t *testing.T, dir string, segs []string)
	}{
		{"a record in the middle of the last segment", func(t *testing.T, dir string, segs []string) {
			flip(t, segs[len(segs)-1], blockSize+batchHeaderLen+frameLen+20)
		}},
		{"a batch header in the middle", func(t *testing.T, dir string, segs []string) {
			flip(t, segs[len(segs)-1], blockSize+3)
		}},
		{"the last batch of an older segment", func(t *testing.T, dir string, segs []string) {
			data, _ := os.ReadFile(segs[0])
			flip(t, segs[0], len(data)-2*blockSize+batchHeaderLen+frameLen+1)
		}},
		{"a segment header", func(t *testing.T, dir string, segs []string) { flip(t, segs[1], 20) }},
		{"a segment lost", func(t *testing.T, dir string, segs []string) {
			if err := os.Remove(segs[1]); err != nil {
				t.Fatal(err)
			}
		}},
		{"an older segment cut short", func(t *testing.T, dir string, segs []string) {
			data, _ := os.ReadFile(segs[0])
			if err := os.Truncate(segs[0], int64(len(data)-blockSize)); err != nil {
				t.Fatal(err)
			}
		}},
		{"a spill file lost", func(t *testing.T, dir string, segs []string) {
			ents := spillFiles(t, dir)
			if err := os.Remove(filepath.Join(dir, spillDirName, ents[0].Name())); err != nil {
				t.Fatal(err)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			// Records that fill their blocks, so that nothing is carried
			// into newer segments; the last one spilled.
			small := func(o *Options) { o.SegmentSize = 12 << 10; o.SpillSize = 3800 }
			j, _ := openJournal(t, dir, small)
			for i := range 12 {
				n := 3000 + 50*i
				if i == 11 {
					n = 5000
				}
				appendChange(t, j, Change{Op: Write, Path: "/f", Data: content(string(rune(i)), n)})
			}
			j.crash()
			segs := segFiles(t, dir)
			if len(segs) < 3 {
				t.Fatalf("%d segments", len(segs))
			}
			tc.damage(t, dir, segs)
			if _, _, err := Open(Options{Dir: dir}); !errors.Is(err, ErrCorrupt) {
				t.Fatalf("open: %v, want ErrCorrupt", err)
			}
		})
	}
}

func TestSpillDamaged(t *testing.T) {
	dir := t.TempDir()
	j, _ := openJournal(t, dir, func(o *Options) { o.SpillSize = 10 })
	appendChange(t, j, Change{Op: Write, Path: "/f", Data: content("a", 100)})
	j.crash()
	spill := filepath.Join(dir, spillDirName, spillFiles(t, dir)[0].Name())
	flip(t, spill, 50)
	j, got := openJournal(t, dir, nil)
	if _, err := j.Data(&got[0]); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("data of a damaged spill file: %v, want ErrCorrupt", err)
	}
}

func flip(t *testing.T, path string, at int) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	data[at] ^= 0x10
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestGroupCommit: appends that arrive while a batch is being written go
// together in the next one, with one sync.
func TestGroupCommit(t *testing.T) {
	dir := t.TempDir()
	var mu sync.Mutex
	var batches []int
	release := make(chan struct{})
	j, _ := openJournal(t, dir, func(o *Options) {
		o.onCommit = func(n int) {
			mu.Lock()
			batches = append(batches, n)
			first := len(batches) == 1
			mu.Unlock()
			if first {
				<-release
			}
		}
	})
	const n = 20
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); appendChange(t, j, Change{Op: Mkdir, Path: "/first"}) }()
	testenv.Eventually(t, "the first batch started", func() bool { mu.Lock(); defer mu.Unlock(); return len(batches) == 1 })
	for i := range n {
		wg.Add(1)
		go func() { defer wg.Done(); appendChange(t, j, Change{Op: Create, Path: "/f" + string(rune('a'+i))}) }()
	}
	testenv.Eventually(t, "every append queued", func() bool { j.mu.Lock(); defer j.mu.Unlock(); return len(j.queue) == n })
	close(release)
	wg.Wait()
	if !reflect.DeepEqual(batches, []int{1, n}) {
		t.Fatalf("batches %v, want [1 %d]", batches, n)
	}
	if st := j.Stats(); st.Entries != n+1 {
		t.Fatalf("stats %+v", st)
	}
}

func TestBounds(t *testing.T) {
	t.Run("entries", func(t *testing.T) {
		j, _ := openJournal(t, t.TempDir(), func(o *Options) { o.MaxEntries = 3 })
		var seqs []uint64
		for range 3 {
			seqs = append(seqs, appendChange(t, j, Change{Op: Create, Path: "/f"}))
		}
		checkWaits(t, j, Change{Op: Create, Path: "/g"}, seqs[0])
	})
	t.Run("bytes", func(t *testing.T) {
		j, _ := openJournal(t, t.TempDir(), func(o *Options) { o.MaxBytes = 10000; o.SpillSize = 100 })
		s1 := appendChange(t, j, Change{Op: Write, Path: "/f", Data: make([]byte, 6000)}) // spilled: counted too
		appendChange(t, j, Change{Op: Write, Path: "/f", Data: make([]byte, 3000)})
		if st := j.Stats(); st.Bytes < 9000 || st.Bytes > 10000 {
			t.Fatalf("stats %+v", st)
		}
		checkWaits(t, j, Change{Op: Write, Path: "/f", Data: make([]byte, 2000)}, s1)
	})
	t.Run("a change larger than the bound alone", func(t *testing.T) {
		j, _ := openJournal(t, t.TempDir(), func(o *Options) { o.MaxBytes = 1000; o.SpillSize = 100 })
		appendChange(t, j, Change{Op: Write, Path: "/f", Data: make([]byte, 5000)})
	})
}

// checkWaits checks that c waits while the journal is full (an Append
// whose context ends returns its error, leaving nothing) and goes in once
// free is done.
func checkWaits(t *testing.T, j *Journal, c Change, free uint64) {
	t.Helper()
	before := j.Stats()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := j.Append(ctx, c); !errors.Is(err, context.Canceled) {
		t.Fatalf("append past the bound with its context ended: %v", err)
	}
	if after := j.Stats(); after.Entries != before.Entries || after.Bytes != before.Bytes {
		t.Fatalf("a refused append left %+v, was %+v", after, before)
	}
	if n := len(spillFiles(t, j.dir)); n != countSpilled(j) {
		t.Fatalf("%d spill files for %d spilled changes", n, countSpilled(j))
	}
	done := make(chan error, 1)
	go func() {
		_, err := j.Append(context.Background(), c)
		done <- err
	}()
	testenv.Eventually(t, "the append waiting for room", func() bool { return j.Stats().Waiting == 1 })
	// A waiting write has not written its spill file yet: the bound holds
	// for the disk too.
	if n := len(spillFiles(t, j.dir)); n != countSpilled(j) {
		t.Fatalf("%d spill files while an append waits, for %d spilled changes", n, countSpilled(j))
	}
	if err := j.Done(free); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatalf("append after room was made: %v", err)
	}
	if st := j.Stats(); st.Entries != before.Entries {
		t.Fatalf("stats %+v, want %d entries", st, before.Entries)
	}
}

func countSpilled(j *Journal) int {
	j.mu.Lock()
	defer j.mu.Unlock()
	n := 0
	for _, e := range j.pending {
		if e.spill != "" {
			n++
		}
	}
	return n
}

func TestCloseWakesWaiters(t *testing.T) {
	j, _ := openJournal(t, t.TempDir(), func(o *Options) { o.MaxEntries = 1 })
	appendChange(t, j, Change{Op: Create, Path: "/f"})
	done := make(chan error, 1)
	go func() {
		_, err := j.Append(context.Background(), Change{Op: Create, Path: "/g"})
		done <- err
	}()
	testenv.Eventually(t, "the second append waiting", func() bool { return j.Stats().Waiting == 1 })
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	if err := <-done; !errors.Is(err, ErrClosed) {
		t.Fatalf("append waiting at close: %v", err)
	}
}

func TestRejects(t *testing.T) {
	j, _ := openJournal(t, t.TempDir(), nil)
	for _, c := range []Change{
		{Op: opDone},
		{Op: 0},
		{Op: Rmdir, Path: string(make([]byte, maxName+1))},
		{Op: Setattr, Attr: Attr{Set: 0x80}},
		{Op: Write, Offset: -1},
		{Op: Mkdir, Path: "/d", Data: []byte("x")},
	} {
		if _, err := j.Append(context.Background(), c); err == nil {
			t.Errorf("append of %+v accepted", c.Op)
		}
	}
}

// TestHalfMadeSegment: a segment whose header a crash cut short, as it
// was made after the one before was ended, never held a record; it goes,
// and the segments before it count.
func TestHalfMadeSegment(t *testing.T) {
	dir := t.TempDir()
	j, _ := openJournal(t, dir, nil)
	s := appendChange(t, j, Change{Op: Mkdir, Path: "/d"})
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	segs := segFiles(t, dir)
	var n uint64
	if _, err := fmt.Sscanf(filepath.Base(segs[len(segs)-1]), "%016x", &n); err != nil {
		t.Fatal(err)
	}
	half := filepath.Join(dir, segName(n+1))
	if err := os.WriteFile(half, segHeader{num: n + 1, firstSeq: s + 1}.encode()[:40], 0o600); err != nil {
		t.Fatal(err)
	}
	_, got := openJournal(t, dir, nil)
	if len(got) != 1 || got[0].Seq != s {
		t.Fatalf("replayed %+v", got)
	}
}

// TestHeaderBlockCut: a segment whose header block reached the disk only
// in part (its header whole) is a segment with no batch; it is ended
// where its first batch would have started.
func TestHeaderBlockCut(t *testing.T) {
	dir := t.TempDir()
	j, _ := openJournal(t, dir, nil)
	s := appendChange(t, j, Change{Op: Mkdir, Path: "/d"})
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	j, _ = openJournal(t, dir, nil) // makes a new segment, empty
	j.crash()
	if err := os.Truncate(lastSegment(t, dir), 100); err != nil {
		t.Fatal(err)
	}
	j, got := openJournal(t, dir, nil)
	if len(got) != 1 || got[0].Seq != s {
		t.Fatalf("replayed %+v", got)
	}
	s2 := appendChange(t, j, Change{Op: Mkdir, Path: "/e"})
	j.crash()
	_, got = openJournal(t, dir, nil)
	if len(got) != 2 || got[1].Seq != s2 {
		t.Fatalf("replayed %+v", got)
	}
}

// TestCarry: a change the drain does not send keeps no string of old
// segments on disk: it is copied forward, and the segments behind it go.
func TestCarry(t *testing.T) {
	dir := t.TempDir()
	small := func(o *Options) { o.SegmentSize = 16 << 10 }
	j, _ := openJournal(t, dir, small)
	stuck := appendChange(t, j, Change{Op: Create, Host: "h", Path: "/stuck", Mode: 0o600})
	for i := range 200 {
		s := appendChange(t, j, Change{Op: Write, Path: "/f", Data: content(string(rune(i)), 1500)})
		if err := j.Done(s); err != nil {
			t.Fatal(err)
		}
	}
	// 200 batches of 4 KiB in 16 KiB segments: 67 segments, had they
	// stayed behind the stuck change.
	if n := len(segFiles(t, dir)); n > 3 {
		t.Fatalf("%d segments behind one pending change", n)
	}
	last := appendChange(t, j, Change{Op: Mkdir, Path: "/last"})
	j.crash()
	j, got := openJournal(t, dir, small)
	if len(got) != 2 || got[0].Seq != stuck || got[0].Path != "/stuck" || got[0].Mode != 0o600 || got[1].Seq != last {
		t.Fatalf("replayed %+v", got)
	}
	if err := j.Done(stuck, last); err != nil {
		t.Fatal(err)
	}
	if n := len(segFiles(t, dir)); n != 1 {
		t.Fatalf("%d segments once everything is done", n)
	}
}

// TestCarryCrashBeforeRemoval: a crash after changes were copied forward
// and before the segments behind them went replays each change once.
func TestCarryCrashBeforeRemoval(t *testing.T) {
	dir := t.TempDir()
	removed := map[string][]byte{}
	small := func(o *Options) {
		o.SegmentSize = 16 << 10
		o.onRemove = func(n uint64) {
			data, err := os.ReadFile(filepath.Join(dir, segName(n)))
			if err != nil {
				panic(err)
			}
			removed[segName(n)] = data
		}
	}
	j, _ := openJournal(t, dir, small)
	a := appendChange(t, j, Change{Op: Create, Path: "/a"})
	b := appendChange(t, j, Change{Op: Write, Path: "/b", Data: content("b", 900)})
	for i := 0; len(removed) == 0; i++ {
		if i == 100 {
			t.Fatal("nothing carried after 100 rotations' worth of appends")
		}
		s := appendChange(t, j, Change{Op: Write, Path: "/f", Data: content(string(rune(i)), 1500)})
		if err := j.Done(s); err != nil {
			t.Fatal(err)
		}
	}
	if err := j.Done(b); err != nil { // done after its copy: the copy must not come back
		t.Fatal(err)
	}
	j.crash()
	for name, data := range removed {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	_, got := openJournal(t, dir, func(o *Options) { o.SegmentSize = 16 << 10 })
	if len(got) != 1 || got[0].Seq != a {
		t.Fatalf("replayed %+v, want only %d", got, a)
	}
}
