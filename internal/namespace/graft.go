package namespace

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"sort"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"sshfsm/internal/remote"
)

// Graft places namespace NS at the root of a mount under Name.
type Graft struct {
	Name string
	NS   Namespace
}

// graft is the Namespace of NewGraft.
type graft struct {
	base       Namespace // nil: the root holds only the grafts
	grafts     map[string]*grafted
	names      []string // sorted
	health     *healthSet
	root       remote.Attr // reported for a root without base and for grafts that are down
	baseNoTree atomic.Bool // the base answered ErrTreeUnsupported (tree.go)
}

type grafted struct {
	ns     Namespace
	h      remote.Health // nil: always up
	noTree atomic.Bool   // ns answered ErrTreeUnsupported (tree.go)
}

// up asks the namespace's Health now (see branch.up).
func (g *grafted) up() bool { return g.h == nil || g.h.Up() }

var (
	_ Namespace     = (*graft)(nil)
	_ remote.Health = (*graft)(nil)
)

// NewGraft returns base with each graft's namespace appearing as the
// directory NAME at its root; see the package documentation for the rules.
// Closing it closes base and every graft's namespace.
func NewGraft(base Namespace, grafts []Graft) (Namespace, error) {
	if base == nil && len(grafts) == 0 {
		return nil, fmt.Errorf("neither a base nor a graft: %w", syscall.EINVAL)
	}
	now := time.Now()
	g := &graft{base: base, grafts: map[string]*grafted{},
		root: remote.Attr{Mode: syscall.S_IFDIR | 0o555, Atime: now, Mtime: now}}
	var members []remote.Remote
	if base != nil {
		members = append(members, base)
	}
	for _, gr := range grafts {
		if err := ValidName(gr.Name); err != nil {
			return nil, fmt.Errorf("graft name: %w", err)
		}
		if gr.NS == nil {
			return nil, fmt.Errorf("graft %s has no namespace: %w", gr.Name, syscall.EINVAL)
		}
		if g.grafts[gr.Name] != nil {
			return nil, fmt.Errorf("graft %s given twice: %w", gr.Name, syscall.EINVAL)
		}
		h, _ := gr.NS.(remote.Health)
		g.grafts[gr.Name] = &grafted{ns: gr.NS, h: h}
		g.names = append(g.names, gr.Name)
		members = append(members, gr.NS)
	}
	sort.Strings(g.names)
	g.health = newHealthSet(members, nil)
	return g, nil
}

// Up reports whether the base or any graft is up.
func (g *graft) Up() bool { return g.health.Up() }

// Changed returns a channel closed when the set of members that are up
// changes, or when a member union's or graft's own set does.
func (g *graft) Changed() <-chan struct{} { return g.health.Changed() }

// Close closes the base and every graft.
func (g *graft) Close() error {
	g.health.close()
	var errs []error
	if g.base != nil {
		errs = append(errs, g.base.Close())
	}
	for _, name := range g.names {
		if err := g.grafts[name].ns.Close(); err != nil {
			errs = append(errs, fmt.Errorf("close graft %s: %w", name, err))
		}
	}
	return errors.Join(errs...)
}

// route returns the graft that p lies in, with p relative to it, or nil
// and p for the base.
func (g *graft) route(p string) (*grafted, string) {
	first, rest, _ := strings.Cut(p, "/")
	if gr := g.grafts[first]; gr != nil {
		return gr, rest
	}
	return nil, p
}

// at returns the namespace that serves p and p relative to it. The root
// itself is the caller's business. A graft that is down answers EIO
// without being asked; without a base, a name at the root that is not a
// graft does not exist.
func (g *graft) at(op, p string) (Namespace, string, error) {
	gr, rest := g.route(p)
	switch {
	case gr != nil && !gr.up():
		return nil, "", fmt.Errorf("%s %s: the graft is down: %w", op, p, syscall.EIO)
	case gr != nil:
		return gr.ns, rest, nil
	case g.base == nil:
		return nil, "", fmt.Errorf("%s %s: %w", op, p, fs.ErrNotExist)
	}
	return g.base, p, nil
}

// isGraft reports whether p names a graft itself.
func (g *graft) isGraft(p string) bool { return g.grafts[p] != nil }

