package cache

import (
	"cmp"
	"errors"
	"slices"
	"strings"
	"time"

	"sshfsm/internal/remote"
)

// Revalidation of loaded listings (Auto mode). The first answer from a
// loaded listing queues its revalidation; workers list it again and store
// the result, which reports what differs (Change) when the listing had
// answered. When the namespace lists trees, a revalidation lists the whole
// loaded subtree below the directory in one request: it is a Bulk, so
// that walks start no other bulk listing there, and lookups of directories
// in its range that have no listing wait for it. A directory the mount
// changes while it is listed again is not stored: its listing is dropped
// (after reporting what differed), and the next question lists it.

const (
	// revalidateWorkers bounds the revalidations under way at once.
	revalidateWorkers = 4
	// maxRevalidateDepth bounds the levels one tree revalidation lists.
	maxRevalidateDepth = 64
)

// Change is what a revalidation found different in a listing that had
// answered: names added, removed, or whose type or attributes changed.
type Change struct {
	Dir   string
	Names []NameChange
	// Listed: names were added or removed, not only attributes changed.
	Listed bool
}

// NameChange is one name of a Change and what it is now.
type NameChange struct {
	Name   string
	Exists bool
	Attr   remote.Attr // when Exists
}

// revalidation is one queued revalidation: of dir alone (bulk nil; l is
// the listing as it was queued, touches its change count then), or of the
// loaded tree below it through a bulk listing.
type revalidation struct {
	dir     string
	bulk    *Bulk
	l       *listing
	touches uint32
}

// firstUseLocked is called when the loaded listing l of dir answers for
// the first time, once the check at mount found it current (check.go). In
// Auto mode that starts its time to live and queues its revalidation in
// the background: anything the check could not see (a clock stepped on
// the server) still reaches the kernel.
func (d *Dirs) firstUseLocked(dir string, l *listing, now time.Time) {
	l.queued = true
	if d.p == nil || d.p.opts.Mode != Auto {
		return
	}
	l.expires = now.Add(d.ttl)
	d.queueLocked(dir, l, true)
}

// queueLocked queues the revalidation of dir, unless a tree revalidation
// queued or under way will list it. With tree, the loaded directories below
// dir are listed by the same request when the namespace can.
func (d *Dirs) queueLocked(dir string, l *listing, tree bool) {
	p := d.p
	if p.opts.ReadDir == nil || p.ctx.Err() != nil || d.revalPendingLocked(dir) {
		return
	}
	r := &revalidation{dir: dir, l: l, touches: l.touches}
	if tree && p.tree {
		if depth := d.loadedDepthLocked(dir); depth > 0 {
			r.bulk = &Bulk{d: d, root: dir, depth: depth, published: map[string]bool{},
				dirty: map[string]bool{}, waiters: map[string]chan struct{}{}}
			d.bulks = append(d.bulks, r.bulk)
			p.revals[r.bulk] = r
		}
	}
	p.queue = append(p.queue, r)
	if p.workers < revalidateWorkers {
		p.workers++
		p.working.Add(1)
		go d.revalidateWork(p)
	}
}

// revalPendingLocked reports whether a tree revalidation may still list
// dir.
func (d *Dirs) revalPendingLocked(dir string) bool {
	for b := range d.p.revals {
		if b.pendingLocked(dir) {
			return true
		}
	}
	return false
}

// loadedDepthLocked is how many levels below dir loaded listings not yet
// revalidated go, at most maxRevalidateDepth.
func (d *Dirs) loadedDepthLocked(dir string) int {
	depth := 0
	for p, l := range d.dirs {
		if !l.persisted || !under(p, dir) {
			continue
		}
		rel := p
		if dir != "" {
			rel = p[len(dir)+1:]
		}
		depth = max(depth, strings.Count(rel, "/")+1)
	}
	return min(depth, maxRevalidateDepth)
}

// revalidateWork runs queued revalidations until none is left.
func (d *Dirs) revalidateWork(p *persistence) {
	defer p.working.Done()
	for {
		d.mu.Lock()
		if len(p.queue) == 0 {
			p.workers--
			d.mu.Unlock()
			return
		}
		r := p.queue[0]
		p.queue[0] = nil
		p.queue = p.queue[1:]
		p.running++
		d.mu.Unlock()
		d.revalidate(p, r)
		d.mu.Lock()
		p.running--
		d.mu.Unlock()
	}
}

func (d *Dirs) revalidate(p *persistence, r *revalidation) {
	if r.bulk == nil {
		ents, err := p.opts.ReadDir(p.ctx, r.dir)
		d.endDir(p, r, ents, err)
		return
	}
	err := p.opts.Tree.ListTree(p.ctx, r.dir, r.bulk.depth, func(dir string, ents []remote.DirEntry) {
		d.publishRevalidated(r, dir, ents)
	})
	if errors.Is(err, remote.ErrTreeUnsupported) {
		d.mu.Lock()
		p.tree = false
		d.mu.Unlock()
	}
	d.endTree(p, r, err)
}

// endDir stores the new listing of a single directory, unless the listing
// was replaced or dropped meanwhile (whoever did it has reported the
// differences) or the mount changed it. A failed listing drops it: the
// next question lists dir, and gets the error; one cut short by Close
// leaves it for the snapshot.
func (d *Dirs) endDir(p *persistence, r *revalidation, ents []remote.DirEntry, err error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	l := d.dirs[r.dir]
	switch {
	case l != r.l, p.ctx.Err() != nil:
		// Replaced, or persistence ended: kept for the snapshot.
	case err != nil:
		p.log.Debug("revalidation failed", "dir", r.dir, "err", err)
		d.dropLocked(r.dir, l)
	case l.touches != r.touches:
		d.retireLocked(r.dir, l, ents)
	default:
		d.storeLocked(r.dir, ents)
	}
}

