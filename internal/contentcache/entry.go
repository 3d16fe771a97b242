package contentcache

import (
	"fmt"
	"io"
	"sync"
)

var blockPool sync.Pool // *[]byte of the block size of the Cache that put them

func (c *Cache) getBlock() *[]byte {
	if b, ok := blockPool.Get().(*[]byte); ok && int64(cap(*b)) >= c.bs {
		*b = (*b)[:c.bs]
		return b
	}
	b := make([]byte, c.bs)
	return &b
}

// ReadAt reads p at off if every byte of [off, off+len(p)) ∩ [0, Size) is
// present and verified; ok=false (n=0) when some block is missing or
// failed verification (it is then dropped, so the caller fetches it and
// Fills it again). At or past Size: io.EOF like os.File. A block is
// checked against its slot the first time this process reads it; err is
// a failure of the local disk (the caller fetches from the remote).
func (e *Entry) ReadAt(p []byte, off int64) (n int, ok bool, err error) {
	s := e.s
	if off < 0 {
		return 0, false, fmt.Errorf("read %s: negative offset %d", s.dir, off)
	}
	if off >= s.size {
		return 0, true, io.EOF
	}
	end := min(off+int64(len(p)), s.size)
	if end == off {
		return 0, true, nil
	}
	want := p[:end-off]
	b0, b1 := off/s.c.bs, (end-1)/s.c.bs
	f, allVerified, missing := s.lookup(b0, b1)
	if missing > 0 && f != nil {
		s.refresh(f, b0, b1)
		f, allVerified, missing = s.lookup(b0, b1)
	}
	if f == nil || missing > 0 {
		s.c.stats.missBytes.Add(int64(len(want)))
		s.c.stats.missBlocks.Add(max(missing, 1))
		return 0, false, nil
	}
	if allVerified {
		ok, err = s.readVerified(f, want, off, b0, b1)
	} else {
		ok, err = s.readChecking(f, want, off, b0, b1)
	}
	if !ok || err != nil {
		s.c.stats.missBytes.Add(int64(len(want)))
		s.c.stats.missBlocks.Add(1)
		return 0, false, err
	}
	s.c.stats.hitBytes.Add(int64(len(want)))
	s.c.stats.hitBlocks.Add(b1 - b0 + 1)
	s.c.touch(s, f, false)
	if end == s.size && len(want) < len(p) {
		return len(want), true, io.EOF
	}
	return len(want), true, nil
}

// lookup reports the files to read blocks [b0, b1] from (nil: none), and
// whether they are all verified or how many are missing.
func (s *state) lookup(b0, b1 int64) (f *pair, allVerified bool, missing int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.dead || s.files == nil {
		return nil, false, b1 - b0 + 1
	}
	allVerified = true
	for i := b0; i <= b1; i++ {
		if !s.present.has(i) {
			missing++
		}
		allVerified = allVerified && s.verified.has(i)
	}
	return s.files, allVerified, missing
}

// readVerified reads blocks already checked in this process straight into
// want. A short read means the file was cut behind our back.
func (s *state) readVerified(f *pair, want []byte, off, b0, b1 int64) (bool, error) {
	n, err := f.readData(want, off)
	if n == len(want) {
		return true, nil
	}
	if err != nil && !isEOF(err) {
		return false, fmt.Errorf("read %s: %w", f.d.Name(), err)
	}
	s.unverify(f, b0, b1)
	return false, nil
}

// unverify makes blocks [b0, b1] of f be checked again on their next read.
func (s *state) unverify(f *pair, b0, b1 int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.files != f {
		return
	}
	for i := b0; i <= b1; i++ {
		if s.verified.has(i) {
			s.verified.clear(i)
			s.nVerified--
		}
	}
}

// readChecking reads blocks [b0, b1] one at a time, reading whole any
// block not yet checked and checking it against its slot; one that fails
// is dropped and the read misses.
func (s *state) readChecking(f *pair, want []byte, off, b0, b1 int64) (bool, error) {
	bs := s.c.bs
	for i := b0; i <= b1; i++ {
		lo, hi := max(off, i*bs), min(off+int64(len(want)), (i+1)*bs)
		dst := want[lo-off : hi-off]
		s.mu.Lock()
		v, crc := s.verified.has(i), s.crcs[i]
		s.mu.Unlock()
		if v {
			if ok, err := s.readVerified(f, dst, lo, i, i); !ok {
				return false, err
			}
			continue
		}
		ok, err := s.checkBlock(f, i, crc, func(blk []byte) { copy(dst, blk[lo-i*bs:]) })
		if !ok {
			return false, err
		}
	}
	return true, nil
}

