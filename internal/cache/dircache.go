// Package cache keeps recently fetched directory listings so that lookups,
// misses and attribute queries in a listed directory are answered without
// a round trip until the listing expires.
package cache

import (
	"context"
	"errors"
	"strings"
	"sync"
	"syscall"
	"time"

	"sshfsm/internal/remote"
)

// State says what a listing knows about one name.
type State int

const (
	// Unknown: no fresh listing, or the entry's attributes are stale; the
	// caller asks the remote.
	Unknown State = iota
	// Hit: the name exists with the returned attributes.
	Hit
	// Absent: a fresh listing does not contain the name.
	Absent
)

// Fetcher lists one directory.
type Fetcher func(ctx context.Context, dir string) ([]remote.DirEntry, error)

// Dirs caches whole directory listings by path for a fixed time to live.
// Its methods may be called concurrently.
type Dirs struct {
	ttl time.Duration
	now func() time.Time

	// mu guards dirs and flights and everything they point to. It is never
	// held across a call to a Fetcher.
	mu      sync.Mutex
	dirs    map[string]*listing
	flights map[string]*flight
	stores  int     // listings stored since the last sweep of expired ones
	bulks   []*Bulk // running, and ended ones remembered (bulk.go)
	// entries counts the names of every listing kept (order's length).
	entries int
	// changes counts the changes to what is kept, for the snapshot writer.
	changes uint64
	// p is the persistence of listings across mounts (persist.go); nil
	// when off. Its fields are guarded by mu too unless it says otherwise.
	p *persistence

	count counters
}

type listing struct {
	expires time.Time
	names   map[string]entry
	// order lists the names in the order the remote listed them, then
	// those the mount added: readers walk a directory in the order a
	// bulk listing (remote find) produces it, so they follow it closely.
	order []string
	// prefetched: stored by Prefetch or a Bulk and not yet used by a reader.
	prefetched bool
	// persisted: loaded from a snapshot and not listed since; queued: it
	// answered a question, and its revalidation was asked for
	// (revalidate.go).
	persisted, queued bool
	// used is when the listing last answered (unix seconds): the snapshot
	// keeps the most recently used listings when it must drop some.
	used int64
	// learned is when it was listed (unix nanoseconds): a new mount checks
	// what changed on the server since (check.go).
	learned int64
	// touches counts the mount's changes to the listing, so that a
	// revalidation that raced with one does not store what it listed.
	touches uint32
}

type entry struct {
	attr  remote.Attr
	stale bool // present or not, attributes unknown: ask the remote
	// changed: a directory whose contents the mount changed since attr
	// was learned, so its times are out of date. A snapshot writes it as
	// stale; a listing that never expires answers it as stale.
	changed bool
	gone    bool // removed by the mount (kept so that order holds names once)
}

// flight is one listing being fetched; lookups in the same directory wait
// for it instead of sending their own request.
type flight struct {
	done  chan struct{}
	ok    bool  // the fetch succeeded and the listing was stored
	dirty bool  // a mutation in the directory raced with the fetch
	err   error // the fetch's error
	// abandoned: the fetch failed because its caller's context ended;
	// waiters fetch again.
	abandoned bool
}

// unanswered returns the error of f, a flight that has landed (d.mu held),
// when the remote did not answer it and its caller was not interrupted;
// nil otherwise, or for a nil f or one still under way.
func (f *flight) unanswered() error {
	if f == nil {
		return nil
	}
	select {
	case <-f.done:
	default:
		return nil
	}
	if f.abandoned || f.err == nil || !Unanswered(f.err) {
		return nil
	}
	return f.err
}

// New returns a cache keeping listings for ttl; ttl <= 0 disables it.
// now, when nil, is time.Now.
func New(ttl time.Duration, now func() time.Time) *Dirs {
	if now == nil {
		now = time.Now
	}
	return &Dirs{ttl: ttl, now: now, dirs: map[string]*listing{}, flights: map[string]*flight{}}
}

// Enabled reports whether listings are kept at all.
func (d *Dirs) Enabled() bool { return d != nil && d.ttl > 0 }

