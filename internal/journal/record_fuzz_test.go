package journal

import (
	"bytes"
	"testing"
)

// FuzzRecord decodes anything as a record payload, as a record frame
// (as read, and framed with a matching CRC so that the decoder sees past
// it), as a batch and as a segment. What decodes is what Append could
// have written: a payload encodes back to the very same bytes, a frame
// with any byte after its length changed does not decode, a batch gives
// back exactly its records, and nothing panics or allocates from a
// length it was not given bytes for.
func FuzzRecord(f *testing.F) {
	for _, c := range everyKind() {
		c.Seq, c.At = 77, 1700000000000000000
		if c.Op == Write {
			c.Len = int64(len(c.Data))
		}
		p := encodePayload(nil, &c)
		f.Add(p, true, uint8(len(p)/2), uint8(0x20))
		f.Add(appendRecord(nil, p), false, uint8(9), uint8(1))
	}
	spilled := Change{Seq: 3, Op: Write, Path: "/f", Len: 1 << 20, Spill: "w-123", SpillCRC: 0xdeadbeef}
	f.Add(encodePayload(nil, &spilled), true, uint8(0), uint8(0))
	done := Change{Seq: 9, Op: opDone, Data: doneData([]uint64{1, 2, 8})}
	f.Add(encodePayload(nil, &done), true, uint8(90), uint8(0xff))
	seg := segHeader{num: 4, firstSeq: 70, salt: [8]byte{1, 2, 3}}.encode()
	end := newBatch()
	end.add(encodePayload(nil, &done))
	f.Add(append(seg, end.seal([8]byte{1, 2, 3}, flagEnd)...), false, uint8(200), uint8(4))
	carried := newBatch()
	carried.add(encodePayload(nil, &spilled))
	own := newBatch()
	own.add(encodePayload(nil, &Change{Seq: 70, Op: Unlink, Path: "/x"}))
	withCarry := append(append(bytes.Clone(seg), carried.seal([8]byte{1, 2, 3}, flagCarry)...), own.seal([8]byte{1, 2, 3}, 0)...)
	f.Add(withCarry, false, uint8(0), uint8(0))

	f.Fuzz(func(t *testing.T, b []byte, frame bool, at, flip uint8) {
		c, err := decodePayload(b)
		if err == nil {
			if again := encodePayload(nil, &c); !bytes.Equal(again, b) {
				t.Fatalf("payload %x decodes to %+v, which encodes to %x", b, c, again)
			}
			if c.valid() != nil {
				t.Fatalf("decoded %+v is not valid", c)
			}
		}

		rec := b
		if frame {
			rec = appendRecord(nil, b)
		}
		if c2, n, err2 := decodeRecord(rec); err2 == nil {
			if n < frameLen || n > len(rec) {
				t.Fatalf("frame of %d bytes in %d", n, len(rec))
			}
			if again := appendRecord(nil, rec[frameLen:n]); !bytes.Equal(again, rec[:n]) {
				t.Fatalf("frame %x framed again is %x", rec[:n], again)
			}
			if flip != 0 && n > 4 {
				d := bytes.Clone(rec[:n])
				d[4+int(at)%(n-4)] ^= flip
				if c3, _, err := decodeRecord(d); err == nil {
					t.Fatalf("damaged frame read as %+v", c3)
				}
			}
			_ = c2
		} else if frame && err == nil {
			t.Fatalf("a good payload framed does not decode: %v", err2)
		}

		salt := [8]byte{at, flip, 7}
		bt := newBatch()
		bt.add(b)
		recs, flags, size, err := decodeBatch(bt.seal(salt, 0), salt)
		switch {
		case (err == nil) != (decodeErr(b) == nil):
			t.Fatalf("batch of one payload: %v; payload alone: %v", err, decodeErr(b))
		case err == nil && (len(recs) != 1 || flags != 0 || size%blockSize != 0 || encodeString(recs[0]) != string(b)):
			t.Fatalf("batch gives back %d records, flags %d, size %d", len(recs), flags, size)
		}
		if _, _, _, err := decodeBatch(b, salt); err == nil && len(b) < batchHeaderLen {
			t.Fatal("a batch shorter than its header decoded")
		}

		if s, err := scanSegment(b); err == nil {
			if s.end < blockSize || s.end%blockSize != 0 || s.end > int64(len(b))+blockSize {
				t.Fatalf("segment of %d bytes ends at %d", len(b), s.end)
			}
			for _, r := range s.records {
				if r.valid() != nil {
					t.Fatalf("segment gave %+v", r)
				}
			}
		}
	})
}

func decodeErr(b []byte) error {
	_, err := decodePayload(b)
	return err
}

func encodeString(c Change) string { return string(encodePayload(nil, &c)) }
