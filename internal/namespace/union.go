package namespace

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"slices"
	"syscall"
	"time"

	"sshfsm/internal/remote"
)

// Branch is one directory tree of a union.
type Branch struct {
	Name     string // for errors and logs: "host1:/dir"
	Remote   remote.Remote
	ReadOnly bool // never written: creates avoid it, changes to its names fail with EROFS
}

// UnionOptions shape a union.
type UnionOptions struct {
	Create Policy // which branch receives new names; the zero value is EPFF
	Logger *slog.Logger
	// LayoutTTL is how long what was learned about which branches hold a
	// directory is reused (the union's own changes keep it current);
	// 0 means DefaultLayoutTTL, a negative value turns it off.
	LayoutTTL time.Duration
	// StatFSTTL is how long a branch's free space is reused by the mfs and
	// lfs policies and by StatFS; 0 means DefaultStatFSTTL.
	StatFSTTL time.Duration
}

const (
	DefaultLayoutTTL = 2 * time.Second
	DefaultStatFSTTL = 2 * time.Second
)

// union is the Namespace of NewUnion. It holds no lock of its own: the
// caches and the health set guard themselves.
type union struct {
	br      []branch
	policy  Policy
	log     *slog.Logger
	layouts *layoutCache
	space   *spaceCache
	health  *healthSet
}

type branch struct {
	Branch
	h remote.Health // nil: always up
}

// up asks the branch's Health now, not the health set, which learns of a
// change a moment later: a call sent to a host that is down would wait for
// its reconnect.
func (b *branch) up() bool { return b.h == nil || b.h.Up() }

var (
	_ Namespace     = (*union)(nil)
	_ remote.Health = (*union)(nil)
)

// NewUnion layers branches, the first the highest; see the package
// documentation for the rules. Closing the union closes the branches.
func NewUnion(branches []Branch, o UnionOptions) (Namespace, error) {
	if len(branches) == 0 || len(branches) > maxBranches {
		return nil, fmt.Errorf("a union has 1 to %d branches, not %d: %w", maxBranches, len(branches), syscall.EINVAL)
	}
	if o.Create < EPFF || o.Create > Rand {
		return nil, fmt.Errorf("create policy %v: %w", o.Create, syscall.EINVAL)
	}
	u := &union{policy: o.Create, log: o.Logger}
	if u.log == nil {
		u.log = slog.New(slog.DiscardHandler)
	}
	layoutTTL, statTTL := o.LayoutTTL, o.StatFSTTL
	if layoutTTL == 0 {
		layoutTTL = DefaultLayoutTTL
	}
	if statTTL == 0 {
		statTTL = DefaultStatFSTTL
	}
	u.layouts, u.space = newLayoutCache(layoutTTL), newSpaceCache(statTTL)
	rs := make([]remote.Remote, len(branches))
	for i, b := range branches {
		if b.Remote == nil {
			return nil, fmt.Errorf("branch %d (%s) has no remote: %w", i, b.Name, syscall.EINVAL)
		}
		h, _ := b.Remote.(remote.Health)
		u.br = append(u.br, branch{Branch: b, h: h})
		rs[i] = b.Remote
	}
	u.health = newHealthSet(rs, u.healthChanged)
	return u, nil
}

// healthChanged forgets what was learned while other branches were up.
func (u *union) healthChanged(old, cur set) {
	u.layouts.drop("", true)
	u.space.drop()
	for i := range u.br {
		switch {
		case old.has(i) && !cur.has(i):
			u.log.Warn("union branch is down; its names are hidden", "branch", u.br[i].Name)
		case !old.has(i) && cur.has(i):
			u.log.Info("union branch is up again", "branch", u.br[i].Name)
		}
	}
}

// upSet returns the branches that can answer now.
func (u *union) upSet() set {
	var s set
	for i := range u.br {
		if u.br[i].up() {
			s = s.with(i)
		}
	}
	return s
}

// Up reports whether any branch is up.
func (u *union) Up() bool { return u.health.Up() }

// Changed returns a channel closed when the set of branches that are up
// changes.
func (u *union) Changed() <-chan struct{} { return u.health.Changed() }

// Close closes every branch.
func (u *union) Close() error {
	u.health.close()
	var errs []error
	for _, b := range u.br {
		if err := b.Remote.Close(); err != nil {
			errs = append(errs, fmt.Errorf("close %s: %w", b.Name, err))
		}
	}
	return errors.Join(errs...)
}

// find returns the branch whose copy of p the union shows, with its
// attributes.
func (u *union) find(ctx context.Context, p string) (int, remote.Attr, error) {
	if p == "" {
		up := u.upSet()
		if up == 0 {
			return -1, remote.Attr{}, u.noBranch(p)
		}
		w := up.first()
		a, err := u.br[w].Remote.Lstat(ctx, p)
		return w, a, err
	}
	l, err := u.layout(ctx, parentOf(p))
	if err != nil {
		return -1, remote.Attr{}, err
	}
	c, err := u.probe(ctx, l.in, p, probeWinner)
	if err != nil {
		return -1, remote.Attr{}, err
	}
	w := c.winner()
	if w < 0 {
		return -1, remote.Attr{}, fmt.Errorf("%s: %w", p, fs.ErrNotExist)
	}
	return w, c.attr[w], nil
}

