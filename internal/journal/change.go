package journal

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// Op is the kind of a change.
type Op uint8

// The changes a mount makes. Path is always the name changed; NewPath is
// the second name of a Rename (its destination) or of a Link (the new
// name of the file at Path).
const (
	Create  Op = iota + 1 // Mode, Flags (the open flags)
	Write                 // Offset, Data (or Spill), Len
	Setattr               // Attr
	Mkdir                 // Mode
	Symlink               // Target: what the link at Path points to
	Link                  // NewPath: a new name of the file at Path
	Rename                // NewPath, Flags (RENAME_NOREPLACE, RENAME_EXCHANGE)
	Unlink
	Rmdir
	lastChange = Rmdir
)

// Records the journal writes for itself; never handed out as changes.
const (
	opDone Op = 0x80 // Data: the sequence numbers (uint64 each) drained
)

var opNames = [...]string{
	Create: "create", Write: "write", Setattr: "setattr", Mkdir: "mkdir",
	Symlink: "symlink", Link: "link", Rename: "rename", Unlink: "unlink", Rmdir: "rmdir",
}

func (o Op) String() string {
	if o >= Create && o <= lastChange {
		return opNames[o]
	}
	if o == opDone {
		return "done"
	}
	return fmt.Sprintf("op(%d)", uint8(o))
}

// AttrMask says which fields of an Attr a Setattr sets.
type AttrMask uint8

// The attributes a Setattr may set, each optional.
const (
	SetMode AttrMask = 1 << iota
	SetUID
	SetGID
	SetSize
	SetAtime
	SetMtime
	attrAll = SetMode | SetUID | SetGID | SetSize | SetAtime | SetMtime
)

// Attr is what a Setattr sets: the fields named in Set, the others zero.
type Attr struct {
	Set          AttrMask
	Mode         uint32
	UID, GID     uint32
	Size         int64
	Atime, Mtime int64 // nanoseconds since the Unix epoch
}

// Change is one change the mount made, as the journal keeps it until the
// server has it.
type Change struct {
	Seq    uint64 // given by Append: the order of all changes of a journal
	At     int64  // when Append was called, nanoseconds since the Unix epoch
	Op     Op
	Host   string // the host the change is for, as the mount names it
	Branch string // the branch of that host (its directory), as the mount names it

	Path    string
	NewPath string
	Target  string

	Mode  uint32
	Flags uint32
	Attr  Attr

	// A Write's bytes: Len bytes at Offset. They are in Data, or, past the
	// journal's spill size, in the spill file named Spill (Data nil; read
	// them with Journal.Data), whose CRC-32C is SpillCRC.
	Offset   int64
	Len      int64
	Data     []byte
	Spill    string
	SpillCRC uint32
}

// Limits on what a record may hold, checked before anything is allocated
// from a length read back.
const (
	maxName    = 1<<16 - 1 // a path, a host, a branch, a link target
	maxSpill   = 64        // a spill file's name
	maxInline  = 1 << 20   // a record's inline data (a write's bytes, a done list)
	maxPayload = fixedLen + 6*2 + 5*maxName + maxInline + 4
)

// ErrCorrupt is wrapped by the errors of a journal whose acknowledged
// records cannot all be read back: a record that fails its checksum with
// acknowledged records after it, a segment missing, a spill file lost.
var ErrCorrupt = errors.New("journal corrupt")

var errRecord = fmt.Errorf("%w: bad record", ErrCorrupt)

// The payload of a record, little-endian:
//
//	0   seq u64, at i64, op u8, attr set u8, 2 zero bytes
//	20  mode, flags, attr mode, uid, gid u32; size, atime, mtime, offset,
//	    len i64; spill CRC u32
//	84  host, branch, path, newpath, target, spill: u16 length + bytes each;
//	    data: u32 length + bytes
const fixedLen = 84

func (c *Change) payloadLen() int {
	return fixedLen + 6*2 + len(c.Host) + len(c.Branch) + len(c.Path) + len(c.NewPath) +
		len(c.Target) + len(c.Spill) + 4 + len(c.Data)
}

// check reports what makes c impossible to record.
func (c *Change) check() error {
	for _, s := range []string{c.Host, c.Branch, c.Path, c.NewPath, c.Target} {
		if len(s) > maxName {
			return fmt.Errorf("journal: %s of a %d-byte name", c.Op, len(s))
		}
	}
	if len(c.Data) > maxInline {
		return fmt.Errorf("journal: %s of %d inline bytes", c.Op, len(c.Data))
	}
	if c.Spill != "" && !validSpill(c.Spill) {
		return fmt.Errorf("journal: spill file name %q", c.Spill)
	}
	if c.Attr.Set&^attrAll != 0 {
		return fmt.Errorf("journal: attribute mask %#x", c.Attr.Set)
	}
	if c.Offset < 0 || c.Len < 0 {
		return fmt.Errorf("journal: %s at %d of %d bytes", c.Op, c.Offset, c.Len)
	}
	return nil
}

