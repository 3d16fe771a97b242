package cache

import (
	"context"
	"strings"
	"time"

	"sshfsm/internal/remote"
)

// Bulk is one listing of a whole subtree (remote.TreeLister) under way:
// root and the directories down to depth levels below it. It stores each
// directory's listing as it completes, as a prefetched listing, so that
// walk detection goes on below it. While it runs, lookups, reads and
// prefetches of a directory in its range that is not listed yet wait for
// it (or skip it) instead of listing it a second time; a wait ends when
// the directory is published, when the bulk has passed it without
// publishing it (unreadable, or changed by the mount meanwhile), or when
// the bulk ends.
type Bulk struct {
	d     *Dirs
	root  string
	depth int

	// Guarded by d.mu.
	ended    bool
	remember bool      // ended, and remembered for what it listed
	expires  time.Time // once ended: remembered until then
	// published holds the directories the bulk has gone through: stored,
	// or passed over (unreadable, changed by the mount). Their subtrees
	// within its range are done too (children come first).
	published map[string]bool
	dirty     map[string]bool // directories the mount changed meanwhile
	dirtyTree []string        // trees the mount dropped meanwhile
	waiters   map[string]chan struct{}
}

// StartBulk registers a bulk listing of root, depth levels deep, unless a
// running bulk lists the subdirectories of root or a recent one listed
// them: then it returns nil and nothing needs to be listed.
func (d *Dirs) StartBulk(root string, depth int) *Bulk {
	if !d.Enabled() {
		return nil
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	d.sweepBulksLocked()
	for _, b := range d.bulks {
		if lvl, ok := b.level(root); ok && lvl < b.depth && (!b.ended || b.published[root]) {
			return nil
		}
	}
	b := &Bulk{d: d, root: root, depth: depth, published: map[string]bool{},
		dirty: map[string]bool{}, waiters: map[string]chan struct{}{}}
	d.bulks = append(d.bulks, b)
	return b
}

// Root and Depth are what the bulk lists.
func (b *Bulk) Root() string { return b.root }
func (b *Bulk) Depth() int   { return b.depth }

// level is how many levels below the bulk's root dir is; ok is false for
// a directory outside the root's tree.
func (b *Bulk) level(dir string) (int, bool) {
	switch {
	case dir == b.root:
		return 0, true
	case b.root == "":
		return strings.Count(dir, "/") + 1, true
	case strings.HasPrefix(dir, b.root+"/"):
		return strings.Count(dir[len(b.root)+1:], "/") + 1, true
	}
	return 0, false
}

// sweepBulksLocked forgets ended bulks whose listings have expired.
func (d *Dirs) sweepBulksLocked() {
	now := d.now()
	kept := d.bulks[:0]
	for _, b := range d.bulks {
		if !b.ended || (b.remember && now.Before(b.expires)) {
			kept = append(kept, b)
		}
	}
	clear(d.bulks[len(kept):])
	d.bulks = kept
}

// Publish stores the complete listing of dir, unless the mount changed dir
// while the bulk ran or a listing of dir is kept that a reader already
// used. Directories are published children first, so every directory
// below dir not published by now never will be: its waiters go on.
func (b *Bulk) Publish(dir string, ents []remote.DirEntry) {
	d := b.d
	d.mu.Lock()
	defer d.mu.Unlock()
	if _, ok := b.level(dir); b.ended || !ok {
		return
	}
	b.published[dir] = true
	b.releaseLocked(dir, true)
	if b.dirtyLocked(dir) {
		return
	}
	if l := d.dirs[dir]; l != nil && d.now().Before(l.expires) && !l.prefetched {
		return
	}
	d.storeLocked(dir, ents)
	d.dirs[dir].prefetched = true
}

// End ends the bulk and every wait for it. remember keeps what it went
// through (a listing that ended well, or stopped at its size limit) for
// as long as its listings live, so that walks there start no other bulk.
func (b *Bulk) End(remember bool) {
	d := b.d
	d.mu.Lock()
	defer d.mu.Unlock()
	if b.ended {
		return
	}
	b.ended, b.remember = true, remember
	b.expires = d.now().Add(d.ttl)
	for dir, w := range b.waiters {
		close(w)
		delete(b.waiters, dir)
	}
	b.dirty, b.dirtyTree = nil, nil
	if !remember {
		b.published = nil
		d.sweepBulksLocked()
	}
}

// releaseLocked ends the waits for dir and, with below, for every
// directory under it.
func (b *Bulk) releaseLocked(dir string, below bool) {
	for w, ch := range b.waiters {
		if w == dir || (below && under(w, dir)) {
			close(ch)
			delete(b.waiters, w)
		}
	}
}

// under reports whether p is strictly below dir ("" is the root).
func under(p, dir string) bool {
	return p != dir && (dir == "" || strings.HasPrefix(p, dir+"/"))
}

func (b *Bulk) dirtyLocked(dir string) bool {
	if b.dirty[dir] {
		return true
	}
	for _, t := range b.dirtyTree {
		if dir == t || under(dir, t) {
			return true
		}
	}
	return false
}

// pendingLocked reports whether the running bulk may still publish dir.
func (b *Bulk) pendingLocked(dir string) bool {
	lvl, ok := b.level(dir)
	if b.ended || !ok || lvl > b.depth || b.dirtyLocked(dir) {
		return false
	}
	for p := dir; ; p = parentDir(p) {
		if b.published[p] {
			return false // p, or its subtree and so dir, is done
		}
		if p == b.root || p == "" {
			return true
		}
	}
}

func parentDir(p string) string {
	if i := strings.LastIndexByte(p, '/'); i >= 0 {
		return p[:i]
	}
	return ""
}

// bulkPendingLocked reports whether a running bulk may still publish dir.
func (d *Dirs) bulkPendingLocked(dir string) bool {
	for _, b := range d.bulks {
		if b.pendingLocked(dir) {
			return true
		}
	}
	return false
}

// bulkWaitLocked returns a channel closed when the bulk that may still
// publish dir has done so or has passed it; nil when none may.
func (d *Dirs) bulkWaitLocked(dir string) <-chan struct{} {
	for _, b := range d.bulks {
		if !b.pendingLocked(dir) {
			continue
		}
		w := b.waiters[dir]
		if w == nil {
			w = make(chan struct{})
			b.waiters[dir] = w
		}
		return w
	}
	return nil
}

// bulkTouchLocked records a change by the mount in dir (or, with tree, in
// its whole tree): running bulks do not publish it, and waits for it end.
func (d *Dirs) bulkTouchLocked(dir string, tree bool) {
	for _, b := range d.bulks {
		if b.ended {
			continue
		}
		if tree {
			b.dirtyTree = append(b.dirtyTree, dir)
		} else if _, ok := b.level(dir); ok {
			b.dirty[dir] = true
		}
		b.releaseLocked(dir, tree)
	}
}

// waitBulk waits until no running bulk may still publish dir, or ctx ends.
func (d *Dirs) waitBulk(ctx context.Context, dir string) {
	d.mu.Lock()
	w := d.bulkWaitLocked(dir)
	d.mu.Unlock()
	if w == nil {
		return
	}
	select {
	case <-w:
	case <-ctx.Done():
	}
}
