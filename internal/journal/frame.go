package journal

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
)

// On-disk framing: a segment header, then batches, each starting at a
// multiple of blockSize, each holding whole records. See the package doc.
const (
	blockSize      = 4096
	segHeaderLen   = 64
	segMagic       = "SSHFSMWJ"
	formatVersion  = 1
	batchHeaderLen = 32
	batchMagic     = 0x54424a57 // "WJBT"
	frameLen       = 8          // a record's length and CRC-32C
	maxBatchBody   = 64 << 20

	flagEnd   = 1 // the segment's last batch: no record follows, ever
	flagCarry = 2 // pending changes copied from older segments, first in a segment
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

func checksum(b []byte) uint32 { return crc32.Checksum(b, castagnoli) }

// segHeader starts every segment file, alone in its first block.
type segHeader struct {
	num      uint64  // the segment's number: its file's name
	firstSeq uint64  // the sequence number of its first record
	salt     [8]byte // random, in every batch header: no byte a user wrote can pass for one
}

func (h segHeader) encode() []byte {
	b := make([]byte, blockSize)
	le := binary.LittleEndian
	copy(b, segMagic)
	le.PutUint32(b[8:], formatVersion)
	le.PutUint64(b[16:], h.num)
	le.PutUint64(b[24:], h.firstSeq)
	copy(b[32:40], h.salt[:])
	le.PutUint32(b[60:], checksum(b[:60]))
	return b
}

func decodeSegHeader(b []byte) (segHeader, bool) {
	le := binary.LittleEndian
	if len(b) < segHeaderLen || string(b[:8]) != segMagic || le.Uint32(b[8:]) != formatVersion ||
		le.Uint32(b[60:]) != checksum(b[:60]) {
		return segHeader{}, false
	}
	h := segHeader{num: le.Uint64(b[16:]), firstSeq: le.Uint64(b[24:])}
	copy(h.salt[:], b[32:40])
	return h, true
}

// appendRecord appends the frame of one payload: its length, the CRC-32C
// of the length and the payload, the payload.
func appendRecord(b, payload []byte) []byte {
	le := binary.LittleEndian
	b = le.AppendUint32(b, uint32(len(payload)))
	crc := crc32.Update(checksum(b[len(b)-4:]), castagnoli, payload)
	b = le.AppendUint32(b, crc)
	return append(b, payload...)
}

// decodeRecord reads the record frame at the start of b; it returns the
// change and the frame's length.
func decodeRecord(b []byte) (Change, int, error) {
	if len(b) < frameLen {
		return Change{}, 0, errRecord
	}
	le := binary.LittleEndian
	n := le.Uint32(b)
	if n > maxPayload || uint64(n) > uint64(len(b)-frameLen) {
		return Change{}, 0, errRecord
	}
	p := b[frameLen : frameLen+int(n)]
	if le.Uint32(b[4:]) != crc32.Update(checksum(b[:4]), castagnoli, p) {
		return Change{}, 0, errRecord
	}
	c, err := decodePayload(p)
	return c, frameLen + int(n), err
}

// batch builds one batch: records appended after its header, then sealed
// and padded to whole blocks.
type batch struct {
	b     []byte
	count int
}

func newBatch() *batch { return &batch{b: make([]byte, batchHeaderLen, blockSize)} }

func (t *batch) add(payload []byte) {
	t.b = appendRecord(t.b, payload)
	t.count++
}

func (t *batch) bodyLen() int { return len(t.b) - batchHeaderLen }

// seal writes the header and returns the batch padded to whole blocks.
func (t *batch) seal(salt [8]byte, flags uint32) []byte {
	le := binary.LittleEndian
	h := t.b[:batchHeaderLen]
	le.PutUint32(h[0:], batchMagic)
	le.PutUint32(h[4:], uint32(t.bodyLen()))
	le.PutUint32(h[8:], uint32(t.count))
	le.PutUint32(h[12:], flags)
	copy(h[16:24], salt[:])
	le.PutUint32(h[24:], 0)
	le.PutUint32(h[28:], checksum(h[:28]))
	if pad := len(t.b) % blockSize; pad != 0 {
		t.b = append(t.b, make([]byte, blockSize-pad)...)
	}
	return t.b
}

// decodeBatch reads the batch at the start of b: its records, its flags
// and the length it takes (padded). Any fault in it fails it whole.
func decodeBatch(b []byte, salt [8]byte) ([]Change, uint32, int, error) {
	le := binary.LittleEndian
	if len(b) < batchHeaderLen || le.Uint32(b) != batchMagic || le.Uint32(b[28:]) != checksum(b[:28]) ||
		[8]byte(b[16:24]) != salt || le.Uint32(b[24:]) != 0 {
		return nil, 0, 0, errRecord
	}
	body, count, flags := le.Uint32(b[4:]), le.Uint32(b[8:]), le.Uint32(b[12:])
	if body > maxBatchBody || uint64(body) > uint64(len(b)-batchHeaderLen) ||
		flags != 0 && flags != flagEnd && flags != flagCarry ||
		uint64(count) > uint64(body)/frameLen {
		return nil, 0, 0, errRecord
	}
	p := b[batchHeaderLen : batchHeaderLen+int(body)]
	recs := make([]Change, 0, count)
	for len(p) > 0 {
		c, n, err := decodeRecord(p)
		if err != nil {
			return nil, 0, 0, err
		}
		recs = append(recs, c)
		p = p[n:]
	}
	if len(recs) != int(count) {
		return nil, 0, 0, errRecord
	}
	size := (batchHeaderLen + int(body) + blockSize - 1) / blockSize * blockSize
	return recs, flags, size, nil
}

// segScan is what a segment file holds.
type segScan struct {
	hdr     segHeader
	carried []Change // copies of earlier changes, from its carry batches
	records []Change
	end     int64 // where the good batches end: a multiple of blockSize
	sealed  bool  // its last good batch is its end
}

// scanSegment reads a whole segment file. The batches are read in order
// up to the end batch or the first one that fails. What follows is a
// write cut short by a crash (torn, dropped) unless a good batch follows
// it at a later block: then a batch the journal had acknowledged was
// damaged, and the segment is corrupt.
func scanSegment(data []byte) (segScan, error) {
	var s segScan
	h, ok := decodeSegHeader(data)
	if !ok {
		return s, fmt.Errorf("%w: segment header", ErrCorrupt)
	}
	s.hdr = h
	off := blockSize
	own := false // a batch of its own records was read
	for off < len(data) {
		recs, flags, n, err := decodeBatch(data[off:], h.salt)
		if err != nil {
			break
		}
		if flags&flagCarry != 0 {
			if own {
				return s, fmt.Errorf("%w: segment %d: carried changes after its own", ErrCorrupt, h.num)
			}
			s.carried = append(s.carried, recs...)
		} else {
			own = true
			s.records = append(s.records, recs...)
		}
		off += n
		if flags&flagEnd != 0 {
			s.sealed = true
			break
		}
	}
	// A batch is good once its records are: the zeros padding it may not
	// all have reached the disk, so end may lie past the file's end.
	s.end = int64(off)
	// After the end batch nothing is ever written; after a failed one,
	// nothing was acknowledged.
	start := off
	if !s.sealed {
		start += blockSize
	}
	for at := start; at < len(data); at += blockSize {
		if _, _, _, err := decodeBatch(data[at:], h.salt); err == nil {
			return s, fmt.Errorf("%w: segment %d: a damaged batch at %d has good batches after it", ErrCorrupt, h.num, off)
		}
	}
	return s, nil
}
