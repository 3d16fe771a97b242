package contentcache

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"os"
	"sync"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// state is what this process knows of one entry; every Entry of the same
// Key obtained while another is held shares it.
type state struct {
	c      *Cache
	id     string
	dir    string
	host   string // the Key's owner: content is shared only among its files
	size   int64
	nblk   int64
	small  bool          // at most one block: one file at dir (small.go)
	ready  chan struct{} // closed once loaded; loadErr is then set
	refs   int           // guarded by c.mu
	queued bool          // c.mu: the hasher holds one of refs

	loadErr error

	// fillMu serialises what changes which files the entry uses: Fill,
	// creating, reloading and replacing them. Held across that I/O; taken
	// before mu. Reads never take it.
	fillMu sync.Mutex

	// mu guards the fields below. It is never held across disk I/O, so
	// readers of present blocks do not wait on each other or on a Fill.
	mu        sync.Mutex
	files     *pair            // nil until the entry exists on disk
	retired   []*pair          // replaced files, closed at the last Release (reads may still use them)
	copied    *os.File         // small entries: the checked copy of files' content Verified hands out
	crcs      map[int64]uint32 // by block; only blocks in known
	known     bitset           // crcs holds the block's CRC: present, or dropped
	present   bitset           // the slot says the block is there
	verified  bitset           // checked (or written) through files in this process
	nPresent  int64
	nVerified int64
	digest    [32]byte
	digestOf  uint32 // digestNone, digestTrusted, digestComputed
	marked    bool   // the marker of files is written for this boot
	dead      bool   // dropped by Forget: misses, stores nothing
	hashing   bool   // a digest job is queued or running

	lastTouch   atomic.Int64 // unix nanoseconds of the last last-use update
	dropsLogged atomic.Bool  // a dropped block was logged as a warning
}

// bitset is a set of block numbers, sparse: a word is allocated once one
// of its 64 blocks is in the set, so that the memory an entry takes
// follows the blocks stored, never the size the server claims.
type bitset map[int64]uint64

func (b bitset) has(i int64) bool { return b[i>>6]&(1<<(i&63)) != 0 }
func (b bitset) set(i int64)      { b[i>>6] |= 1 << (i & 63) }
func (b bitset) clear(i int64) {
	if w := b[i>>6] &^ (1 << (i & 63)); w != 0 {
		b[i>>6] = w
	} else {
		delete(b, i>>6)
	}
}

func isEOF(err error) bool              { return errors.Is(err, io.EOF) }
func (s *state) blockLen(i int64) int64 { return min(s.c.bs, s.size-i*s.c.bs) }

// newState allocates nothing that grows with size, which the caller has
// checked against MaxFileSize: it runs under c.mu.
func (c *Cache) newState(id, host string, size int64) *state {
	s := &state{
		c: c, id: id, host: host, dir: c.entryDir(id), size: size, nblk: blockCount(size, c.bs), small: c.isSmall(size),
		ready: make(chan struct{}),
		crcs:  map[int64]uint32{}, known: bitset{}, present: bitset{}, verified: bitset{},
	}
	if s.small {
		s.dir = c.smallPath(id)
	}
	return s
}

// loadOnce loads the state and then lets the other users of it in, even
// if loading failed in a way nobody foresaw: they would wait forever.
func (s *state) loadOnce() {
	defer close(s.ready)
	s.loadErr = errors.New("loading the entry failed")
	s.loadErr = s.load()
}

// load reads the entry from disk, if there is one. A damaged one is
// removed: the entry is then empty.
func (s *state) load() error {
	s.fillMu.Lock()
	defer s.fillMu.Unlock()
	return s.reload()
}

// reload (fillMu held) makes the state describe what s.dir holds now,
// retiring the files used so far.
func (s *state) reload() error {
	if s.small {
		return s.reloadSmall()
	}
	p, _, err := s.c.openPair(s.dir, s.size)
	if errors.Is(err, errBroken) {
		s.c.log.Warn("content cache: removing a damaged entry", "dir", s.dir)
		err = s.c.removeIf(s.dir, p.dirIno)
		if err == nil {
			err = errNotExist
		}
	}
	if errors.Is(err, errNotExist) {
		s.attach(nil, nil, digestNone, [32]byte{})
		return nil
	}
	if err != nil {
		return err
	}
	slots, err := s.readSlots(p, 0, s.nblk-1)
	if err != nil {
		p.close()
		return err
	}
	kind, sum := s.readDigest(p)
	s.attach(p, slots, kind, sum)
	s.c.touch(s, p, false)
	return nil
}

