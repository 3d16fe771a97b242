package fusefs

import (
	"hash/maphash"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"

	"sshfsm/internal/remote"
)

const rootIno = 1

// inoTable hands out inode numbers. A path's number is derived from a
// hash of the path, so an unchanged tree gets the same numbers on every
// mount (tools such as git compare st_ino with what they saw before).
//
// Two paths never share a number unless they name one file (hard links
// made through the mount): go-fuse takes an equal number for the same
// file and would show one path's node, a symlink's target included, at
// the other's place. Every number handed out is claimed by its path, and
// a path whose hash another path holds gets the next free number of a
// probe sequence instead. A server chooses its names, and so can make
// their hashes collide on purpose. Numbers that no longer match their
// path's hash, after a rename or a collision, are remembered, so a file
// keeps its number for as long as the mount lives.
type inoTable struct {
	mu sync.Mutex // guards byPath, owner and hardLinks
	// hash gives a path's preferred number (hashIno; tests inject
	// collisions).
	hash func(string) uint64
	seed maphash.Seed // of fingerprint
	// byPath holds the paths whose number is not their hash.
	byPath map[string]uint64
	// owner maps every number handed out to the fingerprint of the path
	// holding it, or to ownerReserved (a deleted file still in use) or
	// ownerShared (a file with several names).
	owner map[uint64]uint64
	// hardLinks holds the numbers of files given another name through the
	// mount (link(2)). Each name has its own entry in its directory's
	// listing, and a change made through one name leaves the others'
	// entries stale, so lookups of such a file ask the server.
	hardLinks    map[uint64]bool
	anyHardLinks atomic.Bool // hardLinks is not empty
	// servers maps the numbers taken from the server (serverIno) to the
	// file they were taken for.
	servers map[uint64]serverFile
}

// serverFile is a file as the server identifies it; links: a regular file
// with several names, which may share its number.
type serverFile struct {
	dev, ino uint64
	links    bool
}

// Owners that are no path's fingerprint.
const (
	ownerReserved = iota // a file that lost its last name but is still in use
	ownerShared          // a file with several names, each in byPath
)

// newInoTable returns an empty table numbering paths by hash, hashIno
// when nil.
func newInoTable(hash func(string) uint64) *inoTable {
	if hash == nil {
		hash = hashIno
	}
	return &inoTable{hash: hash, seed: maphash.MakeSeed(), byPath: map[string]uint64{},
		owner: map[uint64]uint64{}, hardLinks: map[uint64]bool{},
		servers: map[uint64]serverFile{}}
}

// fingerprint identifies p as the owner of a number. It is keyed with a
// secret seed, so a server cannot choose names whose fingerprints
// collide too.
func (t *inoTable) fingerprint(p string) uint64 {
	v := maphash.String(t.seed, p)
	if v <= ownerShared {
		v += ownerShared + 1
	}
	return v
}

