package transport

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"path"
	"strings"
	"syscall"
	"time"

	"sshfsm/internal/remote"
)

// treeParser rebuilds directory listings from the output of treeCommand.
// Records come in pre-order, so a directory's listing is complete when a
// record outside it arrives: the parser keeps the directories being listed
// on a stack and reports each one as it leaves it. The directories left
// open when the stream ends are reported by finish, once the command is
// known to have ended well.
type treeParser struct {
	base  string // tree path of the listed directory
	depth int    // levels of directories listed below base
	max   int    // entries to read at most
	// maxRecord bounds a record: the fields, then at most depth+1 names.
	maxRecord int
	fn        func(string, []remote.DirEntry)
	marked    bool // the marker line arrived
	n         int  // records read
	errors    int  // error messages of find in the stream
	stack     []treeFrame
	// opened: the top frame was pushed by the latest record; an error
	// message now is about that directory (find could not read it).
	opened bool
}

// treeFrame is one directory being listed.
type treeFrame struct {
	rel  string // path below base; "" is base
	ents []remote.DirEntry
	bad  bool // unreadable: not reported
	// subdirs are the names of the directories listed below this one:
	// find lists each once, and a second would be reported twice.
	subdirs map[string]bool
}

func newTreeParser(base string, depth, max int, fn func(string, []remote.DirEntry)) *treeParser {
	if base == "." {
		base = ""
	}
	return &treeParser{base: base, depth: depth, max: max, fn: fn, maxRecord: 256 + (depth+1)*(nameMax+1)}
}

// read consumes the command's output up to its end.
func (p *treeParser) read(r io.Reader) error {
	br := bufio.NewReaderSize(r, 64<<10)
	if err := p.readMarker(br); err != nil || !p.marked {
		return err
	}
	p.stack = []treeFrame{{}}
	p.opened = true // an error before any record: base is unreadable
	for {
		b, err := br.ReadByte()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		if b != 1 {
			br.UnreadByte()
			if _, err := br.ReadSlice('\n'); err != nil && err != bufio.ErrBufferFull && err != io.EOF {
				return err
			}
			p.failed()
			continue
		}
		rec, err := readRecord(br, p.maxRecord)
		if err != nil {
			return err
		}
		if err := p.record(rec); err != nil {
			return err
		}
	}
}

// readRecord returns the rest of a record, without its NUL; the slice is
// valid until the next read. A record longer than limit is malformed: the
// server is not sending find's output.
func readRecord(br *bufio.Reader, limit int) ([]byte, error) {
	rec, err := br.ReadSlice(0)
	if err == bufio.ErrBufferFull {
		// A path longer than the buffer: rare, so copy.
		rec = append([]byte(nil), rec...)
		for err == bufio.ErrBufferFull && len(rec) <= limit {
			var more []byte
			more, err = br.ReadSlice(0)
			rec = append(rec, more...)
		}
	}
	switch {
	case len(rec) > limit:
		return nil, fmt.Errorf("%w: longer than %d bytes", errTreeRecord, limit)
	case err == io.EOF:
		return nil, fmt.Errorf("tree listing cut short: %w", io.ErrUnexpectedEOF)
	case err != nil:
		return nil, err
	}
	return rec[:len(rec)-1], nil
}

// readMarker skips what the login shell may print before the marker line.
func (p *treeParser) readMarker(br *bufio.Reader) error {
	for range 64 {
		line, err := br.ReadSlice('\n')
		if string(bytes.TrimRight(line, "\r\n")) == treeMarker {
			p.marked = true
			return nil
		}
		if err == io.EOF {
			return nil
		}
		if err != nil && err != bufio.ErrBufferFull {
			return err
		}
	}
	return nil
}

// failed accounts for an error message of find. The one find prints for a
// directory it cannot read comes right after that directory's record. An
// entry it cannot stat is left out, as sftp-server leaves it out of a
// READDIR, so the other messages change nothing.
func (p *treeParser) failed() {
	p.errors++
	if p.opened {
		p.stack[len(p.stack)-1].bad = true
	}
}

// record adds one entry to its directory's listing, first reporting the
// directories the walk has left.
func (p *treeParser) record(rec []byte) error {
	rel, typ, a, err := parseTreeRecord(rec)
	if err != nil {
		return err
	}
	if !cleanTreePath(rel) {
		// find's %P never prints one; a path like "/x", "a//b" or "a/.."
		// would report a listing under a name that is no directory's.
		return fmt.Errorf("%w: path %q", errTreeRecord, rel)
	}
	dir, name := path.Split(rel)
	dir = strings.TrimSuffix(dir, "/")
	i := len(p.stack) - 1
	for i >= 0 && p.stack[i].rel != dir {
		i--
	}
	if i < 0 || name == "" {
		return fmt.Errorf("%w at %q", errTreeOrder, rel)
	}
	for len(p.stack) > i+1 {
		p.leave()
	}
	if p.n++; p.n > p.max {
		return remote.ErrTreeTruncated
	}
	top := &p.stack[i]
	p.opened = false
	if typ == 0 {
		top.bad = true // a type SFTP can show and we cannot
		return nil
	}
	top.ents = append(top.ents, remote.DirEntry{Name: name, Attr: a})
	if typ == 'd' && strings.Count(rel, "/")+1 <= p.depth {
		if top.subdirs[name] {
			return fmt.Errorf("%w: %q listed twice", errTreeOrder, rel)
		}
		if top.subdirs == nil {
			top.subdirs = map[string]bool{}
		}
		top.subdirs[name] = true
		p.stack = append(p.stack, treeFrame{rel: rel})
		p.opened = true
	}
	return nil
}

