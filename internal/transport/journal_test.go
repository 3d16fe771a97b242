package transport

import (
	"bytes"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
)

// apply makes the changes on a file's contents one by one, as the server
// did when they were acknowledged.
func apply(b []byte, es []entry) []byte {
	for _, e := range es {
		if e.trunc {
			if int(e.off) <= len(b) {
				b = b[:e.off]
			} else {
				b = append(b, make([]byte, int(e.off)-len(b))...)
			}
			continue
		}
		if end := int(e.off) + len(e.data); end > len(b) {
			b = append(b, make([]byte, end-len(b))...)
		}
		copy(b[e.off:], e.data)
	}
	return b
}

// replayOn writes the net effect of es over b, as replay does.
func replayOn(b []byte, es []entry) []byte {
	segs, size, sized := netEffect(es)
	for _, sg := range segs {
		if end := int(sg.end()); end > len(b) {
			b = append(b, make([]byte, end-len(b))...)
		}
		if sg.data != nil {
			copy(b[sg.off:], sg.data)
		} else {
			clear(b[sg.off:sg.end()])
		}
	}
	if sized {
		b = apply(b, []entry{{off: size, trunc: true}})
	}
	return b
}

// TestNetEffectReplaysToTheSameFile: replaying the folded log over the
// file as it was at the last sync, or over the file that already holds
// every change, gives the file the changes made.
func TestNetEffectReplaysToTheSameFile(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for round := range 2000 {
		base := make([]byte, rng.IntN(64))
		for i := range base {
			base[i] = byte(rng.IntN(255) + 1)
		}
		var es []entry
		size := int64(len(base))
		for range rng.IntN(8) {
			if rng.IntN(3) == 0 {
				n := int64(rng.IntN(96))
				es = append(es, entry{off: n, trunc: true, prev: min(size, n)})
				size = n
				continue
			}
			d := make([]byte, rng.IntN(24)+1)
			for i := range d {
				d[i] = byte(rng.IntN(255) + 1)
			}
			off := int64(rng.IntN(80))
			es = append(es, entry{off: off, data: d})
			size = max(size, off+int64(len(d)))
		}
		want := apply(append([]byte(nil), base...), es)
		if got := replayOn(append([]byte(nil), base...), es); !bytes.Equal(got, want) {
			t.Fatalf("round %d: replay over the synced file gives %v, want %v (changes %+v)", round, got, want, es)
		}
		if got := replayOn(append([]byte(nil), want...), es); !bytes.Equal(got, want) {
			t.Fatalf("round %d: replay over the changed file gives %v, want %v (changes %+v)", round, got, want, es)
		}
	}
}

// TestReplayLogStaysBounded: a file written far past ReplayLimit without
// an fsync syncs itself, so the acknowledged writes kept for replay stay
// within twice the limit, and what was written is on the server.
func TestReplayLogStaysBounded(t *testing.T) {
	const limit = 64 << 10
	h, _, dir := dialTest(t, 1, func(o *Options) { o.ReplayLimit = limit })
	rf, err := h.Remote().Open(bg, "big", os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	f := rf.(*file)
	chunk := bytes.Repeat([]byte{7}, 16<<10)
	most := int64(0)
	for i := range 64 {
		if _, err := f.WriteAt(bg, chunk, int64(i*len(chunk))); err != nil {
			t.Fatal(err)
		}
		f.log.mu.Lock()
		most = max(most, f.log.bytes)
		f.log.mu.Unlock()
	}
	if most > 2*limit {
		t.Errorf("the replay log held %d bytes, limit %d", most, limit)
	}
	if err := f.Close(bg); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(filepath.Join(dir, "big"))
	if err != nil {
		t.Fatal(err)
	}
	if want := bytes.Repeat([]byte{7}, 64*len(chunk)); !bytes.Equal(got, want) {
		t.Errorf("the server holds %d bytes, want %d of the data written", len(got), len(want))
	}
}