// validSpill: names Append gives spill files, and the only ones read.
func validSpill(s string) bool {
	if len(s) == 0 || len(s) > maxSpill || s[0] == '.' {
		return false
	}
	for i := 0; i < len(s); i++ {
		b := s[i]
		if !(b >= '0' && b <= '9' || b >= 'a' && b <= 'z' || b == '-') {
			return false
		}
	}
	return true
}

// encodePayload appends c's payload to b.
func encodePayload(b []byte, c *Change) []byte {
	var f [fixedLen]byte
	le := binary.LittleEndian
	le.PutUint64(f[0:], c.Seq)
	le.PutUint64(f[8:], uint64(c.At))
	f[16] = byte(c.Op)
	f[17] = byte(c.Attr.Set)
	le.PutUint32(f[20:], c.Mode)
	le.PutUint32(f[24:], c.Flags)
	le.PutUint32(f[28:], c.Attr.Mode)
	le.PutUint32(f[32:], c.Attr.UID)
	le.PutUint32(f[36:], c.Attr.GID)
	le.PutUint64(f[40:], uint64(c.Attr.Size))
	le.PutUint64(f[48:], uint64(c.Attr.Atime))
	le.PutUint64(f[56:], uint64(c.Attr.Mtime))
	le.PutUint64(f[64:], uint64(c.Offset))
	le.PutUint64(f[72:], uint64(c.Len))
	le.PutUint32(f[80:], c.SpillCRC)
	b = append(b, f[:]...)
	for _, s := range []string{c.Host, c.Branch, c.Path, c.NewPath, c.Target, c.Spill} {
		b = le.AppendUint16(b, uint16(len(s)))
		b = append(b, s...)
	}
	b = le.AppendUint32(b, uint32(len(c.Data)))
	return append(b, c.Data...)
}

// decodePayload reads a payload written by encodePayload, and nothing
// else: every length is checked against what is left, every field against
// what Append accepts, and no byte may be left over.
func decodePayload(p []byte) (Change, error) {
	var c Change
	if len(p) < fixedLen || len(p) > maxPayload {
		return c, errRecord
	}
	le := binary.LittleEndian
	c.Seq = le.Uint64(p[0:])
	c.At = int64(le.Uint64(p[8:]))
	c.Op = Op(p[16])
	c.Attr.Set = AttrMask(p[17])
	if p[18] != 0 || p[19] != 0 {
		return Change{}, errRecord
	}
	c.Mode = le.Uint32(p[20:])
	c.Flags = le.Uint32(p[24:])
	c.Attr.Mode = le.Uint32(p[28:])
	c.Attr.UID = le.Uint32(p[32:])
	c.Attr.GID = le.Uint32(p[36:])
	c.Attr.Size = int64(le.Uint64(p[40:]))
	c.Attr.Atime = int64(le.Uint64(p[48:]))
	c.Attr.Mtime = int64(le.Uint64(p[56:]))
	c.Offset = int64(le.Uint64(p[64:]))
	c.Len = int64(le.Uint64(p[72:]))
	c.SpillCRC = le.Uint32(p[80:])
	rest := p[fixedLen:]
	var strs [6]string
	for i := range strs {
		if len(rest) < 2 {
			return Change{}, errRecord
		}
		n := int(le.Uint16(rest))
		if len(rest) < 2+n {
			return Change{}, errRecord
		}
		strs[i] = string(rest[2 : 2+n])
		rest = rest[2+n:]
	}
	c.Host, c.Branch, c.Path, c.NewPath, c.Target, c.Spill = strs[0], strs[1], strs[2], strs[3], strs[4], strs[5]
	if len(rest) < 4 {
		return Change{}, errRecord
	}
	n := le.Uint32(rest)
	if uint64(n) != uint64(len(rest)-4) || n > maxInline {
		return Change{}, errRecord
	}
	if n > 0 {
		c.Data = append([]byte(nil), rest[4:]...)
	}
	if err := c.valid(); err != nil {
		return Change{}, err
	}
	return c, nil
}

// valid checks a decoded record against what Append writes.
func (c *Change) valid() error {
	if c.check() != nil {
		return errRecord
	}
	switch {
	case c.Op == opDone:
		if len(c.Data)%8 != 0 || c.Spill != "" {
			return errRecord
		}
	case c.Op >= Create && c.Op <= lastChange:
		if c.Op == Write {
			if c.Spill == "" && int64(len(c.Data)) != c.Len || c.Spill != "" && len(c.Data) != 0 {
				return errRecord
			}
		} else if c.Spill != "" || len(c.Data) != 0 {
			return errRecord
		}
	default:
		return errRecord
	}
	return nil
}

// doneSeqs is the list a done record carries.
func doneSeqs(c *Change) []uint64 {
	s := make([]uint64, len(c.Data)/8)
	for i := range s {
		s[i] = binary.LittleEndian.Uint64(c.Data[8*i:])
	}
	return s
}

func doneData(seqs []uint64) []byte {
	b := make([]byte, 0, 8*len(seqs))
	for _, s := range seqs {
		b = binary.LittleEndian.AppendUint64(b, s)
	}
	return b
}
