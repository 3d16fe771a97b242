package contentcache

import (
	"context"
	"crypto/sha256"
	"hash"
	"os"
	"slices"
	"strconv"

	"golang.org/x/sys/unix"
)

// Verified returns a read-only *os.File of the whole content when the
// entry is complete and its every block has been verified against its
// slot since this machine booted, for FUSE passthrough (the kernel then
// reads it directly, bypassing ReadAt's checks). ok=false otherwise. The
// file stays valid while the caller holds it even if the entry is evicted
// or invalidated meanwhile (unlinked files stay readable).
func (e *Entry) Verified() (f *os.File, ok bool) {
	s := e.s
	if s.small {
		return s.verifiedSmall()
	}
	if s.nblk == 0 && !s.isDead() {
		// An empty file has nothing to verify but needs a file to hand out.
		s.fillMu.Lock()
		err := s.ensureFiles()
		s.fillMu.Unlock()
		if err != nil {
			s.c.logErr("content cache", err)
			return nil, false
		}
	}
	s.mu.Lock()
	p := s.files
	complete := !s.dead && p != nil && s.nPresent == s.nblk
	all, marked := s.nVerified == s.nblk, s.marked
	s.mu.Unlock()
	switch {
	case !complete:
		return nil, false
	case all && !marked:
		s.writeMarker(p)
	case !all && !s.markerValid(p):
		return nil, false
	}
	return s.reopen(p)
}

// reopen opens p's data file again, read-only, as a file of its own (the
// kept descriptor is read-write and shared by this process's readers).
func (s *state) reopen(p *pair) (*os.File, bool) {
	f, err := os.OpenFile("/proc/self/fd/"+strconv.Itoa(int(p.d.Fd())), os.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		s.c.log.Warn("content cache: reopen", "file", p.d.Name(), "err", err)
		return nil, false
	}
	// A file of another length (cut, or grown, behind our back) would show
	// the kernel other bytes than the content.
	if st, err := f.Stat(); err != nil || st.Size() != s.size {
		_ = f.Close()
		return nil, false
	}
	return f, true
}

func (s *state) isDead() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.dead
}

// markerValid reads p's marker: whether every block was verified during
// this boot (by any process).
func (s *state) markerValid(p *pair) bool {
	b := make([]byte, recordLen)
	n, _ := p.r.ReadAt(b, markerOff)
	boot, size, ok := decodeMarker(b[:n])
	return ok && boot == s.c.boot && size == s.size
}

// writeMarker records that every block of p has been verified during this
// boot. The caller saw them all verified; a block dropped since clears
// the marker again, and Verified always also requires every block present.
func (s *state) writeMarker(p *pair) {
	if s.small {
		return // its check is not kept across processes
	}
	if _, err := p.r.WriteAt(encodeMarker(s.c.boot, s.size), markerOff); err != nil {
		s.c.log.Warn("content cache: write marker", "file", p.r.Name(), "err", err)
		return
	}
	s.mu.Lock()
	if s.files == p {
		s.marked = true
	}
	s.mu.Unlock()
}

// VerifyAll reads and checks every block (dropping bad ones) so that a
// complete, good entry becomes Verified.
func (e *Entry) VerifyAll(ctx context.Context) error {
	_, _, err := e.s.checkAll(ctx, nil)
	if err == nil {
		e.s.c.queueHash(e.s)
	}
	return err
}

// checkAll reads every block present in the files the state uses (f) and
// checks it against its slot, dropping those that fail; with h, it also
// hashes the content (stopping at the first block absent). It reports
// whether f is then complete and verified, which its marker then records.
func (s *state) checkAll(ctx context.Context, h hash.Hash) (f *pair, good bool, err error) {
	s.mu.Lock()
	f, dead := s.files, s.dead
	s.mu.Unlock()
	if f == nil || dead {
		return f, false, nil
	}
	if s.nblk > 0 {
		s.refresh(f, 0, s.nblk-1)
	}
	blocks, complete := s.presentBlocks()
	if !complete && h != nil {
		return f, false, nil
	}
	good = complete
	var use func([]byte)
	if h != nil {
		use = func(b []byte) { h.Write(b) }
	}
	for _, i := range blocks {
		if err := ctx.Err(); err != nil {
			return f, false, err
		}
		s.mu.Lock()
		present, crc, cur := s.present.has(i), s.crcs[i], s.files == f
		s.mu.Unlock()
		if !cur {
			return f, false, nil
		}
		if !present {
			if h != nil {
				return f, false, nil
			}
			good = false
			continue
		}
		ok, err := s.checkBlock(f, i, crc, use)
		if err != nil {
			return f, false, err
		}
		if !ok {
			s.unverify(f, i, i)
			s.drop(f, i)
			if h != nil {
				return f, false, nil
			}
			good = false
		}
	}
	if good {
		s.writeMarker(f)
	}
	return f, good, nil
}

