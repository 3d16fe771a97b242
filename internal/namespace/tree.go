package namespace

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"strings"
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
// readers list it. So a truncated branch, which never reports dir itself,
// leaves nothing to report: that is a failure (errNothingMerged), not a
// truncation, so that callers do not take the tree as listed. A branch
// whose copy of dir has gone since its layout was learned is left out,
// as ReadDir leaves it out. A branch that cannot list trees makes the
// union unable to (ErrTreeUnsupported).
func (u *union) ListTree(ctx context.Context, dir string, depth int, fn func(string, []remote.DirEntry)) error {
	gen := u.layouts.generation()
	l, err := u.layout(ctx, dir)
	if err != nil {
		return err
	}
	trees, gone, err := u.listTrees(ctx, l.in, dir, depth)
	if err != nil && !errors.Is(err, remote.ErrTreeTruncated) {
		return err
	}
	in := l.in &^ gone
	if gone != 0 {
		u.layouts.drop(dir, true)
	}
	if in == 0 {
		return fmt.Errorf("list tree %s: %w", dir, fs.ErrNotExist)
	}
	reported := 0
	u.reportMerged(dir, in, trees, gen, func(d string, ents []remote.DirEntry) {
		reported++
		fn(d, ents)
	})
	if errors.Is(err, remote.ErrTreeTruncated) && reported == 0 {
		return fmt.Errorf("list tree %s: %w", dir, errNothingMerged)
	}
	return err
}

// errNothingMerged: a branch's tree listing stopped at its entry limit,
// and without its listing of the top directory nothing could be merged.
var errNothingMerged = errors.New("a branch's tree listing stopped at its limit before its top directory: nothing merged")

