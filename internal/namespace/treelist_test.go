package namespace_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"

	"sshfsm/internal/namespace"
	"sshfsm/internal/remote"
)

// lister adds tree listings to a remote: each directory's listing is the
// remote's ReadDir of it, reported children before parents, as a host's
// tree listing reports them. Directories in skip are not reported (as
// if unreadable); after limit reports (when > 0) it stops with
// ErrTreeTruncated; fail makes the whole listing fail.
type lister struct {
	remote.Remote
	skip  map[string]bool
	limit int
	fail  error

	mu    sync.Mutex // guards calls
	calls []string
}

func (l *lister) ListTree(ctx context.Context, dir string, depth int, fn func(string, []remote.DirEntry)) error {
	l.mu.Lock()
	l.calls = append(l.calls, fmt.Sprintf("%s@%d", dir, depth))
	l.mu.Unlock()
	if l.fail != nil {
		return l.fail
	}
	reported := 0
	var walk func(d string, level int) error
	walk = func(d string, level int) error {
		ents, err := l.ReadDir(ctx, d)
		if err != nil {
			return err
		}
		if level < depth {
			for _, e := range ents {
				if e.Attr.Mode&syscall.S_IFMT == syscall.S_IFDIR && e.Name != "." && e.Name != ".." {
					if err := walk(joinPath(d, e.Name), level+1); err != nil {
						return err
					}
				}
			}
		}
		if l.skip[d] {
			return nil
		}
		if l.limit > 0 && reported == l.limit {
			return remote.ErrTreeTruncated
		}
		reported++
		fn(d, ents)
		return nil
	}
	return walk(dir, 0)
}

func joinPath(dir, name string) string {
	if dir == "" {
		return name
	}
	return dir + "/" + name
}

// randomTree plants a random tree of directories and files whose names
// come from a small pool, so that branches overlap: files shadow
// directories and directories merge.
func randomTree(t *testing.T, r *rand.Rand, dir string, branch int) {
	var spec []string
	var grow func(p string, level int)
	grow = func(p string, level int) {
		for k := range 5 {
			if r.IntN(3) == 0 {
				continue
			}
			name := joinPath(p, fmt.Sprintf("n%d", k))
			if level < 3 && r.IntN(2) == 0 {
				spec = append(spec, name+"/")
				grow(name, level+1)
			} else {
				spec = append(spec, fmt.Sprintf("%s=b%d", name, branch))
			}
		}
	}
	grow("", 0)
	spec = append(spec, "top/") // never empty
	plant(t, dir, spec...)
}

// merged lists the union's directories at most depth levels below dir
// with ReadDir, as a walker without tree listings sees them.
func merged(t *testing.T, ns namespace.Namespace, dir string, depth int) map[string][]remote.DirEntry {
	out := map[string][]remote.DirEntry{}
	var walk func(d string, level int)
	walk = func(d string, level int) {
		ents, err := ns.ReadDir(ctxT(t), d)
		if err != nil {
			t.Fatalf("readdir %q: %v", d, err)
		}
		out[d] = ents
		if level == depth {
			return
		}
		for _, e := range ents {
			if e.Attr.Mode&syscall.S_IFMT == syscall.S_IFDIR {
				walk(joinPath(d, e.Name), level+1)
			}
		}
	}
	walk(dir, 0)
	return out
}

// collect runs ListTree and returns what it reported, checking that no
// directory is reported twice and that children come before parents.
func collect(t *testing.T, tl remote.TreeLister, dir string, depth int) (map[string][]remote.DirEntry, error) {
	t.Helper()
	got := map[string][]remote.DirEntry{}
	var order []string
	err := tl.ListTree(ctxT(t), dir, depth, func(d string, ents []remote.DirEntry) {
		if _, twice := got[d]; twice {
			t.Errorf("%q reported twice", d)
		}
		got[d] = slices.Clone(ents)
		order = append(order, d)
	})
	for i, d := range order {
		for _, later := range order[i+1:] {
			if d == "" || strings.HasPrefix(later, d+"/") {
				t.Errorf("%q reported before %q, below it", d, later)
			}
		}
	}
	return got, err
}

