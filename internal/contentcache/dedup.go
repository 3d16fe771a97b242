package contentcache

import (
	"errors"
	"maps"
)

// Digest returns the SHA-256 of the content when known: computed when the
// entry became complete and verified, or set by SetDigest from a trusted
// remote digest.
func (e *Entry) Digest() (sum [32]byte, ok bool) {
	s := e.s
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.digest, s.digestOf != digestNone && !s.dead
}

// SetDigest records the digest the remote gives for this file. When the
// entry's own content is known to have another digest, that content is
// not this file's: the entry is removed and starts empty.
func (e *Entry) SetDigest(sum [32]byte) {
	s := e.s
	s.fillMu.Lock()
	defer s.fillMu.Unlock()
	s.mu.Lock()
	kind, cur, f, dead := s.digestOf, s.digest, s.files, s.dead
	s.mu.Unlock()
	switch {
	case dead || (kind != digestNone && cur == sum):
		return
	case kind == digestComputed && f != nil:
		s.c.log.Warn("content cache: stored content differs from the digest the remote gives; dropped", "dir", s.dir)
		if err := s.c.removeEntry(s, f); err != nil {
			s.c.logErr("content cache", err)
		}
		s.attach(nil, nil, digestNone, [32]byte{})
	}
	s.mu.Lock()
	s.digest, s.digestOf = sum, digestTrusted
	f = s.files
	s.mu.Unlock()
	if f != nil && !s.small {
		if _, err := f.r.WriteAt(encodeDigest(digestTrusted, sum), digestOff); err != nil {
			s.c.log.Warn("content cache: write digest", "file", f.r.Name(), "err", err)
		}
	}
}

// ByDigest returns an Entry for k sharing the content of a complete stored
// entry whose digest is sum: the caller learnt (from the server, e.g.
// sha256sum) that k has that digest. The Entry's blocks are checked
// against their slots like any other's; Verified holds only once they
// were checked during this boot.
func (c *Cache) ByDigest(sum [32]byte, k Key) (*Entry, bool) {
	e, err := c.Entry(k)
	if err != nil {
		c.logErr("content cache", err)
		return nil, false
	}
	if d, ok := e.Digest(); ok && d == sum && e.Complete() {
		return e, true
	}
	if !c.linkObject(e.s, sum) {
		e.Release()
		return nil, false
	}
	return e, true
}

// linkObject makes s's directory another name of the stored copy of the
// content whose digest is sum, and reports whether s is then complete.
func (c *Cache) linkObject(s *state, sum [32]byte) bool {
	if s.small {
		return c.linkSmallObject(s, sum)
	}
	o, _, err := c.openPair(c.objectDir(s.host, sum), s.size)
	if err != nil {
		if !errors.Is(err, errNotExist) && !errors.Is(err, errBroken) {
			c.logErr("content cache", err)
		}
		return false
	}
	defer o.close()
	if kind, got := s.readDigest(o); kind != digestComputed || got != sum {
		return false
	}
	s.fillMu.Lock()
	defer s.fillMu.Unlock()
	s.mu.Lock()
	f, dead := s.files, s.dead
	s.mu.Unlock()
	if dead {
		return false
	}
	if f == nil || f.dIno != o.dIno {
		tmp, err := c.linkedDir(o)
		if err == nil {
			var replace uint64
			if f != nil {
				replace = f.dirIno
			}
			_, err = c.install(tmp, s.dir, replace)
		}
		if err != nil {
			c.logErr("content cache", err)
		}
		if err := s.reload(); err != nil {
			c.logErr("content cache", err)
			return false
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.files != nil && s.nPresent == s.nblk && s.digestOf == digestComputed && s.digest == sum
}

// dedup (hasher) shares storage between s, whose files f hold verified
// content of digest sum, and the stored copy of that content: it becomes
// the stored copy when there is none (or a damaged one); otherwise s's
// directory is replaced by another name of the stored copy, once that
// copy is checked good during this boot, and f's space is freed when
// this process stops using f.
func (c *Cache) dedup(s *state, f *pair, sum [32]byte) {
	if s.size == 0 {
		return
	}
	obj := c.objectDir(s.host, sum)
	o, _, err := c.openPair(obj, s.size)
	switch {
	case errors.Is(err, errNotExist):
		c.publish(f, obj, s.host, s.size)
		return
	case errors.Is(err, errBroken):
		if err := c.removeIf(obj, o.dirIno); err == nil {
			c.publish(f, obj, s.host, s.size)
		}
		return
	case err != nil:
		c.logErr("content cache", err)
		return
	}
	defer o.close()
	if o.dIno == f.dIno {
		return
	}
	if !c.objectGood(o, sum, s) {
		if err := c.removeIf(obj, o.dirIno); err == nil {
			c.publish(f, obj, s.host, s.size)
		}
		return
	}
	tmp, err := c.linkedDir(o)
	if err == nil {
		var ok bool
		if ok, err = c.install(tmp, s.dir, f.dirIno); ok {
			c.stats.shared.Add(1)
			c.total.Add(-s.size)
		}
	}
	if err != nil {
		c.logErr("content cache", err)
	}
}

// publish makes f, of size bytes, the stored copy of its content among
// owner's files, at obj.
func (c *Cache) publish(f *pair, obj, owner string, size int64) {
	tmp, err := c.linkedDir(f)
	if err == nil {
		_, err = c.install(tmp, obj, 0)
	}
	if err != nil {
		c.logErr("content cache", err)
		return
	}
	if size > c.bs {
		c.sizesMu.Lock()
		if c.sizes == nil {
			c.sizes = map[storedSize]bool{}
		}
		c.sizes[storedSize{ownerTag(owner), size}] = true
		c.sizesMu.Unlock()
	}
}

// MayHold reports whether a stored copy of content of exactly k.Size
// bytes, more than a block, may exist among the files of k's host and
// branch, as the last scan and this process's stores since saw it
// (evictions by others are seen at the next scan). Only then is it worth
// asking the server for the digest of a file of that size the cache
// lacks: the digest may find the content stored under another path
// (ByDigest) instead of fetching it. Content of a block or less costs
// about as much to fetch as a digest to ask for. The sizes of other
// owners' content do not count: the digest asked, or not, would tell the
// server whether this machine stores content of that size from another.
func (c *Cache) MayHold(k Key) bool {
	if k.Size <= c.bs {
		return false
	}
	c.sizesMu.Lock()
	defer c.sizesMu.Unlock()
	return c.sizes[storedSize{ownerTag(k.owner()), k.Size}]
}

// objectGood reports whether the stored copy o has digest sum, the same
// slots as s, and every block good during this boot (checking them now
// if no process did yet).
func (c *Cache) objectGood(o *pair, sum [32]byte, s *state) bool {
	if kind, got := s.readDigest(o); kind != digestComputed || got != sum {
		return false
	}
	t := c.newState("object", s.host, s.size)
	t.dir = o.d.Name()
	slots, err := t.readSlots(o, 0, t.nblk-1)
	if err != nil {
		return false
	}
	t.attach(o, slots, digestComputed, sum)
	s.mu.Lock()
	same := t.nPresent == t.nblk && maps.Equal(t.crcs, s.crcs)
	s.mu.Unlock()
	if !same {
		return false
	}
	if t.markerValid(o) {
		return true
	}
	_, ok, err := t.checkAll(c.ctx, nil)
	return ok && err == nil
}
