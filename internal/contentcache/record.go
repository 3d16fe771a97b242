package contentcache

import (
	"encoding/binary"
	"hash/crc32"
)

// Layout of a record file ("r"). Every record carries a CRC-32C of itself
// in its last four bytes; a record that does not match (torn, zeroed,
// damaged) reads as absent.
const (
	headerOff = 0   // 64 bytes: magic, format, size, block size
	digestOff = 64  // 64 bytes: SHA-256 of the content and how it is known
	markerOff = 128 // 64 bytes: boot in which every block was verified
	slotsOff  = 256 // 16 bytes per block from here
	recordLen = 64
	slotLen   = 16

	formatVersion = 1
	recordMagic   = "SSHFSMCR"
	digestMagic   = 0x54534744 // "DGST"
	markerMagic   = 0x59465256 // "VRFY"
	slotMagic     = 0x544f4c53 // "SLOT"
)

// How a digest is known.
const (
	digestNone     = 0
	digestTrusted  = 1 // SetDigest: a claim about the remote file
	digestComputed = 2 // hashed here from verified content
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

func checksum(b []byte) uint32 { return crc32.Checksum(b, castagnoli) }

func seal(b []byte) {
	n := len(b) - 4
	binary.LittleEndian.PutUint32(b[n:], checksum(b[:n]))
}

func sealed(b []byte) bool {
	n := len(b) - 4
	return binary.LittleEndian.Uint32(b[n:]) == checksum(b[:n])
}

// header is the content a record file describes. It holds nothing about
// any Key: entries with the same content share one record file.
type header struct {
	size int64
	bs   int64
}

func (h header) encode() []byte {
	b := make([]byte, recordLen)
	copy(b, recordMagic)
	binary.LittleEndian.PutUint32(b[8:], formatVersion)
	binary.LittleEndian.PutUint64(b[16:], uint64(h.size))
	binary.LittleEndian.PutUint64(b[24:], uint64(h.bs))
	seal(b)
	return b
}

func decodeHeader(b []byte) (header, bool) {
	if len(b) < recordLen || string(b[:8]) != recordMagic || !sealed(b[:recordLen]) ||
		binary.LittleEndian.Uint32(b[8:]) != formatVersion {
		return header{}, false
	}
	h := header{
		size: int64(binary.LittleEndian.Uint64(b[16:])),
		bs:   int64(binary.LittleEndian.Uint64(b[24:])),
	}
	if h.size < 0 || h.bs <= 0 || h.bs&(h.bs-1) != 0 {
		return header{}, false
	}
	return h, true
}

func encodeDigest(kind uint32, sum [32]byte) []byte {
	b := make([]byte, recordLen)
	binary.LittleEndian.PutUint32(b, digestMagic)
	binary.LittleEndian.PutUint32(b[4:], kind)
	copy(b[8:40], sum[:])
	seal(b)
	return b
}

func decodeDigest(b []byte) (kind uint32, sum [32]byte) {
	if len(b) < recordLen || binary.LittleEndian.Uint32(b) != digestMagic || !sealed(b[:recordLen]) {
		return digestNone, sum
	}
	kind = binary.LittleEndian.Uint32(b[4:])
	if kind != digestTrusted && kind != digestComputed {
		return digestNone, sum
	}
	copy(sum[:], b[8:40])
	return kind, sum
}

// The marker says: every block of this content was present and checked
// against its slot during boot `boot`, the data file then being `size`
// bytes long or more.
func encodeMarker(boot [16]byte, size int64) []byte {
	b := make([]byte, recordLen)
	binary.LittleEndian.PutUint32(b, markerMagic)
	copy(b[8:24], boot[:])
	binary.LittleEndian.PutUint64(b[24:], uint64(size))
	seal(b)
	return b
}

func decodeMarker(b []byte) (boot [16]byte, size int64, ok bool) {
	if len(b) < recordLen || binary.LittleEndian.Uint32(b) != markerMagic || !sealed(b[:recordLen]) {
		return boot, 0, false
	}
	size = int64(binary.LittleEndian.Uint64(b[24:]))
	if size < 0 {
		return boot, 0, false
	}
	copy(boot[:], b[8:24])
	return boot, size, true
}

// A slot records that block i holds n bytes whose CRC-32C is sum, or,
// once dropped, that it held them: what a refill must match. Its own
// checksum covers the block index too, so a slot read at the wrong place
// does not match. An all-zero slot (a hole) is absent.
const (
	slotAbsent = iota
	slotPresent
	slotDropped
)

const droppedMagic = 0x504f5244 // "DROP"

func putSlot(b []byte, i int64, sum uint32, n int64, state int) {
	binary.LittleEndian.PutUint32(b, sum)
	magic := uint32(slotMagic)
	if state == slotDropped {
		magic = droppedMagic
	}
	binary.LittleEndian.PutUint32(b[4:], magic)
	binary.LittleEndian.PutUint32(b[8:], uint32(n))
	binary.LittleEndian.PutUint32(b[12:], slotCheck(b, i))
}

func getSlot(b []byte, i int64) (sum uint32, n int64, state int) {
	if binary.LittleEndian.Uint32(b[12:]) != slotCheck(b, i) {
		return 0, 0, slotAbsent
	}
	switch binary.LittleEndian.Uint32(b[4:]) {
	case slotMagic:
		state = slotPresent
	case droppedMagic:
		state = slotDropped
	default:
		return 0, 0, slotAbsent
	}
	return binary.LittleEndian.Uint32(b), int64(binary.LittleEndian.Uint32(b[8:])), state
}

func slotCheck(b []byte, i int64) uint32 {
	var ib [8]byte
	binary.LittleEndian.PutUint64(ib[:], uint64(i))
	return crc32.Update(checksum(b[:12]), castagnoli, ib[:])
}