// Peek answers from a fresh listing of dir without fetching one.
func (d *Dirs) Peek(dir, name string) (remote.Attr, State) {
	if !d.Enabled() {
		return remote.Attr{}, Unknown
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	a, st, _ := d.peekLocked(dir, name)
	d.count.answered(st, false)
	return a, st
}

// peekLocked answers from the listing of dir; fresh says whether a fresh
// listing was kept (st is Unknown without one).
func (d *Dirs) peekLocked(dir, name string) (a remote.Attr, st State, fresh bool) {
	l := d.freshLocked(dir)
	if l == nil {
		return remote.Attr{}, Unknown, false
	}
	e, ok := l.names[name]
	switch {
	case !ok || e.gone:
		return remote.Attr{}, Absent, true
	case l.unknown(e):
		return remote.Attr{}, Unknown, true
	}
	return e.attr, Hit, true
}

// unknown reports whether l cannot answer with e's attributes.
func (l *listing) unknown(e entry) bool {
	return e.stale || (e.changed && l.expires.Equal(forever))
}

// freshLocked returns the listing of dir if it is fresh, and counts it as
// used: the caller answers from it. An expired listing is dropped, unless
// listings are persisted: the snapshot keeps what was last known.
func (d *Dirs) freshLocked(dir string) *listing {
	l := d.dirs[dir]
	if l == nil {
		return nil
	}
	now := d.now()
	if !now.Before(l.expires) {
		if d.p == nil {
			d.dropLocked(dir, l)
		}
		return nil
	}
	if l.persisted && d.p.checking {
		return nil // not yet checked against the server (check.go)
	}
	l.used = now.Unix()
	if l.persisted && !l.queued {
		d.firstUseLocked(dir, l, now)
	}
	return l
}

// dropLocked forgets the listing l of dir.
func (d *Dirs) dropLocked(dir string, l *listing) {
	delete(d.dirs, dir)
	d.entries -= len(l.order)
	d.changes++
}

// List returns the fresh listing of dir, in the remote's order, when every
// entry in it is known; otherwise ok is false and the caller lists the
// remote.
func (d *Dirs) List(dir string) (ents []remote.DirEntry, ok bool) {
	if !d.Enabled() {
		return nil, false
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.listLocked(dir)
}

func (d *Dirs) listLocked(dir string) (ents []remote.DirEntry, ok bool) {
	l := d.freshLocked(dir)
	if l == nil {
		return nil, false
	}
	ents = make([]remote.DirEntry, 0, len(l.order))
	for _, name := range l.order {
		switch e := l.names[name]; {
		case l.unknown(e):
			return nil, false
		case !e.gone:
			ents = append(ents, remote.DirEntry{Name: name, Attr: e.attr})
		}
	}
	d.count.listingHits.Add(1)
	return ents, true
}

// Get returns the listing of dir for a reader of it: the fresh one kept
// (cached true), else the one a fetch under way brings (a prefetch, a
// lookup's, a bulk listing: cached true too), else its own fetch's. The
// check for a fetch under way and the start of its own are one step, so
// a prefetch starting meanwhile is waited for instead of listed twice.
func (d *Dirs) Get(ctx context.Context, dir string, fetch Fetcher) (ents []remote.DirEntry, cached bool, err error) {
	if !d.Enabled() {
		ents, err = fetch(ctx, dir)
		return ents, false, err
	}
	d.awaitCheck(ctx, dir)
	for {
		d.mu.Lock()
		joined := d.flights[dir]
		d.mu.Unlock()
		d.Wait(ctx, dir)
		d.mu.Lock()
		if ents, ok := d.listLocked(dir); ok {
			d.mu.Unlock()
			return ents, true, nil
		}
		if err := joined.unanswered(); err != nil {
			// As Lookup: listing again would wait as long again, past
			// the timeout of the request this listing serves.
			d.mu.Unlock()
			return nil, false, err
		}
		if d.flights[dir] == nil && !d.bulkPendingLocked(dir) {
			break // with mu held
		}
		d.mu.Unlock()
		if err := ctx.Err(); err != nil {
			return nil, false, err
		}
	}
	f := &flight{done: make(chan struct{})}
	d.flights[dir] = f
	d.count.listingMisses.Add(1)
	d.mu.Unlock()
	ents, err = d.run(ctx, dir, f, fetch)
	return ents, false, err
}

// Lookup answers for name in dir. Without a fresh listing it fetches dir
// once, shared by every concurrent Lookup in dir, and answers from it.
//
// A fetch the server refused (a directory may be searchable but not
// readable) or one that raced with a mutation answers Unknown with a nil
// error: the caller asks for the single name itself. A fetch the remote
// did not answer (Unanswered) returns its error, and so does the end of
// ctx: asking for the single name would wait as long again.
func (d *Dirs) Lookup(ctx context.Context, dir, name string, fetch Fetcher) (remote.Attr, State, error) {
	if !d.Enabled() {
		return remote.Attr{}, Unknown, nil
	}
	d.awaitCheck(ctx, dir)
	// again: an earlier pass waited for a fetch, and was counted.
	for again := false; ; again = true {
		d.mu.Lock()
		if a, st, fresh := d.peekLocked(dir, name); fresh {
			d.mu.Unlock()
			if !again {
				d.count.kept(st)
			}
			return a, st, nil
		}
		if !again {
			d.count.fetched()
		}
		f := d.flights[dir]
		if f == nil && d.bulkPendingLocked(dir) {
			// A bulk listing may list dir: wait for it rather than
			// list dir a second time.
			w := d.bulkWaitLocked(dir)
			d.mu.Unlock()
			select {
			case <-w:
			case <-ctx.Done():
				return remote.Attr{}, Unknown, ctx.Err()
			}
			continue
		}
		if f == nil {
			f = &flight{done: make(chan struct{})}
			d.flights[dir] = f
			d.mu.Unlock()
			d.run(ctx, dir, f, fetch)
			if f.err != nil && (ctx.Err() != nil || Unanswered(f.err)) {
				return remote.Attr{}, Unknown, f.err
			}
		} else {
			d.mu.Unlock()
			select {
			case <-f.done:
			case <-ctx.Done():
				return remote.Attr{}, Unknown, ctx.Err()
			}
			if f.abandoned {
				// The fetching caller was interrupted; its error is
				// not ours.
				continue
			}
			if f.err != nil && Unanswered(f.err) {
				return remote.Attr{}, Unknown, f.err
			}
		}
		if !f.ok {
			return remote.Attr{}, Unknown, nil
		}
		d.mu.Lock()
		a, st, _ := d.peekLocked(dir, name)
		d.mu.Unlock()
		return a, st, nil
	}
}

// run fetches dir for flight f and lands it.
func (d *Dirs) run(ctx context.Context, dir string, f *flight, fetch Fetcher) ([]remote.DirEntry, error) {
	ents, err := fetch(ctx, dir)
	d.land(ctx, dir, f, ents, err)
	return ents, err
}

// land ends flight f with the fetch's result, storing the listing unless
// a mutation raced with it.
func (d *Dirs) land(ctx context.Context, dir string, f *flight, ents []remote.DirEntry, err error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.flights[dir] == f {
		delete(d.flights, dir)
	}
	f.err = err
	f.abandoned = err != nil && ctx.Err() != nil
	if err == nil && !f.dirty {
		d.storeLocked(dir, ents)
		f.ok = true
	}
	close(f.done)
}

// Unanswered reports whether err means that the remote did not answer
// (the request timed out, was cancelled, or its connection was lost), as
// opposed to an answer refusing the request. After such an error another
// request to the same remote would most likely wait just as long.
func Unanswered(err error) bool {
	return errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) ||
		errors.Is(err, syscall.ETIMEDOUT) || errors.Is(err, syscall.ENOTCONN)
}

// Fetch lists dir through fetch and stores the result, unless a mutation
// in dir raced with it.
func (d *Dirs) Fetch(ctx context.Context, dir string, fetch Fetcher) ([]remote.DirEntry, error) {
	if !d.Enabled() {
		return fetch(ctx, dir)
	}
	d.count.listingMisses.Add(1)
	f := &flight{done: make(chan struct{})}
	d.mu.Lock()
	if old := d.flights[dir]; old != nil {
		// A running lookup fetch owns the slot; this one stores nothing.
		f.dirty = true
	} else {
		d.flights[dir] = f
	}
	d.mu.Unlock()
	ents, err := fetch(ctx, dir)
	d.land(ctx, dir, f, ents, err)
	return ents, err
}

// storeLocked stores ents as the listing of dir, fresh for the time to
// live, and returns it. Replacing a persisted listing that answered,
// it reports what differs (revalidate.go).
func (d *Dirs) storeLocked(dir string, ents []remote.DirEntry) *listing {
	now := d.now()
	if d.stores++; d.stores >= 256 {
		d.stores = 0
		d.sweepLocked(now)
	}
	if d.p != nil && d.entries+len(ents) > d.p.maxEntries {
		d.boundLocked(len(ents))
	}
	names := make(map[string]entry, len(ents))
	order := make([]string, 0, len(ents))
	for _, e := range ents {
		if _, dup := names[e.Name]; dup || e.Name == "." || e.Name == ".." {
			continue
		}
		names[e.Name] = entry{attr: e.Attr}
		order = append(order, e.Name)
	}
	l := &listing{expires: now.Add(d.ttl), names: names, order: order, used: now.Unix(), learned: now.UnixNano()}
	if old := d.dirs[dir]; old != nil {
		d.replacedLocked(dir, old, l)
		d.entries -= len(old.order)
	}
	d.dirs[dir] = l
	d.entries += len(order)
	d.changes++
	return l
}

// sweepLocked drops expired listings, unless listings are persisted: the
// snapshot keeps what was last known, within its size bound.
func (d *Dirs) sweepLocked(now time.Time) {
	if d.p != nil {
		return
	}
	for p, l := range d.dirs {
		if !now.Before(l.expires) {
			d.dropLocked(p, l)
		}
	}
}

// touchLocked marks a running fetch of dir as raced and returns the
// listing of dir, if any.
func (d *Dirs) touchLocked(dir string) *listing {
	if f := d.flights[dir]; f != nil {
		f.dirty = true
	}
	d.bulkTouchLocked(dir, false)
	d.changes++
	if dir == "" && d.p != nil {
		d.p.rootTouched = time.Now()
	}
	if dir != "" {
		// The directory's times in its parent's listing are out of date.
		parent, name := parentDir(dir), dir[strings.LastIndexByte(dir, '/')+1:]
		if pl := d.dirs[parent]; pl != nil {
			if e, ok := pl.names[name]; ok && !e.gone && !e.stale {
				e.changed = true
				pl.names[name] = e
			}
		}
	}
	l := d.dirs[dir]
	if l != nil {
		l.touches++
	}
	return l
}

// Put stores a complete listing of dir, known without fetching it (a
// directory just created is empty).
func (d *Dirs) Put(dir string, ents []remote.DirEntry) {
	if !d.Enabled() {
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	d.touchLocked(dir)
	d.storeLocked(dir, ents)
}

// Set records that name exists in dir with attributes a.
func (d *Dirs) Set(dir, name string, a remote.Attr) {
	if !d.Enabled() {
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if l := d.touchLocked(dir); l != nil {
		if old, ok := l.names[name]; ok && !old.stale && !old.gone {
			a = remote.KeepIdentity(old.attr, a, time.Now())
		}
		d.putLocked(l, name, entry{attr: a})
	}
}

// Forget makes the attributes and the existence of name in dir unknown.
func (d *Dirs) Forget(dir, name string) {
	if !d.Enabled() {
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if l := d.touchLocked(dir); l != nil {
		d.putLocked(l, name, entry{stale: true})
	}
}

// Remove records that name no longer exists in dir.
func (d *Dirs) Remove(dir, name string) {
	if !d.Enabled() {
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if l := d.touchLocked(dir); l != nil {
		if _, ok := l.names[name]; ok {
			l.names[name] = entry{gone: true}
		}
	}
}

// DropTree forgets the listings of dir and of every directory below it.
func (d *Dirs) DropTree(dir string) {
	if !d.Enabled() {
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	d.bulkTouchLocked(dir, true)
	d.changes++
	if dir == "" && d.p != nil {
		d.p.rootTouched = time.Now()
	}
	prefix := dir + "/"
	for p, f := range d.flights {
		if p == dir || dir == "" || strings.HasPrefix(p, prefix) {
			f.dirty = true
		}
	}
	for p, l := range d.dirs {
		if p == dir || dir == "" || strings.HasPrefix(p, prefix) {
			d.dropLocked(p, l)
		}
	}
}

// putLocked sets the entry of name in l, appending a new name to the
// order.
func (d *Dirs) putLocked(l *listing, name string, e entry) {
	if _, ok := l.names[name]; !ok {
		l.order = append(l.order, name)
		d.entries++
	}
	l.names[name] = e
}

// Refresh sets the attributes of name in dir to a, just fetched, where a
// listing holds the name: the listing then answers what the server said.
// Unlike Set it records no change by the mount (the directory's times
// did not change).
func (d *Dirs) Refresh(dir, name string, a remote.Attr) {
	if !d.Enabled() {
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	l := d.dirs[dir]
	if l == nil {
		return
	}
	e, ok := l.names[name]
	if !ok || e.gone || (!e.stale && !attrDiffers(e.attr, a)) {
		return
	}
	if !e.stale {
		a = remote.KeepIdentity(e.attr, a, time.Now())
	}
	l.names[name] = entry{attr: a}
	d.changes++
}
