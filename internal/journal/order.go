package journal

import (
	"path"
	"slices"
	"strings"
)

// Order tells a drainer which pending changes may go to the server now.
// A change waits for every earlier pending change of the same host and
// branch whose path (either of its paths) is the same as one of its own,
// or a directory above it, or below it: a create waits for the mkdir of
// its directory and for a rename that made or moved it; a rename of a
// directory, an rmdir, a setattr of a directory wait for the changes
// inside it. Changes of different hosts or branches, and of unrelated
// paths, go in parallel. It is pure bookkeeping, no I/O; it is not safe
// for concurrent use.
type Order struct {
	trees   map[tree]*node
	pending map[uint64]*item
	ready   []*item // not taken, nothing to wait for
	adds    uint64  // Add calls so far: marks an item already counted by one
}

type tree struct{ host, branch string }

// item is a change in the Order.
type item struct {
	c       *Change
	waits   int     // pending changes it waits for
	waiters []*item // pending changes waiting for it
	nodes   []*node // where it is listed: its path and NewPath
	taken   bool
	mark    uint64 // the Add that last counted it as a dependency
}

// node is one name in a tree of paths, with the pending changes of that
// exact path, oldest first.
type node struct {
	parent *node
	name   string
	kids   map[string]*node
	items  []*item
}

// NewOrder returns an empty Order.
func NewOrder() *Order {
	return &Order{trees: map[tree]*node{}, pending: map[uint64]*item{}}
}

// Len is the number of changes added and not done.
func (o *Order) Len() int { return len(o.pending) }

// Add adds a change; changes must be added in the order of their Seq.
// The Order keeps c, which must not change until it is done.
func (o *Order) Add(c *Change) {
	o.adds++
	it := &item{c: c, mark: o.adds}
	root := o.root(c.Host, c.Branch, true)
	for _, p := range changePaths(c) {
		n := root.walk(p, true)
		for _, dep := range related(n) {
			if dep.mark != o.adds {
				dep.mark = o.adds
				dep.waiters = append(dep.waiters, it)
				it.waits++
			}
		}
		if !slices.Contains(it.nodes, n) {
			n.items = append(n.items, it)
			it.nodes = append(it.nodes, n)
		}
	}
	o.pending[c.Seq] = it
	if it.waits == 0 {
		o.ready = append(o.ready, it)
	}
}

// Next hands out every change that may be sent now and was not handed out
// before, in order of Seq. Each must come back through Done.
func (o *Order) Next() []*Change {
	slices.SortFunc(o.ready, func(a, b *item) int { return cmpSeq(a.c.Seq, b.c.Seq) })
	out := make([]*Change, len(o.ready))
	for i, it := range o.ready {
		it.taken = true
		out[i] = it.c
	}
	o.ready = o.ready[:0]
	return out
}

// Done removes a change handed out by Next: it is on the server. The
// changes that waited only for it become ready. It reports false for a
// change not handed out.
func (o *Order) Done(seq uint64) bool {
	it := o.pending[seq]
	if it == nil || !it.taken {
		return false
	}
	delete(o.pending, seq)
	for _, n := range it.nodes {
		// The changes of one path are done in order: it is the first.
		if n.items[0] == it {
			n.items = n.items[1:]
		} else {
			n.items = slices.DeleteFunc(n.items, func(x *item) bool { return x == it })
		}
		n.prune()
	}
	if root := o.trees[tree{it.c.Host, it.c.Branch}]; root != nil && len(root.kids) == 0 && len(root.items) == 0 {
		delete(o.trees, tree{it.c.Host, it.c.Branch})
	}
	for _, w := range it.waiters {
		if w.waits--; w.waits == 0 {
			o.ready = append(o.ready, w)
		}
	}
	return true
}

// Waits returns the pending changes a change of p (on host and branch)
// would wait for, in order of Seq: what an fsync of p waits to see done,
// since each of them is done only after all it waits for.
func (o *Order) Waits(host, branch, p string) []uint64 {
	root := o.root(host, branch, false)
	if root == nil {
		return nil
	}
	n := root.walk(p, false)
	var deps []*item
	if n != nil {
		deps = related(n)
	} else {
		// The path has no node: only its deepest listed directory and
		// those above it can hold changes related to it.
		n = root.deepest(p)
		for a := n; a != nil; a = a.parent {
			if len(a.items) > 0 {
				deps = append(deps, a.items[len(a.items)-1])
			}
		}
	}
	seqs := make([]uint64, 0, len(deps))
	for _, d := range deps {
		if !slices.Contains(seqs, d.c.Seq) {
			seqs = append(seqs, d.c.Seq)
		}
	}
	slices.Sort(seqs)
	return seqs
}

func cmpSeq(a, b uint64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// changePaths are the paths a change touches. A symlink's target is text,
// not a path of the tree.
func changePaths(c *Change) []string {
	if (c.Op == Rename || c.Op == Link) && c.NewPath != "" {
		return []string{c.Path, c.NewPath}
	}
	return []string{c.Path}
}

func (o *Order) root(host, branch string, create bool) *node {
	t := tree{host, branch}
	r := o.trees[t]
	if r == nil && create {
		r = &node{}
		o.trees[t] = r
	}
	return r
}

// components splits a path of the mount into its names.
func components(p string) []string {
	p = path.Clean("/" + p)
	if p == "/" {
		return nil
	}
	return strings.Split(p[1:], "/")
}

// walk finds the node of p, making the missing ones when create is set.
func (n *node) walk(p string, create bool) *node {
	for _, name := range components(p) {
		k := n.kids[name]
		if k == nil {
			if !create {
				return nil
			}
			if n.kids == nil {
				n.kids = map[string]*node{}
			}
			k = &node{parent: n, name: name}
			n.kids[name] = k
		}
		n = k
	}
	return n
}

// deepest is the deepest node on the way to p.
func (n *node) deepest(p string) *node {
	for _, name := range components(p) {
		k := n.kids[name]
		if k == nil {
			break
		}
		n = k
	}
	return n
}

// related returns the latest pending change of n, of each directory above
// it and of each path below it: a new change of n waits for those, and
// through them, since the changes of one path wait for each other, for
// every earlier change it must follow.
func related(n *node) []*item {
	var out []*item
	for a := n.parent; a != nil; a = a.parent {
		if len(a.items) > 0 {
			out = append(out, a.items[len(a.items)-1])
		}
	}
	var below func(*node)
	below = func(m *node) {
		if len(m.items) > 0 {
			out = append(out, m.items[len(m.items)-1])
		}
		for _, k := range m.kids {
			below(k)
		}
	}
	below(n)
	return out
}

// prune removes n and the directories above it that hold no change and
// lead to none.
func (n *node) prune() {
	for n.parent != nil && len(n.items) == 0 && len(n.kids) == 0 {
		delete(n.parent.kids, n.name)
		n = n.parent
	}
}
