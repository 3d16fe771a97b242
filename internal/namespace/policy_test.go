package namespace_test

import (
	"fmt"
	"slices"
	"syscall"
	"testing"

	"sshfsm/internal/namespace"
	"sshfsm/internal/remote"
)

func TestParsePolicy(t *testing.T) {
	for _, s := range []string{"epff", "ff", "mfs", "lfs", "rand"} {
		p, err := namespace.ParsePolicy(s)
		if err != nil || p.String() != s {
			t.Errorf("ParsePolicy(%q) = %v, %v", s, p, err)
		}
	}
	if p, err := namespace.ParsePolicy(""); err != nil || p != namespace.EPFF {
		t.Errorf(`ParsePolicy("") = %v, %v; want the default epff`, p, err)
	}
	for _, s := range []string{"EPFF", "mspmfs", "all", " ff"} {
		if _, err := namespace.ParsePolicy(s); errnoOf(err) != syscall.EINVAL {
			t.Errorf("ParsePolicy(%q): %v, want EINVAL", s, err)
		}
	}
	if namespace.Policy(0) != namespace.EPFF {
		t.Error("the zero Policy is not epff")
	}
}

// spaceUnion builds a union of branches reporting the given free bytes
// (4 KiB blocks), with the first one read-only if ro.
func spaceUnion(t *testing.T, policy namespace.Policy, ro bool, free ...uint64) (namespace.Namespace, []string) {
	t.Helper()
	var brs []namespace.Branch
	var dirs []string
	for i, f := range free {
		dir := t.TempDir()
		name := fmt.Sprintf("b%d", i+1)
		r := fixedFS{dial(t, name, dir, false), remote.StatFS{Bsize: 4096, Frsize: 4096,
			Blocks: 1 << 30, Bfree: f / 4096, Bavail: f / 4096, Fsid: uint64(i + 1)}}
		brs = append(brs, namespace.Branch{Name: name, Remote: r, ReadOnly: ro && i == 0})
		dirs = append(dirs, dir)
	}
	ns, err := namespace.NewUnion(brs, namespace.UnionOptions{Create: policy})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ns.Close() })
	return ns, dirs
}

// Each policy sends a new name at the root to the branch it names.
func TestPolicies(t *testing.T) {
	for _, tc := range []struct {
		policy namespace.Policy
		ro     bool
		free   []uint64
		want   int // branch index receiving the file
	}{
		{namespace.EPFF, false, []uint64{1 << 20, 8 << 20, 2 << 20}, 0},
		{namespace.EPFF, true, []uint64{1 << 20, 8 << 20, 2 << 20}, 1},
		{namespace.FF, false, []uint64{1 << 20, 8 << 20, 2 << 20}, 0},
		{namespace.FF, true, []uint64{1 << 20, 8 << 20, 2 << 20}, 1},
		{namespace.MFS, false, []uint64{1 << 20, 8 << 20, 2 << 20}, 1},
		{namespace.MFS, true, []uint64{64 << 20, 8 << 20, 9 << 20}, 2},
		{namespace.LFS, false, []uint64{4 << 20, 8 << 20, 2 << 20}, 2},
		{namespace.LFS, true, []uint64{1 << 20, 8 << 20, 2 << 20}, 2},
	} {
		t.Run(fmt.Sprintf("%v ro=%v %v", tc.policy, tc.ro, tc.free), func(t *testing.T) {
			ns, dirs := spaceUnion(t, tc.policy, tc.ro, tc.free...)
			if err := create("n", "x")(ctxT(t), ns); err != nil {
				t.Fatal(err)
			}
			for i, dir := range dirs {
				got := tree(t, dir)
				if want := i == tc.want; want != slices.Equal(got, []string{"n=x"}) {
					t.Errorf("branch %d holds %q; want the file only in branch %d", i+1, got, tc.want+1)
				}
			}
		})
	}
}