// creatable returns the namespace where the new name p goes: EEXIST for
// the root and a graft's name; without a base, EACCES at the root.
func (g *graft) creatable(op, p string) (Namespace, string, error) {
	switch {
	case p == "" || g.isGraft(p):
		return nil, "", fmt.Errorf("%s %s: %w", op, p, fs.ErrExist)
	case g.base == nil && !strings.Contains(p, "/"):
		return nil, "", fmt.Errorf("%s %s: the root holds only grafts: %w", op, p, syscall.EACCES)
	}
	return g.at(op, p)
}

// changeable returns the namespace where the existing name p is removed
// or renamed: a graft itself and the root are busy.
func (g *graft) changeable(op, p string) (Namespace, string, error) {
	if p == "" || g.isGraft(p) {
		return nil, "", fmt.Errorf("%s %s: a graft or the root: %w", op, p, syscall.EBUSY)
	}
	return g.at(op, p)
}

func (g *graft) Lstat(ctx context.Context, p string) (remote.Attr, error) {
	return g.stat(ctx, p, false)
}

func (g *graft) Stat(ctx context.Context, p string) (remote.Attr, error) {
	return g.stat(ctx, p, true)
}

func (g *graft) stat(ctx context.Context, p string, follow bool) (remote.Attr, error) {
	if p == "" && (g.base == nil || isDown(g.base)) {
		return g.root, nil
	}
	if gr := g.grafts[p]; gr != nil && !gr.up() {
		return g.root, nil // a graft that is down still shows
	}
	ns, rest, err := g.at("stat", p)
	if err != nil {
		return remote.Attr{}, err
	}
	if follow {
		return ns.Stat(ctx, rest)
	}
	return ns.Lstat(ctx, rest)
}

func (g *graft) Readlink(ctx context.Context, p string) (string, error) {
	ns, rest, err := g.at("readlink", p)
	if err != nil {
		return "", err
	}
	return ns.Readlink(ctx, rest)
}

func (g *graft) ReadDir(ctx context.Context, p string) ([]remote.DirEntry, error) {
	if p == "" {
		return g.readRoot(ctx)
	}
	ns, rest, err := g.at("readdir", p)
	if err != nil {
		return nil, err
	}
	return ns.ReadDir(ctx, rest)
}

// readRoot lists the base's root without the names grafts shadow, and
// every graft with the attributes of its root, all in parallel. A graft
// that is down or does not answer shows with the synthetic root's.
func (g *graft) readRoot(ctx context.Context) ([]remote.DirEntry, error) {
	return g.rootListing(ctx, nil, false)
}

