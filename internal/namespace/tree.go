package namespace

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"sshfsm/internal/remote"
)

var (
	_ remote.TreeLister = single{}
	_ remote.TreeLister = (*union)(nil)
)

// ListTree lists a subtree in one request when the branch can.
func (s single) ListTree(ctx context.Context, dir string, depth int, fn func(string, []remote.DirEntry)) error {
	if tl, ok := s.Remote.(remote.TreeLister); ok {
		return tl.ListTree(ctx, dir, depth, fn)
	}
	return remote.ErrTreeUnsupported
}

// ListTree lists a subtree of the union with one tree listing per
// contributing branch, run in parallel, then merges the copies by the
// rules of ReadDir, from dir down (a directory's branches follow from its
// parent's merged listing), reporting children before parents. Nothing is
// reported before every branch has answered: a directory's branches are
// known only once its parent is, and each branch reports the parent last.
//
// A directory some contributing branch did not report (unreadable there,
// beyond a truncated listing) is not reported, nor anything below it: its
// readers list it. A branch that cannot list trees makes the union unable
// to (ErrTreeUnsupported).
func (u *union) ListTree(ctx context.Context, dir string, depth int, fn func(string, []remote.DirEntry)) error {
	gen := u.layouts.generation()
	l, err := u.layout(ctx, dir)
	if err != nil {
		return err
	}
	trees, err := u.listTrees(ctx, l.in, dir, depth)
	if err != nil && !errors.Is(err, remote.ErrTreeTruncated) {
		return err
	}
	u.reportMerged(dir, l.in, trees, gen, fn)
	return err
}

// listTrees runs a tree listing of dir in each branch of in and returns
// what each reported, by branch and directory. The first failure other
// than truncation ends them all; a truncated listing keeps what it
// reported and the call returns ErrTreeTruncated.
func (u *union) listTrees(ctx context.Context, in set, dir string, depth int) ([]map[string][]remote.DirEntry, error) {
	lister := make([]remote.TreeLister, len(u.br))
	for i := range in.all() {
		tl, ok := u.br[i].Remote.(remote.TreeLister)
		if !ok {
			return nil, fmt.Errorf("%s: %w", u.br[i].Name, remote.ErrTreeUnsupported)
		}
		lister[i] = tl
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	trees := make([]map[string][]remote.DirEntry, len(u.br))
	var (
		mu        sync.Mutex // guards first, truncated
		first     error      // the first failure: it ended the others
		truncated bool
		wg        sync.WaitGroup
	)
	for i := range in.all() {
		trees[i] = map[string][]remote.DirEntry{}
		wg.Go(func() {
			err := lister[i].ListTree(ctx, dir, depth, func(d string, ents []remote.DirEntry) {
				trees[i][d] = ents
			})
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
			case errors.Is(err, remote.ErrTreeTruncated):
				truncated = true
			case first == nil:
				first = fmt.Errorf("%s: %w", u.br[i].Name, err)
				cancel()
			}
		})
	}
	wg.Wait()
	switch {
	case first != nil:
		return nil, first
	case truncated:
		return trees, remote.ErrTreeTruncated
	}
	return trees, nil
}

// reportMerged merges directory p, whose contributing branches are in,
// from the branches' tree listings, reports its subdirectories (each with
// the branches merge found for it), then p itself.
func (u *union) reportMerged(p string, in set, trees []map[string][]remote.DirEntry, gen uint64, fn func(string, []remote.DirEntry)) {
	lists := make([][]remote.DirEntry, len(u.br))
	for i := range in.all() {
		l, ok := trees[i][p]
		if !ok {
			return
		}
		if l == nil {
			l = []remote.DirEntry{}
		}
		lists[i] = l
	}
	type sub struct {
		name string
		in   set
	}
	var subs []sub
	merged := u.mergeWith(p, lists, gen, func(name string, l dirLayout) {
		subs = append(subs, sub{name, l.in})
	})
	for _, s := range subs {
		u.reportMerged(join(p, s.name), s.in, trees, gen, fn)
	}
	fn(p, merged)
}

var _ remote.TreeLister = (*graft)(nil)

// errMemberNoTree stands for ErrTreeUnsupported from one member of a
// graft while others can list trees: it must not turn tree listings off
// for the whole mount.
var errMemberNoTree = errors.New("this part of the mount cannot list trees in one request")

// ListTree lists a subtree of the base or of one graft through it; the
// root lists every member's tree (a graft's one level less deep, as its
// root is one level down), without the base's names that grafts shadow,
// then the root itself. A graft that is down is left out; it answers EIO
// inside. A member that cannot list trees answers ErrTreeUnsupported only
// when no member can.
func (g *graft) ListTree(ctx context.Context, dir string, depth int, fn func(string, []remote.DirEntry)) error {
	if dir == "" {
		return g.listRoot(ctx, depth, fn)
	}
	gr, _ := g.route(dir)
	ns, rest, err := g.at("list tree", dir)
	if err != nil {
		return err
	}
	prefix := ""
	if gr != nil {
		prefix = dir[:len(dir)-len(rest)]
		if rest == "" {
			prefix += "/"
		}
	}
	return g.member(ns).list(ctx, rest, depth, prefix, fn, g)
}

