package cache

import (
	"context"
	"math"
	"strings"
	"time"
)

// Checking loaded listings at mount (Auto mode). A listing loaded from the
// snapshot may be older than the mount: the server changed while nothing
// was mounted, or while the last mount did not hear of it. Before any of
// them answers, one change listing per host (PersistOptions.Changes: a
// remote find of the names whose ctime is newer than the oldest loaded
// listing, measured by the server's clock) tells which names changed
// since, and how long ago. A name that changed after a loaded listing
// holding it was learned (checkMargin aside) is forgotten there: the
// loaded listing of a changed directory is dropped (listed again when
// used), the entry of a changed name becomes unknown (one LSTAT when
// used). Ages are compared with ages (the server's now minus the ctime,
// this machine's now minus when the listing was learned), so the clocks
// of the two machines need not agree. every other loaded listing then answers at once, its
// revalidation following in the background (revalidate.go). Lookups and readers of a loaded directory wait for the
// check (Lookup, Get); Peek and List answer nothing from loaded listings
// meanwhile. When the check fails or cannot run (no exec, no GNU find, a
// namespace that cannot list changes), no loaded listing answers until
// listed again: each directory is listed at its first use.

const (
	// checkMargin is added to the age of every loaded listing, so that
	// changes made while it was being listed count too.
	checkMargin = 5 * time.Second
	// checkTimeout bounds the check, and so the wait of lookups for it.
	checkTimeout = 30 * time.Second
)

// startCheckLocked decides, once the snapshot is installed, whether the
// loaded listings are checked, and over what age.
func (d *Dirs) startCheckLocked() (within time.Duration, check bool) {
	p := d.p
	if p.opts.Mode != Auto || p.loadedDirs == 0 {
		return 0, false
	}
	oldest := int64(math.MaxInt64)
	for _, l := range d.dirs {
		if l.persisted {
			oldest = min(oldest, l.learned)
		}
	}
	if p.opts.Changes == nil || oldest <= 0 {
		d.expireLoadedLocked()
		p.check = "failed"
		return 0, false
	}
	within = d.now().Sub(time.Unix(0, oldest)) + checkMargin
	p.oldest = oldest
	p.checking, p.checked, p.check = true, make(chan struct{}), "under way"
	return within, true
}

// checkLoaded runs the check and applies what it found.
func (d *Dirs) checkLoaded(p *persistence, within time.Duration) {
	start := time.Now()
	ctx, cancel := context.WithTimeout(p.ctx, checkTimeout)
	defer cancel()
	type change struct {
		path string
		at   time.Time // by this machine's clock
	}
	var changed []change
	err := p.opts.Changes.ListChanged(ctx, "", within, func(path string, age time.Duration) {
		changed = append(changed, change{path, d.now().Add(-age)})
	})
	if err != nil {
		d.mu.Lock()
		defer d.mu.Unlock()
		p.log.Info("loaded listings not checked at once; each is listed again at its first use", "err", err)
		d.expireLoadedLocked()
		p.check = "failed"
		p.checking = false
		close(p.checked)
		return
	}
	var since []string // changed after the listing of their directory was learned
	d.mu.Lock()
	for _, c := range changed {
		if d.changedLocked(c.path, c.at) {
			since = append(since, c.path)
		}
	}
	d.mu.Unlock()
	if p.opts.Checked != nil {
		p.opts.Checked(since)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	p.check, p.checkChanged = "done", len(since)
	p.log.Debug("loaded listings checked", "within", within, "changed", len(changed), "since learned", len(since), "took", time.Since(start))
	p.checking = false
	close(p.checked)
}

// changedLocked forgets what loaded listings learned before at (less
// checkMargin) say of path, which changed on the server at at. It
// reports whether path changed after the listing of its directory was
// learned (without the margin), or of the oldest one if none is loaded:
// content cached of it may be of another version.
func (d *Dirs) changedLocked(path string, at time.Time) bool {
	before := func(l *listing) bool { return at.After(time.Unix(0, l.learned).Add(-checkMargin)) }
	if l := d.dirs[path]; l != nil && l.persisted && before(l) {
		d.dropLocked(path, l)
	}
	if path == "" {
		return true
	}
	parent, name := parentDir(path), path[strings.LastIndexByte(path, '/')+1:]
	learned := d.p.oldest
	if pl := d.dirs[parent]; pl != nil && pl.persisted {
		if e, ok := pl.names[name]; ok && !e.gone && before(pl) {
			pl.names[name] = entry{stale: true}
			d.changes++
		}
		learned = pl.learned
	}
	return !at.Before(time.Unix(0, learned))
}

// expireLoadedLocked makes every loaded listing expired: none answers,
// each is listed again at its first use (and kept for the snapshot until
// then).
func (d *Dirs) expireLoadedLocked() {
	for _, l := range d.dirs {
		if l.persisted {
			l.expires = time.Time{}
		}
	}
}

// awaitCheck waits, if dir has a loaded listing, for the check of loaded
// listings under way, or for the end of ctx.
func (d *Dirs) awaitCheck(ctx context.Context, dir string) {
	d.mu.Lock()
	var ch chan struct{}
	if p := d.p; p != nil && p.checking {
		if l := d.dirs[dir]; l != nil && l.persisted {
			ch = p.checked
		}
	}
	d.mu.Unlock()
	if ch == nil {
		return
	}
	select {
	case <-ch:
	case <-ctx.Done():
	}
}
