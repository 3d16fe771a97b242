package namespace

import (
	"context"
	"fmt"
	"math"
	"math/bits"
	"math/rand/v2"
	"slices"
	"sync"
	"syscall"
	"time"

	"sshfsm/internal/remote"
)

// Policy chooses the branch that receives a new name (mergerfs' create
// policies). The zero value is EPFF.
type Policy int

const (
	// EPFF (existing path, first found): the highest writable branch that
	// already holds the parent directory.
	EPFF Policy = iota
	// FF (first found): the highest writable branch.
	FF
	// MFS: the writable branch with the most free space.
	MFS
	// LFS: the writable branch with the least free space.
	LFS
	// Rand: a writable branch at random.
	Rand
)

var policyNames = [...]string{EPFF: "epff", FF: "ff", MFS: "mfs", LFS: "lfs", Rand: "rand"}

func (p Policy) String() string {
	if p >= 0 && int(p) < len(policyNames) {
		return policyNames[p]
	}
	return fmt.Sprintf("Policy(%d)", int(p))
}

// ParsePolicy parses a create policy name: epff, ff, mfs, lfs or rand;
// "" is the default, epff.
func ParsePolicy(s string) (Policy, error) {
	if s == "" {
		return EPFF, nil
	}
	for p, name := range policyNames {
		if s == name {
			return Policy(p), nil
		}
	}
	return 0, fmt.Errorf("unknown create policy %q (one of epff, ff, mfs, lfs, rand): %w", s, syscall.EINVAL)
}

// pick returns the branch that receives a new name in directory dir, whose
// layout is l. Only writable branches that are up and can hold dir (see
// canHold) are chosen; a non-epff policy may choose one that lacks dir,
// which the caller then creates there.
func (u *union) pick(ctx context.Context, dir string, l dirLayout) (int, error) {
	if u.policy == EPFF {
		for i := range l.in.all() {
			if !u.br[i].ReadOnly && u.br[i].up() {
				return i, nil
			}
		}
		return -1, fmt.Errorf("create in %q: no writable branch holds the directory: %w", dir, syscall.EROFS)
	}
	var cands []int
	for i := range u.upSet().all() {
		if u.br[i].ReadOnly {
			continue
		}
		ok, err := u.canHold(ctx, i, dir)
		if err != nil {
			return -1, err
		}
		if ok {
			cands = append(cands, i)
		}
	}
	if len(cands) == 0 {
		return -1, fmt.Errorf("create in %q: no writable branch can hold the directory: %w", dir, syscall.EROFS)
	}
	switch u.policy {
	case MFS, LFS:
		return u.bySpace(ctx, cands), nil
	case Rand:
		return cands[rand.IntN(len(cands))], nil
	}
	return cands[0], nil
}

// bySpace returns the candidate with the most (MFS) or least (LFS) space
// available; branches whose space is unknown are passed over, and the first
// candidate is taken when none is known.
func (u *union) bySpace(ctx context.Context, cands []int) int {
	avail := u.space.avail(ctx, u, cands)
	best := -1
	for _, i := range cands {
		a, ok := avail[i]
		if !ok {
			continue
		}
		if best < 0 || (u.policy == MFS && a > avail[best]) || (u.policy == LFS && a < avail[best]) {
			best = i
		}
	}
	if best < 0 {
		return cands[0]
	}
	return best
}

// spaceCache keeps each branch's statfs for a short time: mfs and lfs ask
// on every create.
type spaceCache struct {
	ttl time.Duration
	mu  sync.Mutex // guards m
	m   map[int]spaceEntry
}

type spaceEntry struct {
	s       remote.StatFS
	expires time.Time
}

func newSpaceCache(ttl time.Duration) *spaceCache {
	return &spaceCache{ttl: ttl, m: map[int]spaceEntry{}}
}

// statfs returns the statfs of every branch of want that answered; the
// ones not cached are asked in parallel.
func (c *spaceCache) statfs(ctx context.Context, u *union, want []int) map[int]remote.StatFS {
	out := make(map[int]remote.StatFS, len(want))
	var ask []int
	now := time.Now()
	c.mu.Lock()
	for _, i := range want {
		if e, ok := c.m[i]; ok && now.Before(e.expires) {
			out[i] = e.s
		} else {
			ask = append(ask, i)
		}
	}
	c.mu.Unlock()
	type answer struct {
		i   int
		s   remote.StatFS
		err error
	}
	ch := make(chan answer, len(ask))
	for _, i := range ask {
		go func() {
			s, err := u.br[i].Remote.StatFS(ctx, "")
			ch <- answer{i, s, err}
		}()
	}
	for range ask {
		a := <-ch
		if a.err != nil {
			u.log.Debug("branch statfs failed", "branch", u.br[a.i].Name, "err", a.err)
			continue
		}
		out[a.i] = a.s
		c.mu.Lock()
		c.m[a.i] = spaceEntry{a.s, time.Now().Add(c.ttl)}
		c.mu.Unlock()
	}
	return out
}

// avail returns the bytes available to the remote user on each branch of
// want that answered.
func (c *spaceCache) avail(ctx context.Context, u *union, want []int) map[int]uint64 {
	out := map[int]uint64{}
	for i, s := range c.statfs(ctx, u, want) {
		out[i] = s.Bavail * frsize(s)
	}
	return out
}

func (c *spaceCache) drop() {
	c.mu.Lock()
	clear(c.m)
	c.mu.Unlock()
}

func frsize(s remote.StatFS) uint64 {
	if s.Frsize != 0 {
		return s.Frsize
	}
	return s.Bsize
}

// sumStatFS adds up filesystems, counting the ones that share an Fsid
// once (several branches on one server disk); an Fsid of 0 is unknown, so
// such filesystems count separately. Blocks are expressed in the first
// filesystem's fragment size. The sum's Fsid is the one Fsid all share, or 0.
func sumStatFS(all []remote.StatFS) remote.StatFS {
	var out remote.StatFS
	seen := map[uint64]bool{}
	for k, s := range all {
		if s.Fsid != 0 {
			if seen[s.Fsid] {
				continue
			}
			seen[s.Fsid] = true
		}
		if k == 0 || out.Frsize == 0 {
			out.Bsize, out.Frsize = s.Bsize, frsize(s)
		}
		scale := func(n uint64) uint64 { return rescale(n, frsize(s), out.Frsize) }
		out.Blocks += scale(s.Blocks)
		out.Bfree += scale(s.Bfree)
		out.Bavail += scale(s.Bavail)
		out.Files += s.Files
		out.Ffree += s.Ffree
		out.Favail += s.Favail
		if out.NameMax == 0 || (s.NameMax != 0 && s.NameMax < out.NameMax) {
			out.NameMax = s.NameMax
		}
	}
	if len(all) > 0 && !slices.ContainsFunc(all, func(s remote.StatFS) bool { return s.Fsid == 0 || s.Fsid != all[0].Fsid }) {
		out.Fsid = all[0].Fsid
	}
	return out
}

// rescale converts n blocks of size from into blocks of size to,
// saturating instead of overflowing.
func rescale(n, from, to uint64) uint64 {
	if to == 0 || from == to {
		return n
	}
	hi, lo := bits.Mul64(n, from)
	if hi >= to {
		return math.MaxUint64
	}
	q, _ := bits.Div64(hi, lo, to)
	return q
}
