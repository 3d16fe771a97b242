package transport

import (
	"bytes"
	"math/rand/v2"
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
