package contentcache

import (
	"cmp"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"

	"golang.org/x/sys/unix"
)

// How old leftovers must be before a scan removes them: younger ones may
// be another process's work in progress.
const (
	staleTmp    = 10 * time.Minute
	staleBroken = time.Minute
	futileWait  = 5 * time.Second
)

// group is the stored content of one data file and every directory (entry
// or stored copy) naming it: evicting frees its space only if all go.
type group struct {
	ino  uint64
	size int64 // bytes allocated to the data file and the record
	used int64 // mtime of the data file: its last use, unix nanoseconds
	dirs []string
	keys int64 // how many of dirs are entries (the others are stored copies)
}

// scanResult is what the disk holds, as one scan saw it.
type scanResult struct {
	groups  map[uint64]*group
	total   int64
	entries int64
}

// scan reads the metadata of every entry and stored copy (no data) and
// removes leftovers of interrupted work.
func (c *Cache) scan() scanResult {
	res := scanResult{groups: map[uint64]*group{}}
	e := filepath.Join(c.root, entriesDir)
	for _, xx := range readNames(e) {
		for _, hp := range readNames(filepath.Join(e, xx)) {
			pd := filepath.Join(e, xx, hp)
			vers := readNames(pd)
			if len(vers) == 0 {
				_ = unix.Rmdir(pd) // fails if another process just filled it
			}
			for _, v := range vers {
				c.scanDir(&res, filepath.Join(pd, v), true)
			}
			if c.ctx.Err() != nil {
				return res
			}
		}
	}
	o := filepath.Join(c.root, objectsDir)
	for _, xx := range readNames(o) {
		for _, name := range readNames(filepath.Join(o, xx)) {
			c.scanDir(&res, filepath.Join(o, xx, name), false)
		}
	}
	c.sweep(tmpDir, staleTmp)
	c.sweep(trashDir, 0)
	return res
}

// scanDir adds the directory dir, an entry or a stored copy, to its group.
func (c *Cache) scanDir(res *scanResult, dir string, entry bool) {
	var d, r unix.Stat_t
	errD := unix.Lstat(filepath.Join(dir, "d"), &d)
	errR := unix.Lstat(filepath.Join(dir, "r"), &r)
	if errD != nil || errR != nil {
		var st unix.Stat_t
		if unix.Lstat(dir, &st) == nil && time.Since(time.Unix(st.Mtim.Unix())) > staleBroken {
			_ = c.remove(dir)
		}
		return
	}
	g := res.groups[d.Ino]
	if g == nil {
		g = &group{ino: d.Ino, size: (d.Blocks + r.Blocks) * 512, used: d.Mtim.Nano()}
		res.groups[d.Ino] = g
		res.total += g.size
	}
	g.dirs = append(g.dirs, dir)
	if entry {
		g.keys++
		res.entries++
	}
}

// sweep removes what sub holds that is older than age.
func (c *Cache) sweep(sub string, age time.Duration) {
	dir := filepath.Join(c.root, sub)
	for _, n := range readNames(dir) {
		var st unix.Stat_t
		p := filepath.Join(dir, n)
		if unix.Lstat(p, &st) == nil && time.Since(time.Unix(st.Mtim.Unix())) >= age {
			_ = os.RemoveAll(p)
		}
	}
}

func readNames(dir string) []string {
	f, err := os.Open(dir)
	if err != nil {
		return nil
	}
	defer f.Close()
	names, _ := f.Readdirnames(-1)
	return names
}

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
	total := res.total
	avail, _, err := c.statfs(c.root)
	if err != nil {
		c.log.Warn("content cache", "err", err)
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
			c.log.Warn("content cache: evict", "err", err)
			return false
		}
	}
	c.entries.Add(-g.keys)
	c.stats.evictions.Add(1)
	c.stats.evictedBytes.Add(g.size)
	return true
}

// liveInodes are the data files some Entry of this process uses.
func (c *Cache) liveInodes() map[uint64]bool {
	live := map[uint64]bool{}
	c.mu.Lock()
	states := make([]*state, 0, len(c.states))
	for _, s := range c.states {
		states = append(states, s)
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

// scanLoop counts the store at Open and then every scanEvery (other
// processes fill and evict too), evicting when it is over its limits.
func (c *Cache) scanLoop() {
	defer c.wg.Done()
	t := time.NewTimer(0)
	defer t.Stop()
	for first := true; ; first = false {
		select {
		case <-c.ctx.Done():
			return
		case <-t.C:
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
