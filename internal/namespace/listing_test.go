package namespace_test

import (
	"context"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"

	"sshfsm/internal/namespace"
	"sshfsm/internal/remote"
)

// memTree is a remote held in memory: listings by directory path. It
// answers Lstat and ReadDir (the calls a union lists with) and counts
// them; any other call panics (nil embedded Remote).
type memTree struct {
	remote.Remote
	dirs    map[string][]remote.DirEntry
	lstats  atomic.Int64
	listing atomic.Int64
}

func (m *memTree) ReadDir(ctx context.Context, p string) ([]remote.DirEntry, error) {
	m.listing.Add(1)
	l, ok := m.dirs[p]
	if !ok {
		return nil, fmt.Errorf("readdir %s: %w", p, fs.ErrNotExist)
	}
	return slices.Clone(l), nil
}

func (m *memTree) Lstat(ctx context.Context, p string) (remote.Attr, error) {
	m.lstats.Add(1)
	if p == "" {
		return remote.Attr{Mode: syscall.S_IFDIR | 0o755}, nil
	}
	dir, name := "", p
	if i := strings.LastIndexByte(p, '/'); i >= 0 {
		dir, name = p[:i], p[i+1:]
	}
	for _, e := range m.dirs[dir] {
		if e.Name == name {
			return e.Attr, nil
		}
	}
	return remote.Attr{}, fmt.Errorf("lstat %s: %w", p, fs.ErrNotExist)
}

func (m *memTree) Close() error { return nil }

// randomBranches makes n branches whose roots hold a random subset of
// names n00…, each a file or a directory. Size tells the copies apart:
// 100×branch + name index. Directory NAME of branch b holds one file,
// "from<b>".
func randomBranches(r *rand.Rand, n, names int) []*memTree {
	var out []*memTree
	for b := range n {
		m := &memTree{dirs: map[string][]remote.DirEntry{}}
		root := []remote.DirEntry{{Name: ".", Attr: remote.Attr{Mode: syscall.S_IFDIR}}}
		for _, k := range r.Perm(names) {
			if r.IntN(2) == 0 {
				continue
			}
			name := fmt.Sprintf("n%02d", k)
			a := remote.Attr{Mode: syscall.S_IFREG | 0o644, Size: uint64(100*b + k)}
			if r.IntN(2) == 0 {
				a.Mode = syscall.S_IFDIR | 0o755
				m.dirs[name] = []remote.DirEntry{{Name: fmt.Sprintf("from%d", b), Attr: remote.Attr{Mode: syscall.S_IFREG}}}
			}
			root = append(root, remote.DirEntry{Name: name, Attr: a})
		}
		m.dirs[""] = append(root, remote.DirEntry{Name: "..", Attr: remote.Attr{Mode: syscall.S_IFDIR}})
		out = append(out, m)
	}
	return out
}

// wantUnion states the union's rules for one level, independently of the
// implementation: the sorted root listing (the highest copy of each name)
// and, for each directory, the names of its merged listing.
func wantUnion(brs []*memTree) ([]remote.DirEntry, map[string][]string) {
	var root []remote.DirEntry
	subs := map[string][]string{}
	seen := map[string]bool{}
	for b, m := range brs {
		for _, e := range m.dirs[""] {
			if e.Name == "." || e.Name == ".." || seen[e.Name] {
				continue
			}
			seen[e.Name] = true
			root = append(root, e)
			if e.Attr.Mode&syscall.S_IFMT != syscall.S_IFDIR {
				continue
			}
			// Contributing copies: from the winner down to the first
			// branch holding the name as something else.
			var in []string
		below:
			for lb := b; lb < len(brs); lb++ {
				for _, le := range brs[lb].dirs[""] {
					if le.Name != e.Name {
						continue
					}
					if le.Attr.Mode&syscall.S_IFMT != syscall.S_IFDIR {
						break below
					}
					in = append(in, fmt.Sprintf("from%d", lb))
				}
			}
			subs[e.Name] = in
		}
	}
	slices.SortFunc(root, func(x, y remote.DirEntry) int { return strings.Compare(x.Name, y.Name) })
	return root, subs
}

// A listing shows each name once, sorted, with its winning copy's
// attributes, and what it learns about the subdirectories it shows is what
// a lookup would learn: listing them afterwards asks nothing more than
// their listings, and shows exactly the contributing branches' names.
func TestListingMergesBranches(t *testing.T) {
	ctx := ctxT(t)
	for seed := range uint64(60) {
		r := rand.New(rand.NewPCG(seed, 1))
		mems := randomBranches(r, 1+r.IntN(4), 24)
		var brs []namespace.Branch
		for i, m := range mems {
			brs = append(brs, namespace.Branch{Name: fmt.Sprintf("b%d", i), Remote: m})
		}
		ns, err := namespace.NewUnion(brs, namespace.UnionOptions{})
		if err != nil {
			t.Fatal(err)
		}
		wantRoot, wantSubs := wantUnion(mems)
		got, err := ns.ReadDir(ctx, "")
		if err != nil {
			t.Fatalf("seed %d: ReadDir: %v", seed, err)
		}
		if !slices.Equal(got, wantRoot) {
			t.Fatalf("seed %d: root\n got %v\nwant %v", seed, got, wantRoot)
		}
		for _, m := range mems {
			m.lstats.Store(0)
		}
		for name, want := range wantSubs {
			sub, err := ns.ReadDir(ctx, name)
			if err != nil || !slices.Equal(names(sub), want) {
				t.Fatalf("seed %d: ReadDir(%s) = %v, %v; want %v", seed, name, names(sub), err, want)
			}
		}
		for i, m := range mems {
			if n := m.lstats.Load(); n != 0 {
				t.Errorf("seed %d: branch %d was asked %d lstats after the root listing showed the layouts", seed, i, n)
			}
		}
		ns.Close()
	}
}

// disjointUnion is a union of two branches with n files each, in an order
// that is not sorted (as a server's directory order is not).
func disjointUnion(tb testing.TB, n int) namespace.Namespace {
	var brs []namespace.Branch
	for b, prefix := range []string{"a", "b"} {
		l := make([]remote.DirEntry, 0, n)
		for i := range n {
			l = append(l, remote.DirEntry{Name: fmt.Sprintf("%s%04d", prefix, i*7919%n), Attr: remote.Attr{Mode: syscall.S_IFREG | 0o644}})
		}
		m := &memTree{dirs: map[string][]remote.DirEntry{"": l}}
		brs = append(brs, namespace.Branch{Name: fmt.Sprintf("b%d", b), Remote: m})
	}
	ns, err := namespace.NewUnion(brs, namespace.UnionOptions{})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { ns.Close() })
	return ns
}

// The union's own work for a listing of two branches of 1000 names each,
// the remotes answering from memory.
func BenchmarkUnionListing(b *testing.B) {
	ns := disjointUnion(b, 1000)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if ents, err := ns.ReadDir(ctx, ""); err != nil || len(ents) != 2000 {
			b.Fatalf("ReadDir = %d names, %v", len(ents), err)
		}
	}
}
