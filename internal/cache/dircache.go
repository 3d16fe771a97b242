// Package cache keeps recently fetched directory listings so that lookups,
// misses and attribute queries in a listed directory are answered without
// a round trip until the listing expires.
package cache

import (
	"context"
	"sort"
	"strings"
	"sync"
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
	stores  int // listings stored since the last sweep of expired ones
}

type listing struct {
	expires time.Time
	names   map[string]entry
}

type entry struct {
	attr  remote.Attr
	stale bool // present or not, attributes unknown: ask the remote
}

// flight is one listing being fetched; lookups in the same directory wait
// for it instead of sending their own request.
type flight struct {
	done  chan struct{}
	ok    bool // the fetch succeeded and the listing was stored
	dirty bool // a mutation in the directory raced with the fetch
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
	return d.peekLocked(dir, name)
}

func (d *Dirs) peekLocked(dir, name string) (remote.Attr, State) {
	l := d.dirs[dir]
	if l == nil {
		return remote.Attr{}, Unknown
	}
	if !d.now().Before(l.expires) {
		delete(d.dirs, dir)
		return remote.Attr{}, Unknown
	}
	e, ok := l.names[name]
	switch {
	case !ok:
		return remote.Attr{}, Absent
	case e.stale:
		return remote.Attr{}, Unknown
	}
	return e.attr, Hit
}

// List returns the fresh listing of dir, sorted by name, when every entry
// in it is known; otherwise ok is false and the caller lists the remote.
func (d *Dirs) List(dir string) (ents []remote.DirEntry, ok bool) {
	if !d.Enabled() {
		return nil, false
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	l := d.dirs[dir]
	if l == nil || !d.now().Before(l.expires) {
		return nil, false
	}
	ents = make([]remote.DirEntry, 0, len(l.names))
	for name, e := range l.names {
		if e.stale {
			return nil, false
		}
		ents = append(ents, remote.DirEntry{Name: name, Attr: e.attr})
	}
	sort.Slice(ents, func(i, j int) bool { return ents[i].Name < ents[j].Name })
	return ents, true
}

// Lookup answers for name in dir. Without a fresh listing it fetches dir
// once, shared by every concurrent Lookup in dir, and answers from it. A
// failed or raced fetch answers Unknown so the caller asks for the single
// name itself (a directory may be searchable but not readable).
func (d *Dirs) Lookup(ctx context.Context, dir, name string, fetch Fetcher) (remote.Attr, State) {
	if !d.Enabled() {
		return remote.Attr{}, Unknown
	}
	d.mu.Lock()
	if a, st := d.peekLocked(dir, name); st != Unknown || d.dirs[dir] != nil {
		d.mu.Unlock()
		return a, st
	}
	f := d.flights[dir]
	if f == nil {
		f = &flight{done: make(chan struct{})}
		d.flights[dir] = f
		d.mu.Unlock()
		d.run(ctx, dir, f, fetch)
	} else {
		d.mu.Unlock()
		select {
		case <-f.done:
		case <-ctx.Done():
			return remote.Attr{}, Unknown
		}
	}
	if !f.ok {
		return remote.Attr{}, Unknown
	}
	return d.Peek(dir, name)
}

func (d *Dirs) run(ctx context.Context, dir string, f *flight, fetch Fetcher) {
	ents, err := fetch(ctx, dir)
	d.mu.Lock()
	defer d.mu.Unlock()
	delete(d.flights, dir)
	if err == nil && !f.dirty {
		d.storeLocked(dir, ents)
		f.ok = true
	}
	close(f.done)
}

// Fetch lists dir through fetch and stores the result, unless a mutation
// in dir raced with it.
func (d *Dirs) Fetch(ctx context.Context, dir string, fetch Fetcher) ([]remote.DirEntry, error) {
	if !d.Enabled() {
		return fetch(ctx, dir)
	}
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
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.flights[dir] == f {
		delete(d.flights, dir)
	}
	if err == nil && !f.dirty {
		d.storeLocked(dir, ents)
		f.ok = true
	}
	close(f.done)
	return ents, err
}

func (d *Dirs) storeLocked(dir string, ents []remote.DirEntry) {
	if d.stores++; d.stores >= 256 {
		d.stores = 0
		now := d.now()
		for p, l := range d.dirs {
			if !now.Before(l.expires) {
				delete(d.dirs, p)
			}
		}
	}
	names := make(map[string]entry, len(ents))
	for _, e := range ents {
		if e.Name == "." || e.Name == ".." {
			continue
		}
		names[e.Name] = entry{attr: e.Attr}
	}
	d.dirs[dir] = &listing{expires: d.now().Add(d.ttl), names: names}
}

// touchLocked marks a running fetch of dir as raced and returns the
// listing of dir, if any.
func (d *Dirs) touchLocked(dir string) *listing {
	if f := d.flights[dir]; f != nil {
		f.dirty = true
	}
	return d.dirs[dir]
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
		l.names[name] = entry{attr: a}
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
		l.names[name] = entry{stale: true}
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
		delete(l.names, name)
	}
}

// DropTree forgets the listings of dir and of every directory below it.
func (d *Dirs) DropTree(dir string) {
	if !d.Enabled() {
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	prefix := dir + "/"
	for p, f := range d.flights {
		if p == dir || dir == "" || strings.HasPrefix(p, prefix) {
			f.dirty = true
		}
	}
	for p := range d.dirs {
		if p == dir || dir == "" || strings.HasPrefix(p, prefix) {
			delete(d.dirs, p)
		}
	}
}