// member returns the tree-listing state of ns, the base or a graft's.
func (g *graft) member(ns Namespace) *treeMember {
	g.treeOnce.Do(func() {
		g.trees = map[Namespace]*treeMember{}
		if g.base != nil {
			g.trees[g.base] = &treeMember{ns: g.base}
		}
		for _, name := range g.names {
			ns := g.grafts[name].ns
			g.trees[ns] = &treeMember{ns: ns}
		}
	})
	return g.trees[ns]
}

// treeMember is a member namespace of a graft, as a tree lister.
type treeMember struct {
	ns     Namespace
	noTree atomic.Bool // it answered ErrTreeUnsupported
}

// list lists dir of the member, reporting paths with prefix put before
// them ("NAME/" for a graft; the member's root then is NAME).
func (m *treeMember) list(ctx context.Context, dir string, depth int, prefix string, fn func(string, []remote.DirEntry), g *graft) error {
	tl, ok := m.ns.(remote.TreeLister)
	if !ok || m.noTree.Load() {
		return g.noTree()
	}
	err := tl.ListTree(ctx, dir, depth, func(d string, ents []remote.DirEntry) {
		fn(prefixed(prefix, d), ents)
	})
	if errors.Is(err, remote.ErrTreeUnsupported) {
		m.noTree.Store(true)
		return g.noTree()
	}
	return err
}

// prefixed puts a member's path below the graft's name, if any: prefix
// is "" (the base) or "NAME/".
func prefixed(prefix, p string) string {
	switch {
	case prefix == "":
		return p
	case p == "":
		return prefix[:len(prefix)-1]
	}
	return prefix + p
}

// noTree is the error of a member that cannot list trees: ErrTreeUnsupported
// once no member can, errMemberNoTree before.
func (g *graft) noTree() error {
	for _, name := range g.names {
		if !g.member(g.grafts[name].ns).cannot() {
			return errMemberNoTree
		}
	}
	if g.base != nil && !g.member(g.base).cannot() {
		return errMemberNoTree
	}
	return remote.ErrTreeUnsupported
}

func (m *treeMember) cannot() bool {
	_, ok := m.ns.(remote.TreeLister)
	return !ok || m.noTree.Load()
}

// listRoot lists the trees of the base and of every graft that is up in
// parallel, each report passed on under one lock, then the root.
func (g *graft) listRoot(ctx context.Context, depth int, fn func(string, []remote.DirEntry)) error {
	var (
		mu       sync.Mutex // guards fn, baseRoot and errs
		baseRoot []remote.DirEntry
		haveBase bool
		errs     []error
		wg       sync.WaitGroup
	)
	report := func(d string, ents []remote.DirEntry) {
		mu.Lock()
		defer mu.Unlock()
		switch gr, _ := g.route(d); {
		case d == "":
			baseRoot, haveBase = ents, true
		case gr == nil: // below a graft's name: shadowed
			fn(d, ents)
		}
	}
	run := func(ns Namespace, depth int, prefix string, fn func(string, []remote.DirEntry)) {
		wg.Go(func() {
			if err := g.member(ns).list(ctx, "", depth, prefix, fn, g); err != nil {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
			}
		})
	}
	if g.base != nil && !isDown(g.base) {
		run(g.base, depth, "", report)
	}
	if depth > 0 { // a graft's root is one level down
		for _, name := range g.names {
			if gr := g.grafts[name]; gr.up() {
				run(gr.ns, depth-1, name+"/", func(d string, ents []remote.DirEntry) {
					mu.Lock()
					defer mu.Unlock()
					fn(d, ents)
				})
			}
		}
	}
	wg.Wait()
	err := treeErr(errs)
	if err != nil && !errors.Is(err, remote.ErrTreeTruncated) && !errors.Is(err, errMemberNoTree) {
		return err
	}
	root, rerr := g.rootListing(ctx, baseRoot, haveBase)
	if rerr != nil {
		return rerr
	}
	fn("", root)
	return err
}

// treeErr is the outcome of the members' tree listings: a failure first,
// then a member without tree listings, then truncation.
func treeErr(errs []error) error {
	var weak error
	for _, err := range errs {
		switch {
		case errors.Is(err, remote.ErrTreeUnsupported):
			return err // no member can: nothing was reported
		case errors.Is(err, errMemberNoTree):
			weak = err
		case errors.Is(err, remote.ErrTreeTruncated):
			weak = cmpOr(weak, err)
		default:
			return err
		}
	}
	return weak
}