// mfs sends a name to the branch with the most space even when it lacks
// the name's directory, and creates the directory there.
func TestPolicyMFSCreatesParent(t *testing.T) {
	ns, dirs := spaceUnion(t, namespace.MFS, false, 1<<20, 8<<20)
	plant(t, dirs[0], "a/b/")
	if err := create("a/b/n", "x")(ctxT(t), ns); err != nil {
		t.Fatal(err)
	}
	if got := tree(t, dirs[1]); !slices.Equal(got, []string{"a/", "a/b/", "a/b/n=x"}) {
		t.Fatalf("branch 2 = %q", got)
	}
	if got := tree(t, dirs[0]); !slices.Equal(got, []string{"a/", "a/b/"}) {
		t.Fatalf("branch 1 = %q", got)
	}
}

// rand spreads new names over every writable branch and never picks a
// read-only one.
func TestPolicyRand(t *testing.T) {
	ns, dirs := spaceUnion(t, namespace.Rand, true, 1, 1, 1)
	ctx := ctxT(t)
	for i := range 60 {
		if err := create(fmt.Sprintf("f%02d", i), "")(ctx, ns); err != nil {
			t.Fatal(err)
		}
	}
	counts := []int{len(tree(t, dirs[0])), len(tree(t, dirs[1])), len(tree(t, dirs[2]))}
	if counts[0] != 0 || counts[1] == 0 || counts[2] == 0 || counts[1]+counts[2] != 60 {
		t.Fatalf("files per branch = %v; want 0 on the read-only one, some on each other", counts)
	}
}

// StatFS counts each filesystem once by Fsid; without an Fsid branches
// count separately; different block sizes add up in bytes.
func TestStatFSSum(t *testing.T) {
	for _, tc := range []struct {
		name   string
		fs     []remote.StatFS
		blocks uint64 // in 4 KiB blocks
		fsid   uint64
	}{
		{"same fsid", []remote.StatFS{{Frsize: 4096, Blocks: 100, Fsid: 7}, {Frsize: 4096, Blocks: 100, Fsid: 7}}, 100, 7},
		{"two fsids", []remote.StatFS{{Frsize: 4096, Blocks: 100, Fsid: 7}, {Frsize: 4096, Blocks: 50, Fsid: 8}}, 150, 0},
		{"no fsid", []remote.StatFS{{Frsize: 4096, Blocks: 100}, {Frsize: 4096, Blocks: 100}}, 200, 0},
		{"block sizes", []remote.StatFS{{Frsize: 4096, Blocks: 100, Fsid: 1}, {Frsize: 1024, Blocks: 400, Fsid: 2}}, 200, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var brs []namespace.Branch
			for i, s := range tc.fs {
				s.Bsize = s.Frsize
				brs = append(brs, namespace.Branch{Name: fmt.Sprint(i), Remote: fixedFS{dial(t, fmt.Sprint(i), t.TempDir(), false), s}})
			}
			ns, err := namespace.NewUnion(brs, namespace.UnionOptions{})
			if err != nil {
				t.Fatal(err)
			}
			defer ns.Close()
			s, err := ns.StatFS(ctxT(t), "")
			if err != nil || s.Blocks != tc.blocks || s.Frsize != 4096 || s.Fsid != tc.fsid {
				t.Fatalf("StatFS = %+v, %v; want %d blocks of 4096, fsid %d", s, err, tc.blocks, tc.fsid)
			}
		})
	}
}

func TestNewUnionRejects(t *testing.T) {
	r := dial(t, "b", t.TempDir(), false)
	for _, tc := range []struct {
		name string
		brs  []namespace.Branch
		o    namespace.UnionOptions
	}{
		{"no branch", nil, namespace.UnionOptions{}},
		{"nil remote", []namespace.Branch{{Name: "x"}}, namespace.UnionOptions{}},
		{"bad policy", []namespace.Branch{{Name: "x", Remote: r}}, namespace.UnionOptions{Create: 99}},
		{"too many", make([]namespace.Branch, 65), namespace.UnionOptions{}},
	} {
		if _, err := namespace.NewUnion(tc.brs, tc.o); errnoOf(err) != syscall.EINVAL {
			t.Errorf("%s: %v, want EINVAL", tc.name, err)
		}
	}
}