// checkBlock reads block i of f whole and compares it with crc. Good: use
// sees it and it counts as verified. Bad (short, different): dropped.
func (s *state) checkBlock(f *pair, i int64, crc uint32, use func([]byte)) (bool, error) {
	bp := s.c.getBlock()
	defer blockPool.Put(bp)
	blk := (*bp)[:s.blockLen(i)]
	n, err := f.readData(blk, i*s.c.bs)
	if err != nil && !isEOF(err) {
		return false, fmt.Errorf("read %s: %w", f.d.Name(), err)
	}
	if n < len(blk) || checksum(blk) != crc {
		s.drop(f, i)
		return false, nil
	}
	if use != nil {
		use(blk)
	}
	s.markVerified(f, i, crc)
	return true, nil
}

// Missing returns the block-aligned byte ranges of [off, off+length) ∩
// [0, Size) not present, coalesced, in order. The caller fetches exactly
// those ranges from the remote.
func (e *Entry) Missing(off, length int64) []Range {
	s := e.s
	if length <= 0 || off >= s.size {
		return nil
	}
	end := s.size
	switch {
	case off < 0: // off+length cannot overflow; s.size-off could
		end = min(end, off+length)
		off = 0
	case length < s.size-off: // without overflowing off+length
		end = off + length
	}
	if off >= end {
		return nil
	}
	b0, b1 := off/s.c.bs, (end-1)/s.c.bs
	if f, _, missing := s.lookup(b0, b1); missing > 0 && f != nil {
		s.refresh(f, b0, b1)
	}
	var rs []Range
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := b0; i <= b1; i++ {
		if !s.dead && s.files != nil && s.present.has(i) {
			continue
		}
		start, l := i*s.c.bs, s.blockLen(i)
		if k := len(rs) - 1; k >= 0 && rs[k].Off+rs[k].Len == start {
			rs[k].Len += l
		} else {
			rs = append(rs, Range{Off: start, Len: l})
		}
	}
	return rs
}

// Complete reports whether every block is present (verified or not yet
// verified).
func (e *Entry) Complete() bool {
	s := e.s
	s.mu.Lock()
	defer s.mu.Unlock()
	return !s.dead && (s.files != nil || s.nblk == 0) && s.nPresent == s.nblk
}

// Fill stores data fetched from the remote at off. off must be
// block-aligned; len(data) a multiple of BlockSize except for a final
// block ending exactly at Size. Blocks already present are left. Errors
// (disk full, I/O) are returned and leave the entry consistent (those
// blocks missing). An entry dropped by Forget stores nothing, nor does
// any entry once the cache is closing.
func (e *Entry) Fill(data []byte, off int64) error {
	s := e.s
	s.c.storing.RLock()
	defer s.c.storing.RUnlock()
	if s.c.stopped {
		return nil
	}
	if !s.wholeBlocks(off, int64(len(data))) {
		return fmt.Errorf("fill %s: %d bytes at %d are not whole blocks of a %d-byte file", s.dir, len(data), off, s.size)
	}
	if len(data) == 0 {
		return nil
	}
	s.fillMu.Lock()
	defer s.fillMu.Unlock()
	if s.isDead() {
		return nil
	}
	if s.small {
		return s.fillSmall(data)
	}
	return s.fillLocked(data, off, off+int64(len(data)))
}

// wholeBlocks reports whether n bytes at off are whole blocks of the
// content, the last one possibly ending at its size; computed without
// overflowing whatever off and n are.
func (s *state) wholeBlocks(off, n int64) bool {
	bs := s.c.bs
	switch {
	case off < 0 || n < 0 || off > s.size || n > s.size-off || off%bs != 0:
		return false
	case n%bs != 0:
		return off+n == s.size
	}
	return true
}

// maxPendingFills bounds the fills FillAsync runs at once, and so the
// memory they hold (a block each, usually).
const maxPendingFills = 16

// FillAsync stores data at off as Fill does, on a goroutine of its own, and
// then calls done with Fill's error: a reader answered from data need not
// wait for the local disk (creating a file there can take a millisecond).
// data must stay unchanged until done is called. It reports false, and
// calls nothing, when the cache is closing or maxPendingFills are under
// way; the caller then fills itself. Close waits for the fills under way,
// so that what was read before an unmount is there at the next mount.
func (e *Entry) FillAsync(data []byte, off int64, done func(error)) bool {
	c := e.s.c
	select {
	case c.pending <- struct{}{}:
	default:
		return false
	}
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		<-c.pending
		return false
	}
	c.fillers.Add(1)
	e.s.refs++ // as Another: the fill outlives the caller's use
	c.mu.Unlock()
	own := &Entry{s: e.s}
	go func() {
		defer c.fillers.Done()
		err := own.Fill(data, off)
		own.Release()
		<-c.pending
		done(err)
	}()
	return true
}