// cleanTreePath reports whether rel is a path below the starting point
// made of valid file names: none empty, ".", ".." or longer than NAME_MAX.
func cleanTreePath(rel string) bool {
	for {
		name, rest, more := strings.Cut(rel, "/")
		if !validName(name) {
			return false
		}
		if !more {
			return true
		}
		rel = rest
	}
}

// nameMax is the longest file name Linux allows (NAME_MAX).
const nameMax = 255

// leave reports the top directory, complete unless unreadable.
func (p *treeParser) leave() {
	f := p.stack[len(p.stack)-1]
	p.stack = p.stack[:len(p.stack)-1]
	if !f.bad {
		p.fn(joinTree(p.base, f.rel), f.ents)
	}
}

// finish reports the directories still open at the end of the stream.
func (p *treeParser) finish() {
	for len(p.stack) > 0 {
		p.leave()
	}
}

func joinTree(base, rel string) string {
	switch {
	case rel == "":
		return base
	case base == "":
		return rel
	}
	return base + "/" + rel
}

// treeTypes maps find's %y letters to file type bits.
var treeTypes = map[byte]uint32{
	'f': syscall.S_IFREG, 'd': syscall.S_IFDIR, 'l': syscall.S_IFLNK, 'p': syscall.S_IFIFO,
	's': syscall.S_IFSOCK, 'c': syscall.S_IFCHR, 'b': syscall.S_IFBLK,
}

var (
	errTreeRecord = errors.New("malformed tree record")
	errTreeOrder  = errors.New("tree listing out of order")
)

// parseTreeRecord decodes "y mode size uid gid atime mtime dev ino nlink
// ctime path". typ is the %y letter, 0 for a file type without S_IF bits
// here. The numbers are parsed in place: this runs once per entry of a
// tree.
func parseTreeRecord(rec []byte) (rel string, typ byte, a remote.Attr, err error) {
	var f [11][]byte
	rest := rec
	for i := range f {
		sp := bytes.IndexByte(rest, ' ')
		if sp < 0 {
			return "", 0, a, fmt.Errorf("%w: %q", errTreeRecord, rec)
		}
		f[i], rest = rest[:sp], rest[sp+1:]
	}
	if len(f[0]) != 1 || len(rest) == 0 {
		return "", 0, a, fmt.Errorf("%w: %q", errTreeRecord, rec)
	}
	mode, ok1 := parseUint(f[1], 8, 1<<32-1)
	size, ok2 := parseUint(f[2], 10, 1<<64-1)
	uid, ok3 := parseUint(f[3], 10, 1<<32-1)
	gid, ok4 := parseUint(f[4], 10, 1<<32-1)
	at, ok5 := wireSeconds(f[5])
	mt, ok6 := wireSeconds(f[6])
	dev, ok7 := parseUint(f[7], 10, 1<<64-1)
	ino, ok8 := parseUint(f[8], 10, 1<<64-1)
	nlink, ok9 := parseUint(f[9], 10, 1<<64-1)
	ct, ok10 := preciseTime(f[10])
	if !(ok1 && ok2 && ok3 && ok4 && ok5 && ok6 && ok7 && ok8 && ok9 && ok10) {
		return "", 0, a, fmt.Errorf("%w: %q", errTreeRecord, rec)
	}
	a = remote.Attr{Size: size, UID: uint32(uid), GID: uint32(gid), Atime: at, Mtime: mt}
	if ino != 0 {
		// Inode 0 is no file's: the identity is left unknown.
		a.Dev, a.Ino, a.Nlink, a.Ctime = dev, ino, nlink, ct
	}
	if bits, ok := treeTypes[f[0][0]]; ok {
		typ = f[0][0]
		a.Mode = bits | uint32(mode)&07777
	}
	return string(rest), typ, a, nil
}

// parseUint parses the digits of b in base (8 or 10), at most max.
func parseUint(b []byte, base, max uint64) (uint64, bool) {
	if len(b) == 0 {
		return 0, false
	}
	var n uint64
	for _, c := range b {
		d := uint64(c) - '0'
		if d >= base || n > (max-d)/base {
			return 0, false
		}
		n = n*base + d
	}
	return n, true
}

// wireSeconds turns find's "seconds.fraction" into the time SFTP carries:
// st_mtime's seconds as an unsigned 32-bit number. find prints tv_sec and
// then tv_nsec (-2.5 is tv_sec -2), so the seconds are the part before the
// point.
func wireSeconds(s []byte) (time.Time, bool) {
	whole, _, _ := bytes.Cut(s, []byte("."))
	neg := len(whole) > 0 && whole[0] == '-'
	if neg {
		whole = whole[1:]
	}
	sec, ok := parseUint(whole, 10, math.MaxInt64)
	if !ok {
		return time.Time{}, false
	}
	if neg {
		sec = -sec
	}
	return time.Unix(int64(uint32(sec)), 0), true
}

// preciseTime turns find's "seconds.fraction" (tv_sec, then tv_nsec as ten
// digits) into the time it prints, to the nanosecond. Only digits are
// accepted, and the fraction's digits past the ninth are dropped.
func preciseTime(s []byte) (time.Time, bool) {
	whole, frac, _ := bytes.Cut(s, []byte("."))
	neg := len(whole) > 0 && whole[0] == '-'
	if neg {
		whole = whole[1:]
	}
	sec, ok := parseUint(whole, 10, math.MaxInt64)
	if !ok {
		return time.Time{}, false
	}
	var nsec int64
	for i, c := range frac {
		if c < '0' || c > '9' {
			return time.Time{}, false
		}
		if i < 9 {
			nsec = nsec*10 + int64(c-'0')
		}
	}
	for i := len(frac); i < 9; i++ {
		nsec *= 10
	}
	if neg {
		return time.Unix(-int64(sec), nsec), true
	}
	return time.Unix(int64(sec), nsec), true
}