// listTrees runs a tree listing of dir in each branch of in and returns
// what each reported, by branch and directory, and the branches where
// dir has gone. The first other failure than truncation ends them all; a
// truncated listing keeps what it reported and the call returns
// ErrTreeTruncated.
func (u *union) listTrees(ctx context.Context, in set, dir string, depth int) ([]map[string][]remote.DirEntry, set, error) {
	lister := make([]remote.TreeLister, len(u.br))
	for i := range in.all() {
		tl, ok := u.br[i].Remote.(remote.TreeLister)
		if !ok {
			return nil, 0, fmt.Errorf("%s: %w", u.br[i].Name, remote.ErrTreeUnsupported)
		}
		lister[i] = tl
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	trees := make([]map[string][]remote.DirEntry, len(u.br))
	var (
		mu        sync.Mutex // guards first, gone, truncated
		first     error      // the first failure: it ended the others
		gone      set
		truncated bool
		wg        sync.WaitGroup
	)
	for i := range in.all() {
		trees[i] = map[string][]remote.DirEntry{}
		wg.Go(func() {
			err := lister[i].ListTree(ctx, dir, depth, func(d string, ents []remote.DirEntry) {
				trees[i][d] = ents
			})
			if err != nil && !errors.Is(err, remote.ErrTreeTruncated) && ctx.Err() == nil && u.goneFrom(ctx, i, dir) {
				err = nil
				mu.Lock()
				gone = gone.with(i)
				mu.Unlock()
			}
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
		return nil, 0, first
	case truncated:
		return trees, gone, remote.ErrTreeTruncated
	}
	return trees, gone, nil
}

// goneFrom reports whether branch i no longer holds dir as a directory
// (its tree listing failed because of that).
func (u *union) goneFrom(ctx context.Context, i int, dir string) bool {
	a, err := u.br[i].Remote.Lstat(ctx, dir)
	return absent(err) || err == nil && !isDir(a)
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
// then the root itself, whatever the members did (listRoot). Below a
// graft that is down it answers EIO. A member that cannot list trees
// answers ErrTreeUnsupported only when no member can.
func (g *graft) ListTree(ctx context.Context, dir string, depth int, fn func(string, []remote.DirEntry)) error {
	if dir == "" {
		return g.listRoot(ctx, depth, fn)
	}
	ns, rest, err := g.at("list tree", dir)
	if err != nil {
		return err
	}
	if gr, _ := g.route(dir); gr != nil {
		first, _, _ := strings.Cut(dir, "/")
		return g.listMember(ctx, ns, &gr.noTree, rest, depth, first+"/", fn)
	}
	return g.listMember(ctx, ns, &g.baseNoTree, rest, depth, "", fn)
}

// listMember lists dir of ns, the base or a graft's namespace, whose
// noTree flag says it cannot list trees, reporting paths with prefix put
// before them ("NAME/" for a graft; its root then is NAME).
func (g *graft) listMember(ctx context.Context, ns Namespace, noTree *atomic.Bool, dir string, depth int, prefix string, fn func(string, []remote.DirEntry)) error {
	tl, ok := ns.(remote.TreeLister)
	if !ok || noTree.Load() {
		return g.noTree()
	}
	err := tl.ListTree(ctx, dir, depth, func(d string, ents []remote.DirEntry) {
		fn(prefixed(prefix, d), ents)
	})
	if errors.Is(err, remote.ErrTreeUnsupported) {
		noTree.Store(true)
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
	can := func(ns Namespace, noTree *atomic.Bool) bool {
		_, ok := ns.(remote.TreeLister)
		return ok && !noTree.Load()
	}
	for _, gr := range g.grafts {
		if can(gr.ns, &gr.noTree) {
			return errMemberNoTree
		}
	}
	if g.base != nil && can(g.base, &g.baseNoTree) {
		return errMemberNoTree
	}
	return remote.ErrTreeUnsupported
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
		case gr == nil: // not below a graft's name, which shadows it
			fn(d, ents)
		}
	}
	failed := func(err error) {
		mu.Lock()
		errs = append(errs, err)
		mu.Unlock()
	}
	run := func(ns Namespace, noTree *atomic.Bool, depth int, prefix string, fn func(string, []remote.DirEntry)) {
		wg.Go(func() {
			if err := g.listMember(ctx, ns, noTree, "", depth, prefix, fn); err != nil {
				failed(err)
			}
		})
	}
	switch {
	case g.base == nil:
	case isDown(g.base):
		failed(fmt.Errorf("the base: %w", errMemberDown))
	default:
		run(g.base, &g.baseNoTree, depth, "", report)
	}
	if depth > 0 { // a graft's root is one level down
		for _, name := range g.names {
			gr := g.grafts[name]
			if !gr.up() {
				failed(fmt.Errorf("graft %s: %w", name, errMemberDown))
				continue
			}
			run(gr.ns, &gr.noTree, depth-1, name+"/", func(d string, ents []remote.DirEntry) {
				mu.Lock()
				defer mu.Unlock()
				fn(d, ents)
			})
		}
	}
	wg.Wait()
	err := treeErr(errs)
	if errors.Is(err, remote.ErrTreeUnsupported) {
		return err // no member can: nothing was reported
	}
	// What the members that answered reported is complete, and the root
	// is listed as ReadDir lists it, whatever the others did; the error
	// says the tree as a whole was not listed.
	root, rerr := g.rootListing(ctx, baseRoot, haveBase)
	if rerr != nil {
		return cmpOr(err, rerr)
	}
	fn("", root)
	return err
}

// errMemberDown: a member of a graft was down, so its tree was not
// listed; the tree as a whole was not.
var errMemberDown = errors.New("down: its tree was not listed")

// treeErr is the outcome of the members' tree listings: no member able
// to list trees, then a failure, then a member down, then a member
// without tree listings, then truncation.
func treeErr(errs []error) error {
	var failed, down, weak error
	for _, err := range errs {
		switch {
		case errors.Is(err, remote.ErrTreeUnsupported):
			return err
		case errors.Is(err, errMemberDown):
			down = cmpOr(down, err)
		case errors.Is(err, errMemberNoTree):
			weak = err
		case errors.Is(err, remote.ErrTreeTruncated):
			weak = cmpOr(weak, err)
		default:
			failed = cmpOr(failed, err)
		}
	}
	return cmpOr(cmpOr(failed, down), weak)
}