// fillLocked (fillMu held) stores the blocks of data at off that are
// missing.
func (s *state) fillLocked(data []byte, off, end int64) error {
	bs := s.c.bs
	if err := s.ensureFiles(); err != nil {
		return err
	}
	runs, need := s.missingRuns(off/bs, (end-1)/bs)
	if need == 0 {
		return nil
	}
	sums := make([][]uint32, len(runs))
	for k, r := range runs {
		sums[k] = blockSums(data[r.Off-off:r.Off-off+r.Len], bs)
	}
	if s.conflicts(runs, sums) {
		// The data is not the content these files hold (the remote file
		// changed and kept its size and mtime): start afresh rather than
		// mix versions in files other entries may share.
		s.c.log.Warn("content cache: the file changed under the same size and mtime; entry started afresh", "dir", s.dir)
		if err := s.restart(); err != nil {
			return err
		}
		return s.fillLocked(data, off, end)
	}
	if err := s.c.reserve(need); err != nil {
		return fmt.Errorf("fill %s: %w", s.dir, err)
	}
	for k, r := range runs {
		if err := s.write(data[r.Off-off:r.Off-off+r.Len], r.Off, sums[k]); err != nil {
			return err
		}
	}
	s.c.stats.fillBytes.Add(need)
	f := s.files
	alloc := f.allocated()
	s.c.total.Add(alloc - f.alloc)
	f.alloc = alloc
	s.c.touch(s, f, true)
	if s.finished() {
		// Every block was written or checked during this boot: a later
		// process may hand the data file to the kernel at once (rule 4).
		s.mu.Lock()
		mark := s.files == f && s.nVerified == s.nblk && !s.marked
		s.mu.Unlock()
		if mark {
			s.writeMarker(f)
		}
		s.c.queueHash(s)
	}
	return nil
}

func blockSums(data []byte, bs int64) []uint32 {
	sums := make([]uint32, 0, (int64(len(data))+bs-1)/bs)
	for j := int64(0); j < int64(len(data)); j += bs {
		sums = append(sums, checksum(data[j:min(j+bs, int64(len(data)))]))
	}
	return sums
}

// conflicts reports whether some block to write differs from what the
// files held there before (a dropped block keeps its CRC), or cannot be
// shown not to while other entries may share the files (digest computed).
func (s *state) conflicts(runs []Range, sums [][]uint32) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for k, r := range runs {
		for j, sum := range sums[k] {
			i := r.Off/s.c.bs + int64(j)
			if s.known.has(i) && s.crcs[i] != sum || !s.known.has(i) && s.digestOf == digestComputed {
				return true
			}
		}
	}
	return false
}

// restart (fillMu held) removes the entry's files and makes new ones.
func (s *state) restart() error {
	s.mu.Lock()
	f := s.files
	s.mu.Unlock()
	if f != nil {
		if err := s.c.removeIf(s.dir, f.dirIno); err != nil {
			return err
		}
	}
	s.attach(nil, nil, digestNone, [32]byte{})
	return s.ensureFiles()
}

// missingRuns (fillMu held) returns the runs of blocks among [b0, b1]
// absent in memory, as byte ranges, and their total length.
func (s *state) missingRuns(b0, b1 int64) ([]Range, int64) {
	var rs []Range
	var need int64
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := b0; i <= b1; i++ {
		if s.present.has(i) {
			continue
		}
		start, l := i*s.c.bs, s.blockLen(i)
		need += l
		if k := len(rs) - 1; k >= 0 && rs[k].Off+rs[k].Len == start {
			rs[k].Len += l
		} else {
			rs = append(rs, Range{Off: start, Len: l})
		}
	}
	return rs, need
}

// write (fillMu held) stores whole blocks at off, whose CRCs are sums:
// the data first, then their slots, so that a slot never describes data
// not yet written.
func (s *state) write(data []byte, off int64, sums []uint32) error {
	f := s.files
	bs := s.c.bs
	if _, err := f.d.WriteAt(data, off); err != nil {
		return fmt.Errorf("fill %s: %w", f.d.Name(), err)
	}
	b0 := off / bs
	slots := make([]byte, len(sums)*slotLen)
	for j, sum := range sums {
		putSlot(slots[j*slotLen:], b0+int64(j), sum, s.blockLen(b0+int64(j)), slotPresent)
	}
	if _, err := f.r.WriteAt(slots, slotsOff+b0*slotLen); err != nil {
		return fmt.Errorf("fill %s: %w", f.r.Name(), err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for j, sum := range sums {
		i := b0 + int64(j)
		s.crcs[i] = sum
		s.known.set(i)
		if !s.present.has(i) {
			s.present.set(i)
			s.nPresent++
		}
		if !s.verified.has(i) {
			s.verified.set(i)
			s.nVerified++
		}
	}
	return nil
}