// publishRevalidated stores one directory's listing from a tree
// revalidation, as Bulk.Publish does, except that it replaces a loaded
// listing even when it has answered.
func (d *Dirs) publishRevalidated(r *revalidation, dir string, ents []remote.DirEntry) {
	d.mu.Lock()
	defer d.mu.Unlock()
	b := r.bulk
	if lvl, ok := b.level(dir); b.ended || !ok || lvl > b.depth {
		return
	}
	b.published[dir] = true
	b.releaseLocked(dir, true)
	l := d.dirs[dir]
	if b.dirtyLocked(dir) {
		if l != nil && l.persisted {
			d.retireLocked(dir, l, ents)
		}
		return
	}
	if l != nil && !l.persisted && d.now().Before(l.expires) && !l.prefetched {
		return // listed by the mount meanwhile, and used
	}
	answered := l != nil && l.queued
	d.storeLocked(dir, ents).prefetched = !answered
}

// endTree ends a tree revalidation. After a complete listing, a loaded
// directory in its range that it did not report is gone or unreadable:
// its listing is dropped. After a failed one, those that answered are
// queued again one by one; the others wait for their first answer.
func (d *Dirs) endTree(p *persistence, r *revalidation, err error) {
	b := r.bulk
	b.End(err == nil || errors.Is(err, remote.ErrTreeTruncated))
	if err != nil {
		p.log.Debug("tree revalidation failed", "dir", r.dir, "depth", b.depth, "err", err)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	delete(p.revals, b)
	var again []string
	for dir, l := range d.dirs {
		if lvl, ok := b.level(dir); !l.persisted || !ok || lvl > b.depth {
			continue
		}
		switch {
		case err == nil:
			d.dropLocked(dir, l)
		case l.queued:
			again = append(again, dir)
		}
	}
	slices.Sort(again) // parents first
	for _, dir := range again {
		d.queueLocked(dir, d.dirs[dir], false)
	}
}

// replacedLocked is called when l replaces old as the listing of dir.
func (d *Dirs) replacedLocked(dir string, old, l *listing) {
	if !old.persisted || d.p == nil {
		return
	}
	d.p.revalidated++
	if !old.queued {
		return // it never answered: nobody was told anything
	}
	if c := diffListings(dir, old, l); len(c.Names) > 0 {
		d.p.changed++
		if d.p.opts.Changed != nil {
			d.p.opts.Changed(c)
		}
	}
}

// retireLocked drops the loaded listing l of dir, which the mount changed
// while it was listed again as ents, reporting what ents shows different.
func (d *Dirs) retireLocked(dir string, l *listing, ents []remote.DirEntry) {
	now := &listing{names: make(map[string]entry, len(ents))}
	for _, e := range ents {
		if _, dup := now.names[e.Name]; !dup {
			now.names[e.Name] = entry{attr: e.Attr}
			now.order = append(now.order, e.Name)
		}
	}
	d.replacedLocked(dir, l, now)
	d.dropLocked(dir, l)
}

// diffListings lists the names whose existence, type or attributes
// differ between old and l. Access times are left out: reading a file
// changes them.
func diffListings(dir string, old, l *listing) Change {
	c := Change{Dir: dir}
	for _, name := range old.order {
		o := old.names[name]
		if o.gone {
			continue
		}
		n, ok := l.names[name]
		switch {
		case !ok || n.gone:
			c.Names = append(c.Names, NameChange{Name: name})
			c.Listed = true
		case o.stale || n.stale || attrDiffers(o.attr, n.attr):
			c.Names = append(c.Names, NameChange{Name: name, Exists: !n.stale, Attr: n.attr})
		}
	}
	for _, name := range l.order {
		n := l.names[name]
		if o, ok := old.names[name]; (!ok || o.gone) && !n.gone {
			c.Names = append(c.Names, NameChange{Name: name, Exists: !n.stale, Attr: n.attr})
			c.Listed = true
		}
	}
	return c
}

// attrDiffers reports whether a and b differ in what stat shows. The
// identity counts only when both tell it (SFTP does not): a file replaced
// keeping its size and mtime is another file.
func attrDiffers(a, b remote.Attr) bool {
	if a.HasIdentity() && b.HasIdentity() &&
		(a.Dev != b.Dev || a.Ino != b.Ino || a.Nlink != b.Nlink || !a.Ctime.Equal(b.Ctime)) {
		return true
	}
	return a.Mode != b.Mode || a.Size != b.Size || a.UID != b.UID || a.GID != b.GID || !a.Mtime.Equal(b.Mtime)
}

// boundLocked drops the least recently used listings until the kept
// entries, and room more, are within 90% of the bound.
func (d *Dirs) boundLocked(room int) {
	type ref struct {
		path string
		used int64
	}
	refs := make([]ref, 0, len(d.dirs))
	for p, l := range d.dirs {
		refs = append(refs, ref{p, l.used})
	}
	slices.SortFunc(refs, func(a, b ref) int { return cmp.Compare(a.used, b.used) })
	target := d.p.maxEntries/10*9 - room
	for _, r := range refs {
		if d.entries <= target {
			break
		}
		d.dropLocked(r.path, d.dirs[r.path])
	}
}