func sameListing(a, b []remote.DirEntry) bool {
	return slices.EqualFunc(a, b, func(x, y remote.DirEntry) bool {
		return x.Name == y.Name && x.Attr.Mode == y.Attr.Mode && x.Attr.Size == y.Attr.Size
	})
}

// A union's tree listing reports exactly the merged directories a walk
// with ReadDir finds, within depth, each with the same listing, children
// before parents, with one tree listing per contributing branch.
func TestUnionListTreeMatchesReadDir(t *testing.T) {
	for seed := range uint64(25) {
		r := rand.New(rand.NewPCG(seed, 7))
		n := 1 + r.IntN(3)
		var plain, listed []namespace.Branch
		var listers []*lister
		for b := range n {
			dir := t.TempDir()
			randomTree(t, r, dir, b)
			rem := dial(t, fmt.Sprintf("b%d", b), dir, false)
			l := &lister{Remote: rem}
			listers = append(listers, l)
			plain = append(plain, namespace.Branch{Name: fmt.Sprintf("b%d", b), Remote: rem})
			listed = append(listed, namespace.Branch{Name: fmt.Sprintf("b%d", b), Remote: l})
		}
		ref, err := namespace.NewUnion(plain, namespace.UnionOptions{LayoutTTL: -1})
		if err != nil {
			t.Fatal(err)
		}
		u, err := namespace.NewUnion(listed, namespace.UnionOptions{})
		if err != nil {
			t.Fatal(err)
		}
		depth := 1 + r.IntN(4)
		want := merged(t, ref, "", depth)
		got, err := collect(t, u.(remote.TreeLister), "", depth)
		if err != nil {
			t.Fatalf("seed %d: ListTree: %v", seed, err)
		}
		for d, w := range want {
			if !sameListing(got[d], w) {
				t.Errorf("seed %d, depth %d: %q reported %v, ReadDir gives %v", seed, depth, d, names(got[d]), names(w))
			}
		}
		for d := range got {
			if _, ok := want[d]; !ok {
				t.Errorf("seed %d: %q reported but not a merged directory within depth %d", seed, d, depth)
			}
		}
		for b, l := range listers {
			if len(l.calls) > 1 {
				t.Errorf("seed %d: branch %d listed %d times: %q", seed, b, len(l.calls), l.calls)
			}
		}
		u.Close()
	}
}