func (s *state) readDigest(p *pair) (uint32, [32]byte) {
	b := make([]byte, recordLen)
	n, _ := p.r.ReadAt(b, digestOff)
	return decodeDigest(b[:n])
}

// attach replaces the in-memory view with files p and their slots.
func (s *state) attach(p *pair, slots []slot, kind uint32, sum [32]byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.files != nil {
		s.retired = append(s.retired, s.files)
	}
	if s.copied != nil {
		s.retired = append(s.retired, &pair{r: s.copied, d: s.copied})
		s.copied = nil
	}
	s.files = p
	s.marked = false
	if p != nil {
		s.lastTouch.Store(p.dMtime)
	}
	clear(s.crcs)
	clear(s.known)
	clear(s.present)
	clear(s.verified)
	s.nPresent, s.nVerified = 0, 0
	for _, sl := range slots {
		s.addSlot(sl)
	}
	// A digest the caller trusted stays known across a reload; one
	// computed from other files does not carry over unless read back.
	if kind != digestNone || s.digestOf != digestTrusted {
		s.digest, s.digestOf = sum, kind
	}
}

// ensureFiles (fillMu held) makes sure the entry exists on disk and that
// the state uses the files its directory holds now: another process may
// have evicted it, replaced it with a shared copy, or removed it as
// damaged. One stat per call when nothing changed.
func (s *state) ensureFiles() error {
	s.mu.Lock()
	p := s.files
	s.mu.Unlock()
	if p != nil {
		var st unix.Stat_t
		if err := unix.Stat(s.dir, &st); err == nil && st.Ino == p.dirIno {
			return nil
		}
	}
	// Another process may remove what was just made (Forget, eviction):
	// then make it again, a few times.
	for range 3 {
		if err := s.reload(); err != nil {
			return err
		}
		s.mu.Lock()
		p = s.files
		s.mu.Unlock()
		if p != nil {
			return nil
		}
		var dg []byte
		s.mu.Lock()
		if s.digestOf == digestTrusted {
			dg = encodeDigest(digestTrusted, s.digest)
		}
		s.mu.Unlock()
		if err := s.c.createPair(s.dir, header{size: s.size, bs: s.c.bs}, dg); err != nil {
			return err
		}
		s.c.entries.Add(1)
		s.c.total.Add(2 * 4096) // a record page and a directory, until the next scan counts
	}
	return fmt.Errorf("create %s: removed again and again while being created", s.dir)
}

// current reports whether the state's files are still those its
// directory names.
func (s *state) current() bool {
	s.mu.Lock()
	p := s.files
	s.mu.Unlock()
	var st unix.Stat_t
	return p != nil && unix.Stat(s.dir, &st) == nil && st.Ino == p.dirIno
}

// refresh reads the slots of blocks [b0, b1] again: another process using
// the same files may have filled some.
func (s *state) refresh(p *pair, b0, b1 int64) {
	if s.small {
		return // never written again
	}
	slots, err := s.readSlots(p, b0, b1)
	if err != nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.files != p {
		return
	}
	for _, sl := range slots {
		if !s.present.has(sl.i) {
			s.addSlot(sl)
		}
	}
}

// slot is what the record says of block i: present with CRC-32C crc, or
// dropped after holding it.
type slot struct {
	i       int64
	crc     uint32
	dropped bool
}

// slotChunk is how many slots readSlots reads at once.
const slotChunk = 4096

// readSlots returns the slots of p's record for blocks [b0, b1] that are
// present or dropped, reading a chunk at a time and skipping the holes of
// the record: memory and time follow the blocks stored, not the span.
func (s *state) readSlots(p *pair, b0, b1 int64) ([]slot, error) {
	var out []slot
	buf := make([]byte, min(b1-b0+1, slotChunk)*slotLen)
	for i := b0; i <= b1; {
		if i > b0 {
			// Past the first chunk: a large file's record is mostly holes.
			if i = s.nextSlotData(p, i); i > b1 {
				break
			}
		}
		k := min(b1-i+1, slotChunk)
		n, err := p.r.ReadAt(buf[:k*slotLen], slotsOff+i*slotLen)
		if err != nil && !isEOF(err) {
			return nil, fmt.Errorf("read %s: %w", p.r.Name(), err)
		}
		for j := int64(0); (j+1)*slotLen <= int64(n); j++ {
			c, l, st := getSlot(buf[j*slotLen:], i+j)
			if st != slotAbsent && l == s.blockLen(i+j) {
				out = append(out, slot{i: i + j, crc: c, dropped: st == slotDropped})
			}
		}
		if int64(n) < k*slotLen {
			break // the record ends
		}
		i += k
	}
	return out, nil
}