// hardLinked reports whether the file at p, numbered v (0: not looked up
// yet), was given another name through the mount. Lookups and stats ask
// on every request: until a link is made it costs one atomic load.
func (t *inoTable) hardLinked(p string, v uint64) bool {
	if !t.anyHardLinks.Load() {
		return false
	}
	if v == 0 {
		v = t.get(p)
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.hardLinks[v]
}

// hashIno is FNV-1a (64 bits) of p, computed in place: it runs for every
// entry a reader is shown.
func hashIno(p string) uint64 {
	const offset, prime = 14695981039346656037, 1099511628211
	h := uint64(offset)
	for i := 0; i < len(p); i++ {
		h ^= uint64(p[i])
		h *= prime
	}
	return fixIno(h)
}

// fixIno keeps numbers off the root's and off the values go-fuse reserves.
func fixIno(v uint64) uint64 {
	if v <= rootIno || v == ^uint64(0) {
		v += 2
	}
	return v
}

// get returns the number of path p, claiming it for p.
func (t *inoTable) get(p string) uint64 {
	if p == "" {
		return rootIno
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if v, ok := t.byPath[p]; ok {
		return v
	}
	return t.claimLocked(p)
}

// serverIno returns the number of path p, whose file the server numbers
// a.Ino on device a.Dev, claiming it for p. A path numbered before keeps
// its number. Otherwise p gets the server's number when no other path
// holds it, or when the paths holding it name the same file: a regular
// file with several links whose device and number are the same (its
// names then share one node, as link(2) made them). Any other claim, a
// server's number colliding with another path's or one the kernel
// cannot take, gets p its hash, as get: numbers stay unique whatever the
// server says. A server claiming that two regular files are links of one
// can only show one's contents at the other's place, which it can anyway.
func (t *inoTable) serverIno(p string, a remote.Attr) uint64 {
	if p == "" {
		return rootIno
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if v, ok := t.byPath[p]; ok {
		return v
	}
	links := a.Mode&syscall.S_IFMT == syscall.S_IFREG && a.Nlink > 1
	fp, id := t.fingerprint(p), serverFile{a.Dev, a.Ino, links}
	if t.owner[t.hash(p)] == fp {
		return t.hash(p)
	}
	v := a.Ino
	if v != fixIno(v) {
		return t.claimLocked(p)
	}
	o, taken := t.owner[v]
	switch {
	case !taken:
		t.owner[v] = fp
	case t.servers[v] != id || !links || o == ownerReserved:
		return t.claimLocked(p)
	default:
		// Another name of this file: the names share the number, and
		// lookups of each ask the server (hardLinked).
		t.owner[v] = ownerShared
		t.hardLinks[v] = true
		t.anyHardLinks.Store(true)
	}
	t.servers[v] = id
	t.byPath[p] = v
	return v
}

// claimLocked gives p, which has no number in byPath, its hash or the
// first free number of the probe sequence from there.
func (t *inoTable) claimLocked(p string) uint64 {
	fp, h := t.fingerprint(p), t.hash(p)
	v := h
	for {
		o, ok := t.owner[v]
		if !ok {
			t.owner[v] = fp
			break
		}
		if o == fp {
			break
		}
		v = nextIno(v)
	}
	delete(t.servers, v)
	if v != h {
		t.byPath[p] = v
	}
	return v
}

// forType returns the number for the file of type typ (S_IFMT bits) at
// p, given v, the number get returned: v, unless several names share v
// (link) and the file at p is now a directory or a symlink. Only the
// server can have made it one (link(2) of either never shares a number),
// so the other names are not the same file; and go-fuse gives one node
// to equal numbers of one type: a directory or link in two places, whose
// links the kernel would follow from one place with targets checked for
// the other. p gets a number of its own.
func (t *inoTable) forType(p string, typ uint32, v uint64) uint64 {
	if (typ != syscall.S_IFDIR && typ != syscall.S_IFLNK) || !t.anyHardLinks.Load() {
		return v
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.sharedLocked(v) || t.byPath[p] != v {
		return v
	}
	delete(t.byPath, p)
	return t.claimLocked(p)
}

// nextIno is the number probed after v.
func nextIno(v uint64) uint64 { return fixIno(v*0x9e3779b97f4a7c15 + 1) }

// set records that p holds number v.
func (t *inoTable) set(p string, v uint64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.setLocked(p, v)
}

// setLocked gives p number v, which p now owns unless several names share
// it (each of those is in byPath). The number p owned before is free
// again.
func (t *inoTable) setLocked(p string, v uint64) {
	fp, h := t.fingerprint(p), t.hash(p)
	old, ok := t.byPath[p]
	if !ok {
		old = h
	}
	if old != v && t.owner[old] == fp {
		delete(t.owner, old)
		delete(t.servers, old)
	}
	shared := t.sharedLocked(v)
	if !shared {
		t.owner[v] = fp
	}
	if v == h && !shared {
		delete(t.byPath, p)
	} else {
		t.byPath[p] = v
	}
}

// sharedLocked reports whether number v is marked ownerShared, not merely
// unset (the zero value is ownerReserved).
func (t *inoTable) sharedLocked(v uint64) bool {
	o, ok := t.owner[v]
	return ok && o == ownerShared
}

// link records that newp is another name of the file at oldp, number v:
// both names keep v, and no other path is given it.
func (t *inoTable) link(oldp, newp string, v uint64) {
	t.mu.Lock()
	t.setLocked(newp, v)
	t.byPath[oldp] = v
	t.byPath[newp] = v
	t.owner[v] = ownerShared
	t.hardLinks[v] = true
	t.mu.Unlock()
	t.anyHardLinks.Store(true)
}

// detach records that the file at p (number v) left p but may still be in
// use: v is not handed to the next file at p until release(v).
func (t *inoTable) detach(p string, v uint64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if old, ok := t.byPath[p]; ok && old == v {
		delete(t.byPath, p)
	}
	if !t.sharedLocked(v) {
		t.owner[v] = ownerReserved
	}
}

// release frees a number reserved by detach.
func (t *inoTable) release(v uint64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if o, ok := t.owner[v]; ok && o == ownerReserved {
		delete(t.owner, v)
		delete(t.servers, v)
	}
}

// move records a rename of oldp to newp; the file keeps number v. Paths
// remembered below oldp move along.
func (t *inoTable) move(oldp, newp string, v uint64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if old, ok := t.byPath[oldp]; ok && old == v {
		delete(t.byPath, oldp)
	}
	prefix := oldp + "/"
	var moved []string
	for p := range t.byPath {
		if strings.HasPrefix(p, prefix) {
			moved = append(moved, p)
		}
	}
	for _, p := range moved {
		w := t.byPath[p]
		delete(t.byPath, p)
		t.setLocked(newp+p[len(oldp):], w)
	}
	t.setLocked(newp, v)
}
