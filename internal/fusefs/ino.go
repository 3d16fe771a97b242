package fusefs

import (
	"strings"
	"sync"
	"sync/atomic"
)

const rootIno = 1

// inoTable hands out inode numbers. A path's number is derived from a
// hash of the path, so an unchanged tree gets the same numbers on every
// mount (tools such as git compare st_ino with what they saw before).
// Numbers that no longer match their path's hash — after a rename, or
// because another file holds the hashed value — are remembered, so a
// file keeps its number for as long as the mount lives.
//
// A collision between the hashes of two paths never seen renamed is not
// detected; at 64 bits it needs billions of files to become likely.
type inoTable struct {
	mu sync.Mutex // guards byPath, taken and hardLinks
	// byPath holds the paths whose number is not their hash.
	byPath map[string]uint64
	// taken maps every number in byPath, and the hashed number of every
	// path renamed away or deleted while still in use, to its holder
	// ("" for a deleted file still open).
	taken map[uint64]string
	// hardLinks holds the numbers of files given another name through the
	// mount (link(2)). Each name has its own entry in its directory's
	// listing, and a change made through one name leaves the others'
	// entries stale, so lookups of such a file ask the server.
	hardLinks    map[uint64]bool
	anyHardLinks atomic.Bool // hardLinks is not empty
}

func newInoTable() *inoTable {
	return &inoTable{byPath: map[string]uint64{}, taken: map[uint64]string{}, hardLinks: map[uint64]bool{}}
}

// markHardLinked records that the file numbered v has several names.
func (t *inoTable) markHardLinked(v uint64) {
	t.mu.Lock()
	t.hardLinks[v] = true
	t.mu.Unlock()
	t.anyHardLinks.Store(true)
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

// get returns the number of path p.
func (t *inoTable) get(p string) uint64 {
	if p == "" {
		return rootIno
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if v, ok := t.byPath[p]; ok {
		return v
	}
	v := hashIno(p)
	holder, ok := t.taken[v]
	if !ok || holder == p {
		return v
	}
	for ok && holder != p {
		v = fixIno(v*0x9e3779b97f4a7c15 + 1)
		holder, ok = t.taken[v]
	}
	t.byPath[p] = v
	t.taken[v] = p
	return v
}

// set records that p holds number v.
func (t *inoTable) set(p string, v uint64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.setLocked(p, v)
}

func (t *inoTable) setLocked(p string, v uint64) {
	if old, ok := t.byPath[p]; ok && t.taken[old] == p {
		delete(t.taken, old)
	}
	if v == hashIno(p) {
		delete(t.byPath, p)
		if t.taken[v] == p || t.taken[v] == "" {
			delete(t.taken, v)
		}
		return
	}
	t.byPath[p] = v
	t.taken[v] = p
}

// detach records that the file at p (number v) left p but may still be in
// use: v is not handed to the next file at p until release(v).
func (t *inoTable) detach(p string, v uint64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if old, ok := t.byPath[p]; ok && old == v {
		delete(t.byPath, p)
	}
	t.taken[v] = ""
}

// release frees a number reserved by detach.
func (t *inoTable) release(v uint64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if h, ok := t.taken[v]; ok && h == "" {
		delete(t.taken, v)
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
