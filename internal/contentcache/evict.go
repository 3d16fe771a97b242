package contentcache

import (
	"cmp"
	"fmt"
	"slices"
	"time"

	"golang.org/x/sys/unix"
)

// After an eviction that could not make room, Fills needing room fail
// for this long without scanning again.
const futileWait = 5 * time.Second

// reserve makes room for need more bytes, evicting if storing them would
// pass MaxSize or leave less than MinFree free, and fails (ENOSPC) if
// there still is not enough.
func (c *Cache) reserve(need int64) error {
	if c.fits(need) == nil {
		return nil
	}
	c.evictMu.Lock()
	defer c.evictMu.Unlock()
	if c.fits(need) == nil {
		return nil
	}
	if time.Now().Before(c.futileTill) {
		return c.fits(need)
	}
	c.evict(need)
	err := c.fits(need)
	if err != nil {
		c.futileTill = time.Now().Add(futileWait)
	}
	return err
}

func (c *Cache) fits(need int64) error {
	if c.maxSize > 0 && c.total.Load()+need > c.maxSize {
		return fmt.Errorf("cache_max_size (%d bytes) reached by entries in use: %w", c.maxSize, unix.ENOSPC)
	}
	avail, _, err := c.statfs(c.root)
	if err != nil {
		return err
	}
	if avail-need < c.minFree {
		return fmt.Errorf("%d bytes free, %d must stay free: %w", avail, c.minFree, unix.ENOSPC)
	}
	return nil
}

// evict (evictMu held) counts what the disk holds and removes the least
// recently used content until need more bytes fit under 90% of MaxSize
// and MinFree stays free. Content this process uses is kept.
func (c *Cache) evict(need int64) {
	start := time.Now()
	res := c.scan()
	c.entries.Store(res.entries)
	c.sizesMu.Lock()
	c.sizes = res.sizes
	c.sizesMu.Unlock()
	total := res.total
	avail, _, err := c.statfs(c.root)
	if err != nil {
		c.logErr("content cache", err)
		avail = 1 << 62
	}
	target := c.maxSize/10*9 - need
	over := func() bool {
		return (c.maxSize > 0 && total > target) || avail-need < c.minFree
	}
	if over() {
		live := c.liveInodes()
		groups := make([]*group, 0, len(res.groups))
		for _, g := range res.groups {
			groups = append(groups, g)
		}
		slices.SortFunc(groups, func(a, b *group) int { return cmp.Compare(a.used, b.used) })
		for _, g := range groups {
			if !over() || c.ctx.Err() != nil {
				break
			}
			if live[g.ino] || !c.evictGroup(g) {
				continue
			}
			total -= g.size
			avail += g.size
		}
	}
	c.total.Store(total)
	c.log.Debug("content cache: scanned", "bytes", total, "entries", res.entries,
		"took", time.Since(start))
}

func (c *Cache) evictGroup(g *group) bool {
	for _, d := range g.dirs {
		if err := c.remove(d); err != nil {
			c.logErr("content cache: evict", err)
			return false
		}
	}
	c.entries.Add(-g.keys)
	c.stats.evictions.Add(1)
	c.stats.evictedBytes.Add(g.size)
	return true
}

// liveInodes are the data files some Entry of this process uses. One the
// hasher alone holds is not: evicting it only spares the hasher work.
func (c *Cache) liveInodes() map[uint64]bool {
	live := map[uint64]bool{}
	c.mu.Lock()
	states := make([]*state, 0, len(c.states))
	for _, s := range c.states {
		if s.refs > 1 || !s.queued {
			states = append(states, s)
		}
	}
	c.mu.Unlock()
	for _, s := range states {
		s.mu.Lock()
		if s.files != nil {
			live[s.files.dIno] = true
		}
		for _, p := range s.retired {
			live[p.dIno] = true
		}
		s.mu.Unlock()
	}
	return live
}

// scanLoop counts the store at Open, then every scanEvery (other
// processes fill and evict too) and when reserve asks, evicting when it
// is over its limits.
func (c *Cache) scanLoop() {
	defer c.wg.Done()
	t := time.NewTimer(0)
	defer t.Stop()
	for first := true; ; first = false {
		select {
		case <-c.ctx.Done():
			return
		case <-t.C:
		case <-c.kick:
		}
		c.evictMu.Lock()
		c.evict(0)
		c.evictMu.Unlock()
		if first {
			close(c.scanned)
		}
		t.Reset(scanEvery)
	}
}