// nextSlotData returns the first block from i on whose slot may hold
// data: the record is sparse, and a hole reads as absent slots. Past the
// record's data it returns MaxInt64; when the filesystem cannot tell, i.
func (s *state) nextSlotData(p *pair, i int64) int64 {
	off, err := unix.Seek(int(p.r.Fd()), slotsOff+i*slotLen, unix.SEEK_DATA)
	switch {
	case errors.Is(err, unix.ENXIO):
		return math.MaxInt64
	case err != nil || off <= slotsOff+i*slotLen:
		return i
	}
	return (off - slotsOff) / slotLen
}

// addSlot (mu held) takes in a slot of a block absent in memory.
func (s *state) addSlot(sl slot) {
	s.crcs[sl.i] = sl.crc
	s.known.set(sl.i)
	if !sl.dropped {
		s.present.set(sl.i)
		s.nPresent++
	}
}

// drop forgets block i of files p after it failed its check, unless it
// was dropped or checked good meanwhile, and records that on disk: its
// slot says dropped (keeping the CRC a refill must match), the marker is
// cleared.
func (s *state) drop(p *pair, i int64) {
	s.mu.Lock()
	if s.files != p || !s.present.has(i) || s.verified.has(i) {
		s.mu.Unlock()
		return
	}
	s.present.clear(i)
	s.nPresent--
	s.marked = false
	crc := s.crcs[i]
	s.mu.Unlock()
	// After a power cut there may be many: one line per entry.
	s.c.stats.dropped.Add(1)
	level := slog.LevelDebug
	if s.dropsLogged.CompareAndSwap(false, true) {
		level = slog.LevelWarn
	}
	s.c.log.Log(context.Background(), level, "content cache: a block failed its check; dropped", "dir", s.dir, "block", i)
	if s.small {
		// Its only block is bad: the file goes, and a Fill makes a new one.
		if err := s.c.removeFileIf(s.dir, p.dirIno); err != nil {
			s.c.logErr("content cache", err)
		}
		return
	}
	slot := make([]byte, slotLen)
	putSlot(slot, i, crc, s.blockLen(i), slotDropped)
	_, _ = p.r.WriteAt(slot, slotsOff+i*slotLen)
	_, _ = p.r.WriteAt(make([]byte, recordLen), markerOff)
}

// markVerified records that block i of p matched crc c.
func (s *state) markVerified(p *pair, i int64, c uint32) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.files == p && s.present.has(i) && !s.verified.has(i) && s.crcs[i] == c {
		s.verified.set(i)
		s.nVerified++
	}
}

// discard removes the entry from disk if its directory still holds f:
// its content is wrong. The state is then empty.
func (s *state) discard(f *pair) {
	s.fillMu.Lock()
	defer s.fillMu.Unlock()
	s.mu.Lock()
	cur := s.files == f
	s.mu.Unlock()
	if !cur {
		return
	}
	if err := s.c.removeEntry(s, f); err != nil {
		s.c.logErr("content cache", err)
	}
	s.attach(nil, nil, digestNone, [32]byte{})
}

// removeEntry removes s's directory, or small file, if it is still f.
func (c *Cache) removeEntry(s *state, f *pair) error {
	if s.small {
		return c.removeFileIf(s.dir, f.dirIno)
	}
	return c.removeIf(s.dir, f.dirIno)
}

// closeFiles is called once no Entry uses the state any more.
func (s *state) closeFiles() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.files != nil {
		s.files.close()
		s.files = nil
	}
	for _, p := range s.retired {
		p.close()
	}
	s.retired = nil
	if s.copied != nil {
		_ = s.copied.Close()
		s.copied = nil
	}
}

// touch records a use of the entry as the mtime of its data file, which
// eviction reads as the last use; at most once per touchEvery unless
// forced (after writing, which set the mtime itself), so reads do not
// each cost a write.
func (c *Cache) touch(s *state, p *pair, force bool) {
	now := c.now()
	last := s.lastTouch.Load()
	if !force && now.UnixNano()-last < int64(c.touchEvery) {
		return
	}
	if !s.lastTouch.CompareAndSwap(last, now.UnixNano()) {
		return
	}
	tv := []unix.Timeval{unix.NsecToTimeval(now.UnixNano()), unix.NsecToTimeval(now.UnixNano())}
	_ = unix.Futimes(int(p.d.Fd()), tv)
}
