package namespace

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"sync"
	"syscall"
	"time"

	"sshfsm/internal/remote"
)

// dirLayout says where one directory of a union lives.
type dirLayout struct {
	// in holds the branches whose copy of the directory contributes to
	// it: from the winning copy down to the first branch that holds the
	// name as a non-directory (which shadows every copy below it).
	in set
	// stop is that first shadowing branch, or maxBranches if none is
	// known. A branch above stop that lacks the directory may receive a
	// copy of it and then contributes too.
	stop int
	attr remote.Attr // of the winning copy
}

// copies is what a probe learned about one name in the branches asked.
type copies struct {
	asked set
	has   set           // branches that hold the name
	dirs  set           // branches that hold it as a directory
	attr  []remote.Attr // by branch
}

// winner returns the branch whose copy the union shows, or -1.
func (c *copies) winner() int { return c.has.first() }

// isDir reports whether the union shows the name as a directory.
func (c *copies) isDir() bool { w := c.winner(); return w >= 0 && c.dirs.has(w) }

// dirLayout returns the layout of the name, which must be a directory
// whose branches below the winner were all asked (probeLayout or
// probeAll).
func (c *copies) dirLayout() dirLayout {
	w := c.winner()
	l := dirLayout{stop: maxBranches, attr: c.attr[w]}
	for i := range c.has.all() {
		if !c.dirs.has(i) {
			l.stop = i
			break
		}
		l.in = l.in.with(i)
	}
	return l
}

// probeMode says how much a probe must learn before it answers.
type probeMode int

const (
	probeWinner probeMode = iota // the winning copy
	probeLayout                  // the winner, and if it is a directory every contributing copy
	probeAll                     // every copy
)

// absent reports whether err says that a branch does not hold a path.
func absent(err error) bool {
	return errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR)
}

// probe lstats p in the branches of in, in parallel, and answers as soon
// as mode's question is decided; the other requests are cancelled. An
// error other than absence from a branch that could decide the answer is
// returned: its copy might have won. A branch that fails and is down by
// then counts as absent (wentDown), unless no branch answered at all.
func (u *union) probe(ctx context.Context, in set, p string, mode probeMode) (*copies, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	type answer struct {
		i   int
		a   remote.Attr
		err error
	}
	ch := make(chan answer, in.len())
	for i := range in.all() {
		go func() {
			a, err := u.br[i].Remote.Lstat(ctx, p)
			ch <- answer{i, a, err}
		}()
	}
	c := &copies{asked: in, attr: make([]remote.Attr, len(u.br))}
	errs := make([]error, len(u.br))
	var downErr error // of a branch that went down
	answered := false // by some branch, with attributes or absence
	pending := in
	for pending != 0 {
		var a answer
		select {
		case a = <-ch:
		case <-ctx.Done():
			return nil, fmt.Errorf("lstat %s: %w", p, ctx.Err())
		}
		pending = pending.without(a.i)
		switch {
		case a.err == nil:
			answered = true
			c.has = c.has.with(a.i)
			c.attr[a.i] = a.a
			if a.a.Mode&syscall.S_IFMT == syscall.S_IFDIR {
				c.dirs = c.dirs.with(a.i)
			}
		case absent(a.err):
			answered = true
		case u.wentDown(a.i):
			downErr = cmp.Or(downErr, a.err)
		default:
			errs[a.i] = a.err
		}
		if done, err := c.decided(pending, errs, mode); done {
			if err == nil && !answered && downErr != nil {
				return nil, downErr
			}
			return c, err
		}
	}
	if !answered && downErr != nil {
		return nil, downErr
	}
	return c, nil
}

// decided reports whether the answers so far settle mode's question, and
// with which error.
func (c *copies) decided(pending set, errs []error, mode probeMode) (bool, error) {
	for i := range c.asked.all() {
		switch {
		case errs[i] != nil:
			return true, errs[i]
		case mode == probeAll:
			continue
		case pending.has(i):
			return false, nil
		case !c.has.has(i):
			continue
		case mode == probeWinner || !c.dirs.has(i):
			// The winner, or a non-directory that ends the layout.
			return true, nil
		}
	}
	return pending == 0, nil
}

// layout returns where directory dir lives, from the cache or by probing
// each path component below the deepest one cached. Branches that are
// down are left out.
func (u *union) layout(ctx context.Context, dir string) (dirLayout, error) {
	up := u.upSet()
	if up == 0 {
		return dirLayout{}, u.noBranch(dir)
	}
	if dir == "" {
		return dirLayout{in: up, stop: maxBranches}, nil
	}
	if l, ok := u.layouts.get(dir); ok && l.in&up != 0 {
		l.in &= up
		return l, nil
	}
	gen := u.layouts.generation()
	parent, err := u.layout(ctx, parentOf(dir))
	if err != nil {
		return dirLayout{}, err
	}
	c, err := u.probe(ctx, parent.in, dir, probeLayout)
	if err != nil {
		return dirLayout{}, err
	}
	switch {
	case c.winner() < 0:
		return dirLayout{}, fmt.Errorf("%s: %w", dir, fs.ErrNotExist)
	case !c.isDir():
		return dirLayout{}, fmt.Errorf("%s: %w", dir, syscall.ENOTDIR)
	}
	l := c.dirLayout()
	u.layouts.put(dir, l, gen)
	return l, nil
}

func (u *union) noBranch(p string) error {
	return fmt.Errorf("%s: no branch of the union is up: %w", p, syscall.EIO)
}

// parentOf returns the directory holding p ("" for a name at the root).
func parentOf(p string) string {
	i := strings.LastIndexByte(p, '/')
	if i < 0 {
		return ""
	}
	return p[:i]
}

// layoutCache keeps directory layouts for a short time, so that a walk
// down a tree probes each directory once. Every change the union makes
// drops the layouts it may affect and starts a new generation: a layout
// probed before the change is not stored after it.
type layoutCache struct {
	ttl time.Duration

	// mu guards the fields below.
	mu     sync.Mutex
	gen    uint64
	m      map[string]layoutEntry
	stores int // since the last sweep of expired entries
}

type layoutEntry struct {
	l       dirLayout
	expires time.Time
}

func newLayoutCache(ttl time.Duration) *layoutCache {
	return &layoutCache{ttl: ttl, m: map[string]layoutEntry{}}
}

func (c *layoutCache) generation() uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.gen
}

func (c *layoutCache) get(p string) (dirLayout, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.m[p]
	if !ok || !time.Now().Before(e.expires) {
		return dirLayout{}, false
	}
	return e.l, true
}

// put stores l for p unless the cache changed since generation gen.
func (c *layoutCache) put(p string, l dirLayout, gen uint64) {
	if c.ttl <= 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.gen != gen {
		return
	}
	now := time.Now()
	if c.stores++; c.stores >= 1024 {
		c.stores = 0
		for k, e := range c.m {
			if !now.Before(e.expires) {
				delete(c.m, k)
			}
		}
	}
	c.m[p] = layoutEntry{l, now.Add(c.ttl)}
}

// drop forgets p, and with tree everything below it.
func (c *layoutCache) drop(p string, tree bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gen++
	delete(c.m, p)
	if !tree {
		return
	}
	prefix := p + "/"
	for k := range c.m {
		if p == "" || strings.HasPrefix(k, prefix) {
			delete(c.m, k)
		}
	}
}
