package cache

import "context"

// Prefetch lists dir in the background through fetch unless a fresh listing
// of it is kept, a fetch of it is under way or a running Bulk may still
// list it; lookups and reads of dir made meanwhile wait for that fetch
// instead of sending their own. It returns at once; done, when not nil,
// runs after the fetch (or at once if none was started).
func (d *Dirs) Prefetch(ctx context.Context, dir string, fetch Fetcher, done func()) {
	if !d.Enabled() {
		if done != nil {
			done()
		}
		return
	}
	d.mu.Lock()
	l := d.dirs[dir]
	if (l != nil && d.now().Before(l.expires)) || d.flights[dir] != nil || d.bulkPendingLocked(dir) {
		d.mu.Unlock()
		if done != nil {
			done()
		}
		return
	}
	f := &flight{done: make(chan struct{})}
	d.flights[dir] = f
	d.mu.Unlock()
	go func() {
		d.run(ctx, dir, f, fetch)
		if f.ok {
			d.mu.Lock()
			if l := d.dirs[dir]; l != nil {
				l.prefetched = true
			}
			d.mu.Unlock()
		}
		if done != nil {
			done()
		}
	}()
}

// Wait blocks until a fetch of dir under way, if any, has finished, and
// until no running Bulk may still list dir.
func (d *Dirs) Wait(ctx context.Context, dir string) {
	if !d.Enabled() {
		return
	}
	d.mu.Lock()
	f := d.flights[dir]
	d.mu.Unlock()
	if f != nil {
		select {
		case <-f.done:
		case <-ctx.Done():
			return
		}
	}
	if !d.Fresh(dir) {
		d.waitBulk(ctx, dir)
	}
}

// TakePrefetched reports whether the listing of dir was stored by Prefetch
// and not used since, and marks it used: a reader finding one is walking a
// tree the prefetcher saw coming.
func (d *Dirs) TakePrefetched(dir string) bool {
	if !d.Enabled() {
		return false
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	l := d.dirs[dir]
	if l == nil || !l.prefetched {
		return false
	}
	l.prefetched = false
	return true
}

// Fresh reports whether a listing of dir is kept and not expired (some of
// its entries may still be unknown).
func (d *Dirs) Fresh(dir string) bool {
	if !d.Enabled() {
		return false
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	l := d.dirs[dir]
	return l != nil && d.now().Before(l.expires)
}