// presentBlocks returns the blocks present, in order, and whether they
// are all the content's: a walk over them costs what is stored, however
// large the file.
func (s *state) presentBlocks() ([]int64, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	blocks := make([]int64, 0, s.nPresent)
	for w, bits := range s.present {
		for b := range int64(64) {
			if bits&(1<<b) != 0 {
				blocks = append(blocks, w<<6|b)
			}
		}
	}
	slices.Sort(blocks)
	return blocks, s.nPresent == s.nblk
}

// finished reports whether every block is present and verified in this
// process: the entry can be hashed without a second look at the disk.
func (s *state) finished() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return !s.dead && s.files != nil && s.nVerified == s.nblk
}

// queueHash hands a complete entry whose digest is not computed yet to
// the background hasher, which holds a reference on it meanwhile.
func (c *Cache) queueHash(s *state) {
	s.mu.Lock()
	want := !s.dead && !s.hashing && !s.small && s.files != nil && s.nblk > 0 &&
		s.nPresent == s.nblk && s.digestOf != digestComputed
	if want {
		s.hashing = true
	}
	s.mu.Unlock()
	if !want {
		return
	}
	queued := false
	c.mu.Lock()
	if !c.closed {
		select {
		case c.jobs <- s:
			s.refs++
			s.queued = true
			c.jobsLeft.Add(1)
			queued = true
		default:
		}
	}
	c.mu.Unlock()
	if !queued {
		s.mu.Lock()
		s.hashing = false
		s.mu.Unlock()
	}
}

// hashLoop computes, one entry at a time, the SHA-256 of complete
// entries (checking every block on the way), records it, and shares the
// stored copy with other entries of the same content.
func (c *Cache) hashLoop() {
	defer c.wg.Done()
	for {
		select {
		case s := <-c.jobs:
			c.hashEntry(s)
			c.endJob(s)
		case <-c.ctx.Done():
			for {
				select {
				case s := <-c.jobs:
					c.endJob(s)
				default:
					return
				}
			}
		}
	}
}

func (c *Cache) endJob(s *state) {
	s.mu.Lock()
	s.hashing = false
	s.mu.Unlock()
	c.mu.Lock()
	s.queued = false
	c.mu.Unlock()
	c.release(s)
	c.jobsLeft.Add(-1)
}

func (c *Cache) hashEntry(s *state) {
	if !s.current() {
		return // evicted or replaced while queued
	}
	h := sha256.New()
	f, ok, err := s.checkAll(c.ctx, h)
	if err != nil || !ok {
		return
	}
	var sum [32]byte
	h.Sum(sum[:0])
	s.mu.Lock()
	claimed, kind := s.digest, s.digestOf
	s.mu.Unlock()
	if kind == digestTrusted && claimed != sum {
		c.log.Warn("content cache: content differs from the digest the remote gave; dropped", "dir", s.dir)
		s.discard(f)
		return
	}
	s.recordDigest(f, digestComputed, sum)
	c.dedup(s, f, sum)
}

// recordDigest writes sum to f's record and, if f is still the state's,
// keeps it in memory.
func (s *state) recordDigest(f *pair, kind uint32, sum [32]byte) {
	if _, err := f.r.WriteAt(encodeDigest(kind, sum), digestOff); err != nil {
		s.c.log.Warn("content cache: write digest", "file", f.r.Name(), "err", err)
	}
	s.mu.Lock()
	if s.files == f {
		s.digest, s.digestOf = sum, kind
	}
	s.mu.Unlock()
}