// A directory one contributing branch did not report (unreadable there,
// or past a truncated listing) is left out with its subtree, for its
// readers to list; the rest is reported.
func TestUnionListTreeLeavesOutUnreported(t *testing.T) {
	d0, d1 := t.TempDir(), t.TempDir()
	plant(t, d0, "a/x/deep=0", "b/y=0", "c/")
	plant(t, d1, "a/x/other=1", "b/z=1")
	l0 := &lister{Remote: dial(t, "b0", d0, false)}
	l1 := &lister{Remote: dial(t, "b1", d1, false), skip: map[string]bool{"a": true}}
	u, err := namespace.NewUnion([]namespace.Branch{{Name: "b0", Remote: l0}, {Name: "b1", Remote: l1}}, namespace.UnionOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer u.Close()
	got, err := collect(t, u.(remote.TreeLister), "", 5)
	if err != nil {
		t.Fatal(err)
	}
	var dirs []string
	for d := range got {
		dirs = append(dirs, d)
	}
	slices.Sort(dirs)
	if want := []string{"", "b", "c"}; !slices.Equal(dirs, want) {
		t.Fatalf("reported %q, want %q (a, unreported by b1, left out with a/x)", dirs, want)
	}
	if !slices.Equal(names(got["b"]), []string{"y", "z"}) {
		t.Fatalf("b = %v", names(got["b"]))
	}

	// A truncated branch never reports the top directory: nothing can be
	// merged, and that is a failure, not a truncation, for callers take a
	// truncated listing's range as listed.
	l1.skip, l1.limit = nil, 2 // truncated after a/x and a
	got, err = collect(t, u.(remote.TreeLister), "", 5)
	if err == nil || errors.Is(err, remote.ErrTreeTruncated) || errors.Is(err, remote.ErrTreeUnsupported) || len(got) != 0 {
		t.Fatalf("truncated branch: %v, %d reported; want a failure and nothing", err, len(got))
	}
}

// A branch whose copy of the directory has gone since the union learned
// where it lives is left out, as ReadDir leaves it out.
func TestUnionListTreeBranchGone(t *testing.T) {
	d0, d1 := t.TempDir(), t.TempDir()
	plant(t, d0, "d/x=0", "d/sub/y=0")
	plant(t, d1, "d/z=1")
	u, err := namespace.NewUnion([]namespace.Branch{
		{Name: "b0", Remote: &lister{Remote: dial(t, "b0", d0, false)}},
		{Name: "b1", Remote: &lister{Remote: dial(t, "b1", d1, false)}}}, namespace.UnionOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer u.Close()
	if ents, err := u.ReadDir(ctxT(t), "d"); err != nil || !slices.Equal(names(ents), []string{"sub", "x", "z"}) {
		t.Fatalf("d = %v, %v", names(ents), err)
	}
	if err := os.RemoveAll(filepath.Join(d1, "d")); err != nil {
		t.Fatal(err)
	}
	got, err := collect(t, u.(remote.TreeLister), "d", 3)
	if err != nil || !slices.Equal(names(got["d"]), []string{"sub", "x"}) || !slices.Equal(names(got["d/sub"]), []string{"y"}) {
		t.Fatalf("d after b1 lost it: %v, %v", got, err)
	}
}

// A branch that cannot list trees makes the union unable to; a failing
// branch fails the listing, and nothing is reported.
func TestUnionListTreeFailures(t *testing.T) {
	d0, d1 := t.TempDir(), t.TempDir()
	plant(t, d0, "a/x=0")
	plant(t, d1, "b/y=1")
	r0, r1 := dial(t, "b0", d0, false), dial(t, "b1", d1, false)
	u, err := namespace.NewUnion([]namespace.Branch{{Name: "b0", Remote: &lister{Remote: r0}}, {Name: "b1", Remote: r1}}, namespace.UnionOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer u.Close()
	if _, err := collect(t, u.(remote.TreeLister), "", 3); !errors.Is(err, remote.ErrTreeUnsupported) {
		t.Fatalf("a branch without tree listings: %v", err)
	}
	boom := errors.New("boom")
	u2, err := namespace.NewUnion([]namespace.Branch{{Name: "b0", Remote: &lister{Remote: r0}}, {Name: "b1", Remote: &lister{Remote: r1, fail: boom}}}, namespace.UnionOptions{})
	if err != nil {
		t.Fatal(err)
	}
	got, err := collect(t, u2.(remote.TreeLister), "", 3)
	if !errors.Is(err, boom) || len(got) != 0 {
		t.Fatalf("failing branch: %v, reported %d", err, len(got))
	}
	// Below a directory only b0 holds, b1 is not asked.
	got, err = collect(t, u2.(remote.TreeLister), "a", 3)
	if err != nil || !slices.Equal(names(got["a"]), []string{"x"}) {
		t.Fatalf("a: %v, %v", names(got["a"]), err)
	}
}

// A graft mount's tree listing reports the base without the names grafts
// shadow, each graft's tree below its name, then the root, as ReadDir
// shows them; below a graft it is that graft's listing.
func TestGraftListTree(t *testing.T) {
	bd, fd, md := t.TempDir(), t.TempDir(), t.TempDir()
	plant(t, bd, "a/x=1", "m/hidden/h=1", "top=1")
	plant(t, fd, "sub/deep/f=2", "g=2")
	plant(t, md, "k/=")
	base := &lister{Remote: dial(t, "base", bd, false)}
	foo := &lister{Remote: dial(t, "foo", fd, false)}
	m := dial(t, "m", md, false) // cannot list trees
	ns, err := namespace.NewGraft(namespace.Single(base), []namespace.Graft{
		{Name: "FOO", NS: namespace.Single(foo)}, {Name: "m", NS: namespace.Single(m)}})
	if err != nil {
		t.Fatal(err)
	}
	defer ns.Close()
	tl := ns.(remote.TreeLister)
	got, err := collect(t, tl, "", 3)
	if err == nil || errors.Is(err, remote.ErrTreeUnsupported) {
		t.Fatalf("one member without tree listings: %v; want an error that leaves the others on", err)
	}
	want := map[string][]string{
		"": {"FOO", "a", "m", "top"}, "a": {"x"},
		"FOO": {"g", "sub"}, "FOO/sub": {"deep"}, "FOO/sub/deep": {"f"},
	}
	if len(got) != len(want) {
		t.Errorf("reported %d directories, want %d: %v", len(got), len(want), got)
	}
	for d, w := range want {
		if !slices.Equal(names(got[d]), w) {
			t.Errorf("%q = %v, want %v", d, names(got[d]), w)
		}
	}
	if !slices.Equal(foo.calls, []string{"@2"}) || !slices.Equal(base.calls, []string{"@3"}) {
		t.Errorf("members asked %q and %q", foo.calls, base.calls)
	}
	got, err = collect(t, tl, "FOO/sub", 1)
	if err != nil || len(got) != 2 || !slices.Equal(names(got["FOO/sub/deep"]), []string{"f"}) {
		t.Fatalf("FOO/sub: %v, %v", got, err)
	}
	if foo.calls[len(foo.calls)-1] != "sub@1" {
		t.Fatalf("graft asked %q", foo.calls)
	}
	// A member that fails, and a graft that is down, leave the others'
	// reports and the root: the error says the tree was not all listed.
	boom := errors.New("boom")
	bd2 := t.TempDir()
	plant(t, bd2, "n/x=1")
	down := newFlaky(&lister{Remote: dial(t, "down", md, false)})
	down.set(false)
	g2, err := namespace.NewGraft(namespace.Single(&lister{Remote: dial(t, "base2", bd2, false)}), []namespace.Graft{
		{Name: "BAD", NS: namespace.Single(&lister{Remote: dial(t, "bad", fd, false), fail: boom})},
		{Name: "DOWN", NS: down}})
	if err != nil {
		t.Fatal(err)
	}
	defer g2.Close()
	got, err = collect(t, g2.(remote.TreeLister), "", 3)
	if !errors.Is(err, boom) {
		t.Errorf("a failing graft: %v, want its error", err)
	}
	if !slices.Equal(names(got[""]), []string{"BAD", "DOWN", "n"}) || !slices.Equal(names(got["n"]), []string{"x"}) {
		t.Errorf("a failing graft: root %v, n %v; want both reported", names(got[""]), names(got["n"]))
	}
	g3, err := namespace.NewGraft(nil, []namespace.Graft{{Name: "FOO", NS: namespace.Single(&lister{Remote: dial(t, "foo3", fd, false)})}, {Name: "DOWN", NS: down}})
	if err != nil {
		t.Fatal(err)
	}
	defer g3.Close()
	got, err = collect(t, g3.(remote.TreeLister), "", 3)
	if err == nil || errors.Is(err, remote.ErrTreeUnsupported) || errors.Is(err, remote.ErrTreeTruncated) {
		t.Errorf("a graft down: %v, want an error that is neither unsupported nor truncated", err)
	}
	if !slices.Equal(names(got[""]), []string{"DOWN", "FOO"}) || !slices.Equal(names(got["FOO/sub/deep"]), []string{"f"}) {
		t.Errorf("a graft down: reported %v", got)
	}

	// No member can list trees: the mount cannot.
	only, err := namespace.NewGraft(nil, []namespace.Graft{{Name: "m", NS: namespace.Single(m)}})
	if err != nil {
		t.Fatal(err)
	}
	defer only.Close()
	if _, err := collect(t, only.(remote.TreeLister), "", 2); !errors.Is(err, remote.ErrTreeUnsupported) {
		t.Fatalf("no member with tree listings: %v", err)
	}
}
