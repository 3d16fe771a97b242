package contentcache

import (
	"encoding/binary"
	"testing"
)

// FuzzRecords decodes anything as each part of a record file (header,
// digest, marker, slot) and as a small file's header: as read, and sealed
// with a matching CRC so that the decoders see past it. A decoded part
// holds no negative size and encodes back to itself; a sealed part with
// any one byte changed, or a slot read at another block's place, reads as
// absent.
func FuzzRecords(f *testing.F) {
	f.Add(header{size: 1 << 20, bs: 1 << 16}.encode(), true, uint8(9), uint8(0x40), int64(3), uint32(1))
	f.Add(encodeDigest(digestComputed, [32]byte{1, 2, 3}), false, uint8(40), uint8(1), int64(0), uint32(7))
	f.Add(encodeMarker([16]byte{9, 9}, 12345), false, uint8(63), uint8(0x80), int64(1<<40), uint32(1<<31))
	f.Add(smallHeader{size: 3, crc: 0xdeadbeef, sum: [32]byte{7}}.encode(), false, uint8(0), uint8(0xff), int64(0), uint32(2))
	f.Fuzz(func(t *testing.T, b []byte, seal bool, at, flip uint8, blk int64, other uint32) {
		if seal && len(b) >= recordLen {
			b = append([]byte(nil), b[:recordLen]...)
			binary.LittleEndian.PutUint32(b[recordLen-4:], checksum(b[:recordLen-4]))
		}
		damaged := func() []byte {
			if len(b) < recordLen || flip == 0 {
				return nil
			}
			d := append([]byte(nil), b[:recordLen]...)
			d[int(at)%recordLen] ^= flip
			return d
		}

		if h, ok := decodeHeader(b); ok {
			if h.size < 0 || h.bs <= 0 || h.bs&(h.bs-1) != 0 {
				t.Fatalf("header %+v", h)
			}
			if again, ok := decodeHeader(h.encode()); !ok || again != h {
				t.Fatalf("header %+v encodes to %+v", h, again)
			}
			if d := damaged(); d != nil {
				if h2, ok := decodeHeader(d); ok {
					t.Fatalf("damaged header read as %+v", h2)
				}
			}
		}
		if kind, sum := decodeDigest(b); kind != digestNone {
			if kind != digestTrusted && kind != digestComputed {
				t.Fatalf("digest kind %d", kind)
			}
			if k2, s2 := decodeDigest(encodeDigest(kind, sum)); k2 != kind || s2 != sum {
				t.Fatalf("digest %d %x encodes to %d %x", kind, sum, k2, s2)
			}
			if d := damaged(); d != nil {
				if k2, _ := decodeDigest(d); k2 != digestNone {
					t.Fatalf("damaged digest read as kind %d", k2)
				}
			}
		}
		if boot, size, ok := decodeMarker(b); ok {
			if size < 0 {
				t.Fatalf("marker of size %d", size)
			}
			if b2, s2, ok := decodeMarker(encodeMarker(boot, size)); !ok || b2 != boot || s2 != size {
				t.Fatalf("marker %x %d encodes to %x %d", boot, size, b2, s2)
			}
			if d := damaged(); d != nil {
				if _, _, ok := decodeMarker(d); ok {
					t.Fatal("damaged marker read as valid")
				}
			}
		}
		if h, ok := decodeSmall(b); ok {
			if h.size < 0 {
				t.Fatalf("small header %+v", h)
			}
			if again, ok := decodeSmall(h.encode()); !ok || again != h {
				t.Fatalf("small header %+v encodes to %+v", h, again)
			}
			if d := damaged(); d != nil {
				if h2, ok := decodeSmall(d); ok {
					t.Fatalf("damaged small header read as %+v", h2)
				}
			}
		}
		checkSlot(t, b, blk, other)
	})
}

// checkSlot decodes b as the slot of block blk, and sealed for blk.
func checkSlot(t *testing.T, b []byte, blk int64, other uint32) {
	if len(b) < slotLen || blk < 0 {
		return
	}
	s := append([]byte(nil), b[:slotLen]...)
	for _, sealed := range []bool{false, true} {
		if sealed {
			binary.LittleEndian.PutUint32(s[12:], slotCheck(s, blk))
		}
		sum, n, state := getSlot(s, blk)
		if state == slotAbsent {
			continue
		}
		if state != slotPresent && state != slotDropped || n < 0 {
			t.Fatalf("slot: state %d, %d bytes", state, n)
		}
		again := make([]byte, slotLen)
		putSlot(again, blk, sum, n, state)
		if s2, n2, st2 := getSlot(again, blk); s2 != sum || n2 != n || st2 != state {
			t.Fatalf("slot %x %d %d encodes to %x %d %d", sum, n, state, s2, n2, st2)
		}
		// Blocks whose indexes differ in their low 32 bits only: the
		// CRC tells every such pair apart.
		if j := blk ^ int64(other); other != 0 && j >= 0 {
			if _, _, st := getSlot(s, j); st != slotAbsent {
				t.Fatalf("the slot of block %d read as block %d's", blk, j)
			}
		}
	}
}