// rootListing is readRoot, given the base's root listing when known (a
// tree listing of the base brought it).
func (g *graft) rootListing(ctx context.Context, baseRoot []remote.DirEntry, known bool) ([]remote.DirEntry, error) {
	type answer struct {
		i   int
		a   remote.Attr
		err error
	}
	ch := make(chan answer, len(g.names))
	for i, name := range g.names {
		go func() {
			gr := g.grafts[name]
			if !gr.up() {
				ch <- answer{i, g.root, nil}
				return
			}
			a, err := gr.ns.Lstat(ctx, "")
			ch <- answer{i, a, err}
		}()
	}
	var out []remote.DirEntry
	if g.base != nil && !(isDown(g.base)) {
		ents, err := baseRoot, error(nil)
		if !known {
			ents, err = g.base.ReadDir(ctx, "")
		}
		if err != nil {
			return nil, err
		}
		for _, e := range ents {
			if !g.isGraft(e.Name) {
				out = append(out, e)
			}
		}
	}
	attrs := make([]remote.Attr, len(g.names))
	for range g.names {
		a := <-ch
		if a.err != nil {
			a.a = g.root
		}
		attrs[a.i] = a.a
	}
	for i, name := range g.names {
		out = append(out, remote.DirEntry{Name: name, Attr: attrs[i]})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// isDown reports whether r has Health and is down.
func isDown(r remote.Remote) bool {
	h, ok := r.(remote.Health)
	return ok && !h.Up()
}

func (g *graft) Open(ctx context.Context, p string, flags int, perm uint32) (remote.File, error) {
	ns, rest, err := g.opening(p, flags)
	if err != nil {
		return nil, err
	}
	return ns.Open(ctx, rest, flags, perm)
}

// opening returns the namespace, and the path there, that an open of p
// with flags opens.
func (g *graft) opening(p string, flags int) (Namespace, string, error) {
	if p == "" {
		if g.base == nil {
			return nil, "", fmt.Errorf("open the root: %w", syscall.EISDIR)
		}
		return g.base, p, nil
	}
	resolve := g.at
	atRoot := g.base == nil && !strings.Contains(p, "/") && !g.isGraft(p)
	if flags&os.O_CREATE != 0 && (flags&os.O_EXCL != 0 || atRoot) {
		resolve = g.creatable
	}
	return resolve("open", p)
}

func (g *graft) Mkdir(ctx context.Context, p string, perm uint32) error {
	ns, rest, err := g.creatable("mkdir", p)
	if err != nil {
		return err
	}
	return ns.Mkdir(ctx, rest, perm)
}

func (g *graft) Symlink(ctx context.Context, target, p string) error {
	ns, rest, err := g.creatable("symlink", p)
	if err != nil {
		return err
	}
	return ns.Symlink(ctx, target, rest)
}

func (g *graft) Remove(ctx context.Context, p string) error {
	ns, rest, err := g.changeable("remove", p)
	if err != nil {
		return err
	}
	return ns.Remove(ctx, rest)
}

func (g *graft) Rmdir(ctx context.Context, p string) error {
	ns, rest, err := g.changeable("rmdir", p)
	if err != nil {
		return err
	}
	return ns.Rmdir(ctx, rest)
}

// Rename stays inside one graft or the base: EXDEV across them, EBUSY
// for a graft itself.
func (g *graft) Rename(ctx context.Context, oldp, newp string, noReplace bool) error {
	ons, orest, err := g.changeable("rename", oldp)
	if err != nil {
		return err
	}
	if g.isGraft(newp) {
		return fmt.Errorf("rename onto %s: a graft: %w", newp, syscall.EBUSY)
	}
	nns, nrest, err := g.creatable("rename", newp)
	if err != nil {
		return err
	}
	if ons != nns {
		return fmt.Errorf("rename %s -> %s: %w", oldp, newp, syscall.EXDEV)
	}
	return ons.Rename(ctx, orest, nrest, noReplace)
}

// Link stays inside one graft or the base: EXDEV across them.
func (g *graft) Link(ctx context.Context, oldp, newp string) error {
	if oldp == "" || g.isGraft(oldp) {
		return fmt.Errorf("link %s: a directory: %w", oldp, syscall.EPERM)
	}
	ons, orest, err := g.at("link", oldp)
	if err != nil {
		return err
	}
	nns, nrest, err := g.creatable("link", newp)
	if err != nil {
		return err
	}
	if ons != nns {
		return fmt.Errorf("link %s -> %s: %w", oldp, newp, syscall.EXDEV)
	}
	return ons.Link(ctx, orest, nrest)
}

func (g *graft) SetAttr(ctx context.Context, p string, a remote.SetAttr) error {
	if p == "" && g.base == nil {
		return fmt.Errorf("setattr of the root: it holds only grafts: %w", syscall.EPERM)
	}
	if p == "" {
		return g.base.SetAttr(ctx, p, a)
	}
	ns, rest, err := g.at("setattr", p)
	if err != nil {
		return err
	}
	return ns.SetAttr(ctx, rest, a)
}

// StatFS of the root adds up the base and the grafts that are up, each
// distinct filesystem once.
func (g *graft) StatFS(ctx context.Context, p string) (remote.StatFS, error) {
	if p != "" {
		ns, rest, err := g.at("statfs", p)
		if err != nil {
			return remote.StatFS{}, err
		}
		return ns.StatFS(ctx, rest)
	}
	var members []Namespace
	if g.base != nil && !isDown(g.base) {
		members = append(members, g.base)
	}
	for _, name := range g.names {
		if gr := g.grafts[name]; gr.up() {
			members = append(members, gr.ns)
		}
	}
	type answer struct {
		i   int
		s   remote.StatFS
		err error
	}
	ch := make(chan answer, len(members))
	for i, m := range members {
		go func() {
			s, err := m.StatFS(ctx, "")
			ch <- answer{i, s, err}
		}()
	}
	got := make([]*remote.StatFS, len(members))
	var firstErr error
	for range members {
		a := <-ch
		if a.err != nil {
			firstErr = cmpOr(firstErr, a.err)
			continue
		}
		got[a.i] = &a.s
	}
	var all []remote.StatFS
	for _, s := range got {
		if s != nil {
			all = append(all, *s)
		}
	}
	if len(all) == 0 {
		return remote.StatFS{}, fmt.Errorf("statfs: no member answered: %w", cmpOr(firstErr, syscall.EIO))
	}
	return sumStatFS(all), nil
}

func cmpOr(a, b error) error {
	if a != nil {
		return a
	}
	return b
}