// origin returns the branch whose copy of p the union shows. When a
// single branch holds p's directory (as last learnt), that is the one,
// and no branch is asked.
func (u *union) origin(ctx context.Context, p string) (int, error) {
	if p != "" {
		l, err := u.layout(ctx, parentOf(p))
		if err != nil {
			return -1, err
		}
		if l.in.len() == 1 {
			return l.in.first(), nil
		}
	}
	w, _, err := u.find(ctx, p)
	return w, err
}

func (u *union) Lstat(ctx context.Context, p string) (remote.Attr, error) {
	_, a, err := u.find(ctx, p)
	return a, err
}

// Stat follows a symlink inside the branch that holds it.
func (u *union) Stat(ctx context.Context, p string) (remote.Attr, error) {
	w, a, err := u.find(ctx, p)
	if err != nil || a.Mode&syscall.S_IFMT != syscall.S_IFLNK {
		return a, err
	}
	return u.br[w].Remote.Stat(ctx, p)
}

func (u *union) Readlink(ctx context.Context, p string) (string, error) {
	w, _, err := u.find(ctx, p)
	if err != nil {
		return "", err
	}
	return u.br[w].Remote.Readlink(ctx, p)
}

// ReadDir lists dir in every branch it lives in, in parallel: each name
// once, with the attributes of its winning copy.
func (u *union) ReadDir(ctx context.Context, dir string) ([]remote.DirEntry, error) {
	gen := u.layouts.generation()
	l, err := u.layout(ctx, dir)
	if err != nil {
		return nil, err
	}
	lists, err := u.readDirs(ctx, l.in, dir)
	if err != nil {
		return nil, err
	}
	if !slices.ContainsFunc(lists, func(l []remote.DirEntry) bool { return l != nil }) {
		// Gone from every branch since its layout was learned.
		u.layouts.drop(dir, true)
		return nil, fmt.Errorf("readdir %s: %w", dir, fs.ErrNotExist)
	}
	return u.merge(dir, lists, gen), nil
}

// readDirs lists dir in the branches of in, by branch; a branch where dir
// has gone contributes nil, and so does one that fails and is down by then
// (see wentDown), unless no branch answered at all. The first other error
// ends the call at once.
func (u *union) readDirs(ctx context.Context, in set, dir string) ([][]remote.DirEntry, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	type answer struct {
		i    int
		ents []remote.DirEntry
		err  error
	}
	ch := make(chan answer, in.len())
	for i := range in.all() {
		go func() {
			ents, err := u.br[i].Remote.ReadDir(ctx, dir)
			ch <- answer{i, ents, err}
		}()
	}
	lists := make([][]remote.DirEntry, len(u.br))
	var downErr error // of a branch that went down
	answered := false // by some branch, with a listing or absence
	for range in.len() {
		var a answer
		select {
		case a = <-ch:
		case <-ctx.Done():
			return nil, fmt.Errorf("readdir %s: %w", dir, ctx.Err())
		}
		switch {
		case a.err == nil:
			lists[a.i] = a.ents
			if lists[a.i] == nil {
				lists[a.i] = []remote.DirEntry{}
			}
			answered = true
		case absent(a.err):
			answered = true
		case u.wentDown(a.i):
			downErr = cmp.Or(downErr, a.err)
		default:
			return nil, a.err
		}
	}
	if downErr != nil && !answered {
		return nil, downErr
	}
	return lists, nil
}

// wentDown reports whether branch i, whose call failed, is down now: a
// host that failed its first dial (delay_connect) or was lost during the
// call. Its failure then counts as absence, as if it had been down before
// the call, rather than failing the call that found it down.
func (u *union) wentDown(i int) bool { return !u.br[i].up() }

// StatFS adds up the filesystems of the branches that are up, each
// distinct filesystem once.
func (u *union) StatFS(ctx context.Context, p string) (remote.StatFS, error) {
	up := u.upSet()
	if up == 0 {
		return remote.StatFS{}, u.noBranch(p)
	}
	var want []int
	for i := range up.all() {
		want = append(want, i)
	}
	got := u.space.statfs(ctx, u, want)
	if len(got) == 0 {
		if err := ctx.Err(); err != nil {
			return remote.StatFS{}, fmt.Errorf("statfs: %w", err)
		}
		return remote.StatFS{}, fmt.Errorf("statfs: no branch answered: %w", syscall.EIO)
	}
	all := make([]remote.StatFS, 0, len(got))
	for _, i := range want {
		if s, ok := got[i]; ok {
			all = append(all, s)
		}
	}
	return sumStatFS(all), nil
}

func join(dir, name string) string {
	if dir == "" {
		return name
	}
	return dir + "/" + name
}
