package namespace_test

import (
	"context"
	"fmt"
	"os"
	"slices"
	"syscall"
	"testing"
	"time"

	"sshfsm/internal/namespace"
	"sshfsm/internal/remote"
)

// setup plants one tree per branch and returns their union and the
// branches' directories. ro lists the read-only branches.
func setup(t *testing.T, trees [][]string, ro []int, o namespace.UnionOptions) (namespace.Namespace, []string) {
	t.Helper()
	var dirs []string
	var brs []namespace.Branch
	for i, spec := range trees {
		dir := t.TempDir()
		plant(t, dir, spec...)
		isRO := slices.Contains(ro, i)
		name := fmt.Sprintf("b%d", i+1)
		brs = append(brs, namespace.Branch{Name: name, Remote: dial(t, name, dir, isRO), ReadOnly: isRO})
		dirs = append(dirs, dir)
	}
	ns, err := namespace.NewUnion(brs, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ns.Close() })
	return ns, dirs
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// Lookups: the highest branch wins, directories merge, a non-directory
// shadows the directories below it and the reverse.
func TestUnionLookup(t *testing.T) {
	ns, _ := setup(t, [][]string{
		{"one=b1", "both=b1", "fd=b1", "df/", "df/in1=", "m/", "m/a=b1", "m/sub/", "m/sub/x=",
			"chain/", "chain/c1=", "lnk@one"},
		{"two=b2", "both=b2", "fd/", "fd/in2=", "df=b2", "m/", "m/a=b2", "m/b=", "m/sub/", "m/sub/y=",
			"chain=b2"},
		{"chain/", "chain/c3=", "three/", "three/deep/", "three/deep/z=b3"},
	}, nil, namespace.UnionOptions{})
	ctx := ctxT(t)

	for _, tc := range []struct {
		p        string
		mode     uint32 // file type
		size     uint64
		content  string
		listErr  syscall.Errno
		listing  []string
		notFound bool
	}{
		{p: "one", mode: syscall.S_IFREG, content: "b1"},
		{p: "two", mode: syscall.S_IFREG, content: "b2"},
		{p: "both", mode: syscall.S_IFREG, content: "b1"},
		{p: "fd", mode: syscall.S_IFREG, content: "b1", listErr: syscall.ENOTDIR},
		{p: "df", mode: syscall.S_IFDIR, listing: []string{"in1"}},
		{p: "m", mode: syscall.S_IFDIR, listing: []string{"a", "b", "sub"}},
		{p: "m/a", mode: syscall.S_IFREG, content: "b1"},
		{p: "m/sub", mode: syscall.S_IFDIR, listing: []string{"x", "y"}},
		{p: "chain", mode: syscall.S_IFDIR, listing: []string{"c1"}}, // b2's file shadows b3's directory
		{p: "chain/c3", notFound: true},
		{p: "three/deep/z", mode: syscall.S_IFREG, content: "b3"},
		{p: "lnk", mode: syscall.S_IFLNK},
		{p: "nothing", notFound: true},
		{p: "fd/in2", notFound: true},
		{p: "df/in1", mode: syscall.S_IFREG},
	} {
		t.Run(tc.p, func(t *testing.T) {
			a, err := ns.Lstat(ctx, tc.p)
			if tc.notFound {
				if errnoOf(err) != syscall.ENOENT && errnoOf(err) != syscall.ENOTDIR {
					t.Fatalf("Lstat = %v, %v; want ENOENT", a, err)
				}
				return
			}
			if err != nil {
				t.Fatalf("Lstat: %v", err)
			}
			if got := a.Mode & syscall.S_IFMT; got != tc.mode {
				t.Fatalf("type %o, want %o", got, tc.mode)
			}
			if tc.content != "" {
				if got := readAll(t, ns, tc.p); got != tc.content {
					t.Errorf("content %q, want %q", got, tc.content)
				}
				if a.Size != uint64(len(tc.content)) {
					t.Errorf("size %d, want %d", a.Size, len(tc.content))
				}
			}
			if tc.mode != syscall.S_IFDIR && tc.listErr == 0 {
				return
			}
			ents, err := ns.ReadDir(ctx, tc.p)
			if errnoOf(err) != tc.listErr {
				t.Fatalf("ReadDir: %v, want %v", err, tc.listErr)
			}
			if err == nil && !slices.Equal(names(ents), tc.listing) {
				t.Errorf("ReadDir = %v, want %v", names(ents), tc.listing)
			}
		})
	}

	// The root lists every name once, with its winner's attributes.
	ents, err := ns.ReadDir(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"both", "chain", "df", "fd", "lnk", "m", "one", "three", "two"}
	if !slices.Equal(names(ents), want) {
		t.Fatalf("root = %v, want %v", names(ents), want)
	}
	for _, e := range ents {
		a, err := ns.Lstat(ctx, e.Name)
		if err != nil || a.Mode != e.Attr.Mode || a.Size != e.Attr.Size {
			t.Errorf("%s: listing says %o/%d, Lstat %o/%d, %v", e.Name, e.Attr.Mode, e.Attr.Size, a.Mode, a.Size, err)
		}
	}
	if target, err := ns.Readlink(ctx, "lnk"); err != nil || target != "one" {
		t.Errorf("Readlink = %q, %v", target, err)
	}
	if a, err := ns.Stat(ctx, "lnk"); err != nil || a.Mode&syscall.S_IFMT != syscall.S_IFREG || a.Size != 2 {
		t.Errorf("Stat(lnk) = %o/%d, %v; want the regular file one", a.Mode, a.Size, err)
	}
}

// op is one operation on the union; ok says what it must have returned
// besides the error (may be nil).
type opCase struct {
	name   string
	trees  [][]string
	ro     []int
	policy namespace.Policy
	op     func(ctx context.Context, ns namespace.Namespace) error
	err    syscall.Errno
	want   [][]string // every branch's tree afterwards
}

func runOps(t *testing.T, cases []opCase) {
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ns, dirs := setup(t, tc.trees, tc.ro, namespace.UnionOptions{Create: tc.policy})
			err := tc.op(ctxT(t), ns)
			if errnoOf(err) != tc.err {
				t.Errorf("error %v (%v), want %v", err, errnoOf(err), tc.err)
			}
			for i, dir := range dirs {
				if got := tree(t, dir); !slices.Equal(got, tc.want[i]) {
					t.Errorf("branch %d: %q, want %q", i+1, got, tc.want[i])
				}
			}
		})
	}
}

// create writes text to a new file p through the union.
func create(p, text string) func(ctx context.Context, ns namespace.Namespace) error {
	return func(ctx context.Context, ns namespace.Namespace) error {
		f, err := ns.Open(ctx, p, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
		if err != nil {
			return err
		}
		if _, err := f.WriteAt(ctx, []byte(text), 0); err != nil {
			f.Close(ctx)
			return err
		}
		return f.Close(ctx)
	}
}

// overwrite truncates the existing file p and writes text.
func overwrite(p, text string) func(ctx context.Context, ns namespace.Namespace) error {
	return func(ctx context.Context, ns namespace.Namespace) error {
		f, err := ns.Open(ctx, p, os.O_WRONLY|os.O_TRUNC, 0)
		if err != nil {
			return err
		}
		if _, err := f.WriteAt(ctx, []byte(text), 0); err != nil {
			f.Close(ctx)
			return err
		}
		return f.Close(ctx)
	}
}

func mkdir(p string) func(ctx context.Context, ns namespace.Namespace) error {
	return func(ctx context.Context, ns namespace.Namespace) error { return ns.Mkdir(ctx, p, 0o755) }
}

func symlink(target, p string) func(ctx context.Context, ns namespace.Namespace) error {
	return func(ctx context.Context, ns namespace.Namespace) error { return ns.Symlink(ctx, target, p) }
}

func link(o, n string) func(ctx context.Context, ns namespace.Namespace) error {
	return func(ctx context.Context, ns namespace.Namespace) error { return ns.Link(ctx, o, n) }
}

func rm(p string) func(ctx context.Context, ns namespace.Namespace) error {
	return func(ctx context.Context, ns namespace.Namespace) error { return ns.Remove(ctx, p) }
}

func rmdir(p string) func(ctx context.Context, ns namespace.Namespace) error {
	return func(ctx context.Context, ns namespace.Namespace) error { return ns.Rmdir(ctx, p) }
}

func mv(o, n string, noReplace bool) func(ctx context.Context, ns namespace.Namespace) error {
	return func(ctx context.Context, ns namespace.Namespace) error { return ns.Rename(ctx, o, n, noReplace) }
}

func truncate(p string, size uint64) func(ctx context.Context, ns namespace.Namespace) error {
	return func(ctx context.Context, ns namespace.Namespace) error {
		return ns.SetAttr(ctx, p, remote.SetAttr{Size: &size})
	}
}

func TestUnionCreate(t *testing.T) {
	runOps(t, []opCase{
		{name: "file/epff parent in both", trees: [][]string{{"d/"}, {"d/"}}, op: create("d/n", "x"),
			want: [][]string{{"d/", "d/n=x"}, {"d/"}}},
		{name: "file/epff parent in 2", trees: [][]string{{}, {"d/"}}, op: create("d/n", "x"),
			want: [][]string{{}, {"d/", "d/n=x"}}},
		{name: "file/epff parent only read-only", trees: [][]string{{"d/"}, {}}, ro: []int{0},
			op: create("d/n", "x"), err: syscall.EROFS, want: [][]string{{"d/"}, {}}},
		{name: "file/read-only first", trees: [][]string{{}, {}}, ro: []int{0}, op: create("n", "x"),
			want: [][]string{{}, {"n=x"}}},
		{name: "file/exists in 2", trees: [][]string{{}, {"n=old"}}, op: create("n", "x"), err: syscall.EEXIST,
			want: [][]string{{}, {"n=old"}}},
		{name: "file/exists in 1", trees: [][]string{{"n=old"}, {}}, op: create("n", "x"), err: syscall.EEXIST,
			want: [][]string{{"n=old"}, {}}},
		{name: "file/exists in both", trees: [][]string{{"n=1"}, {"n=2"}}, op: create("n", "x"), err: syscall.EEXIST,
			want: [][]string{{"n=1"}, {"n=2"}}},
		{name: "file/exists as lower directory", trees: [][]string{{}, {"n/"}}, op: create("n", "x"),
			err: syscall.EEXIST, want: [][]string{{}, {"n/"}}},
		{name: "file/parent is a file", trees: [][]string{{"d=f"}, {"d/"}}, op: create("d/n", "x"),
			err: syscall.ENOTDIR, want: [][]string{{"d=f"}, {"d/"}}},
		{name: "file/no parent", trees: [][]string{{}, {}}, op: create("d/n", "x"), err: syscall.ENOENT,
			want: [][]string{{}, {}}},
		{name: "file/ff creates missing parent", trees: [][]string{{"a/"}, {"a/b/c/"}}, policy: namespace.FF,
			op:   create("a/b/c/n", "x"),
			want: [][]string{{"a/", "a/b/", "a/b/c/", "a/b/c/n=x"}, {"a/", "a/b/", "a/b/c/"}}},
		{name: "file/ff skips a branch whose copy would be shadowed", trees: [][]string{{"d/"}, {"d=f"}, {}},
			ro: []int{0}, policy: namespace.FF, op: create("d/n", "x"), err: syscall.EROFS,
			want: [][]string{{"d/"}, {"d=f"}, {}}},
		{name: "file/ff skips read-only", trees: [][]string{{}, {}, {}}, ro: []int{0}, policy: namespace.FF,
			op: create("n", "x"), want: [][]string{{}, {"n=x"}, {}}},
		{name: "open O_CREAT of a lower name opens it", trees: [][]string{{}, {"n=old"}},
			op: func(ctx context.Context, ns namespace.Namespace) error {
				f, err := ns.Open(ctx, "n", os.O_WRONLY|os.O_CREATE, 0o644)
				if err != nil {
					return err
				}
				f.WriteAt(ctx, []byte("N"), 0)
				return f.Close(ctx)
			}, want: [][]string{{}, {"n=Nld"}}},

		{name: "mkdir/epff", trees: [][]string{{}, {"d/"}}, op: mkdir("d/e"), want: [][]string{{}, {"d/", "d/e/"}}},
		{name: "mkdir/exists as lower dir", trees: [][]string{{}, {"d/"}}, op: mkdir("d"), err: syscall.EEXIST,
			want: [][]string{{}, {"d/"}}},
		{name: "mkdir/exists as file", trees: [][]string{{"d=f"}, {}}, op: mkdir("d"), err: syscall.EEXIST,
			want: [][]string{{"d=f"}, {}}},
		{name: "mkdir/exists in both", trees: [][]string{{"d/"}, {"d/"}}, op: mkdir("d"), err: syscall.EEXIST,
			want: [][]string{{"d/"}, {"d/"}}},
		{name: "mkdir/epff parent only read-only", trees: [][]string{{}, {"d/"}}, ro: []int{1}, op: mkdir("d/e"),
			err: syscall.EROFS, want: [][]string{{}, {"d/"}}},
		{name: "mkdir/parent shadowed by a file", trees: [][]string{{"d=f"}, {"d/"}}, op: mkdir("d/e"),
			err: syscall.ENOTDIR, want: [][]string{{"d=f"}, {"d/"}}},
		{name: "mkdir/ff clones parents", trees: [][]string{{}, {"p/q/"}}, policy: namespace.FF, op: mkdir("p/q/r"),
			want: [][]string{{"p/", "p/q/", "p/q/r/"}, {"p/", "p/q/"}}},

		{name: "symlink/epff", trees: [][]string{{"d/"}, {"d/"}}, op: symlink("/t", "d/l"),
			want: [][]string{{"d/", "d/l@/t"}, {"d/"}}},
		{name: "symlink/exists", trees: [][]string{{}, {"l@x"}}, op: symlink("t", "l"), err: syscall.EEXIST,
			want: [][]string{{}, {"l@x"}}},
		{name: "symlink/read-only first", trees: [][]string{{"d/"}, {"d/"}}, ro: []int{0}, op: symlink("/t", "d/l"),
			want: [][]string{{"d/"}, {"d/", "d/l@/t"}}},
		{name: "symlink/ff creates missing parent", trees: [][]string{{}, {"d/"}}, policy: namespace.FF,
			op: symlink("/t", "d/l"), want: [][]string{{"d/", "d/l@/t"}, {"d/"}}},

		{name: "link/in the target's branch", trees: [][]string{{"d/"}, {"f=x"}}, op: link("f", "g"),
			want: [][]string{{"d/"}, {"f=x", "g=x"}}},
		{name: "link/creates the directory in the target's branch", trees: [][]string{{"d/"}, {"f=x"}},
			op: link("f", "d/g"), want: [][]string{{"d/"}, {"d/", "d/g=x", "f=x"}}},
		{name: "link/target on read-only branch", trees: [][]string{{"f=x"}, {}}, ro: []int{0}, op: link("f", "g"),
			err: syscall.EROFS, want: [][]string{{"f=x"}, {}}},
		{name: "link/shadowed directory", trees: [][]string{{"d=file"}, {"f=x", "d/"}}, op: link("f", "d/g"),
			err: syscall.ENOTDIR, want: [][]string{{"d=file"}, {"d/", "f=x"}}},
		{name: "link/branch cannot hold the directory", trees: [][]string{{"d/"}, {"d=file"}, {"f=x"}},
			op: link("f", "d/g"), err: syscall.EXDEV, want: [][]string{{"d/"}, {"d=file"}, {"f=x"}}},
		{name: "link/exists", trees: [][]string{{"g=y"}, {"f=x"}}, op: link("f", "g"), err: syscall.EEXIST,
			want: [][]string{{"g=y"}, {"f=x"}}},
	})
}

func TestUnionWrite(t *testing.T) {
	runOps(t, []opCase{
		{name: "overwrite in 1", trees: [][]string{{"f=old"}, {"f=low"}}, op: overwrite("f", "new"),
			want: [][]string{{"f=new"}, {"f=low"}}},
		{name: "overwrite in 2", trees: [][]string{{}, {"f=old"}}, op: overwrite("f", "new"),
			want: [][]string{{}, {"f=new"}}},
		{name: "overwrite read-only", trees: [][]string{{"f=old"}, {}}, ro: []int{0}, op: overwrite("f", "new"),
			err: syscall.EROFS, want: [][]string{{"f=old"}, {}}},
		{name: "read read-only", trees: [][]string{{"f=old"}, {}}, ro: []int{0},
			op: func(ctx context.Context, ns namespace.Namespace) error {
				f, err := ns.Open(ctx, "f", os.O_RDONLY, 0)
				if err == nil {
					err = f.Close(ctx)
				}
				return err
			}, want: [][]string{{"f=old"}, {}}},
		{name: "truncate in 2", trees: [][]string{{}, {"f=old"}}, op: truncate("f", 1),
			want: [][]string{{}, {"f=o"}}},
		{name: "truncate read-only", trees: [][]string{{}, {"f=old"}}, ro: []int{1}, op: truncate("f", 1),
			err: syscall.EROFS, want: [][]string{{}, {"f=old"}}},
		{name: "truncate in both", trees: [][]string{{"f=old"}, {"f=low"}}, op: truncate("f", 2),
			want: [][]string{{"f=ol"}, {"f=low"}}},
		{name: "open dir over file for writing", trees: [][]string{{"x/"}, {"x=f"}}, op: overwrite("x", "n"),
			err: syscall.EISDIR, want: [][]string{{"x/"}, {"x=f"}}},
		{name: "overwrite file over dir", trees: [][]string{{"x=f"}, {"x/"}}, op: overwrite("x", "n"),
			want: [][]string{{"x=n"}, {"x/"}}},
		{name: "truncate missing", trees: [][]string{{}, {}}, op: truncate("f", 1), err: syscall.ENOENT,
			want: [][]string{{}, {}}},
	})
}

func TestUnionRemove(t *testing.T) {
	runOps(t, []opCase{
		{name: "rm/in 1", trees: [][]string{{"f=1"}, {"g="}}, op: rm("f"), want: [][]string{{}, {"g="}}},
		{name: "rm/in 2", trees: [][]string{{"g="}, {"f=2"}}, op: rm("f"), want: [][]string{{"g="}, {}}},
		{name: "rm/in both", trees: [][]string{{"d/", "d/f=1"}, {"d/", "d/f=2"}, {"d/", "d/f=3"}}, op: rm("d/f"),
			want: [][]string{{"d/"}, {"d/"}, {"d/"}}},
		{name: "rm/file over dir", trees: [][]string{{"x=f"}, {"x/"}}, op: rm("x"), want: [][]string{{}, {"x/"}}},
		{name: "rm/dir over file", trees: [][]string{{"x/"}, {"x=f"}}, op: rm("x"), err: syscall.EISDIR,
			want: [][]string{{"x/"}, {"x=f"}}},
		{name: "rm/read-only lower copy", trees: [][]string{{"f=1"}, {"f=2"}}, ro: []int{1}, op: rm("f"),
			err: syscall.EROFS, want: [][]string{{"f=1"}, {"f=2"}}},
		{name: "rm/read-only only copy", trees: [][]string{{}, {"f=2"}}, ro: []int{1}, op: rm("f"),
			err: syscall.EROFS, want: [][]string{{}, {"f=2"}}},
		{name: "rm/missing", trees: [][]string{{}, {}}, op: rm("f"), err: syscall.ENOENT, want: [][]string{{}, {}}},
		{name: "rm/symlink in both", trees: [][]string{{"l@a"}, {"l@b"}}, op: rm("l"), want: [][]string{{}, {}}},
		{name: "rm/shadowed copy stays", trees: [][]string{{"d=f"}, {"d/", "d/x="}}, op: rm("d/x"),
			err: syscall.ENOTDIR, want: [][]string{{"d=f"}, {"d/", "d/x="}}},

		{name: "rmdir/in both", trees: [][]string{{"d/"}, {"d/"}}, op: rmdir("d"), want: [][]string{{}, {}}},
		{name: "rmdir/in 2", trees: [][]string{{}, {"d/"}}, op: rmdir("d"), want: [][]string{{}, {}}},
		{name: "rmdir/not empty in 2", trees: [][]string{{"d/"}, {"d/", "d/x="}}, op: rmdir("d"),
			err: syscall.ENOTEMPTY, want: [][]string{{"d/"}, {"d/", "d/x="}}},
		{name: "rmdir/read-only copy", trees: [][]string{{"d/"}, {"d/"}}, ro: []int{1}, op: rmdir("d"),
			err: syscall.EROFS, want: [][]string{{"d/"}, {"d/"}}},
		{name: "rmdir/dir over file", trees: [][]string{{"x/"}, {"x=f"}}, op: rmdir("x"),
			want: [][]string{{}, {"x=f"}}},
		{name: "rmdir/file over dir", trees: [][]string{{"x=f"}, {"x/"}}, op: rmdir("x"), err: syscall.ENOTDIR,
			want: [][]string{{"x=f"}, {"x/"}}},
		{name: "rmdir/missing", trees: [][]string{{}, {}}, op: rmdir("d"), err: syscall.ENOENT,
			want: [][]string{{}, {}}},
	})
}

func TestUnionRename(t *testing.T) {
	runOps(t, []opCase{
		{name: "in 1", trees: [][]string{{"a=1"}, {}}, op: mv("a", "b", false), want: [][]string{{"b=1"}, {}}},
		{name: "in 2", trees: [][]string{{}, {"a=2"}}, op: mv("a", "b", false), want: [][]string{{}, {"b=2"}}},
		{name: "in both", trees: [][]string{{"a=1"}, {"a=2"}}, op: mv("a", "b", false), err: syscall.EXDEV,
			want: [][]string{{"a=1"}, {"a=2"}}},
		{name: "merged directory", trees: [][]string{{"d/"}, {"d/", "d/x="}}, op: mv("d", "e", false),
			err: syscall.EXDEV, want: [][]string{{"d/"}, {"d/", "d/x="}}},
		{name: "directory in one branch", trees: [][]string{{"d/", "d/x=1"}, {}}, op: mv("d", "e", false),
			want: [][]string{{"e/", "e/x=1"}, {}}},
		{name: "onto a lower copy", trees: [][]string{{"a=1"}, {"b=2"}, {"b=3"}}, op: mv("a", "b", false),
			want: [][]string{{"b=1"}, {}, {}}},
		{name: "onto a copy in the same branch and below", trees: [][]string{{"a=1", "b=x"}, {"b=2"}},
			op: mv("a", "b", false), want: [][]string{{"b=1"}, {}}},
		{name: "onto a read-only lower copy", trees: [][]string{{"a=1"}, {"b=2"}}, ro: []int{1},
			op: mv("a", "b", false), want: [][]string{{"b=1"}, {"b=2"}}},
		{name: "onto a higher copy", trees: [][]string{{"b=1"}, {"a=2"}}, op: mv("a", "b", false),
			err: syscall.EXDEV, want: [][]string{{"b=1"}, {"a=2"}}},
		{name: "noreplace", trees: [][]string{{"a=1"}, {"b=2"}}, op: mv("a", "b", true), err: syscall.EEXIST,
			want: [][]string{{"a=1"}, {"b=2"}}},
		{name: "noreplace free", trees: [][]string{{"a=1"}, {}}, op: mv("a", "b", true),
			want: [][]string{{"b=1"}, {}}},
		{name: "read-only source", trees: [][]string{{}, {"a=2"}}, ro: []int{1}, op: mv("a", "b", false),
			err: syscall.EROFS, want: [][]string{{}, {"a=2"}}},
		{name: "file onto directory", trees: [][]string{{"a=1"}, {"d/"}}, op: mv("a", "d", false),
			err: syscall.EISDIR, want: [][]string{{"a=1"}, {"d/"}}},
		{name: "directory onto file", trees: [][]string{{"d/"}, {"f="}}, op: mv("d", "f", false),
			err: syscall.ENOTDIR, want: [][]string{{"d/"}, {"f="}}},
		{name: "directory onto a merged non-empty directory", trees: [][]string{{"d/", "e/"}, {"e/", "e/x="}},
			op: mv("d", "e", false), err: syscall.ENOTEMPTY, want: [][]string{{"d/", "e/"}, {"e/", "e/x="}}},
		{name: "directory onto an empty lower directory", trees: [][]string{{"d/", "d/x=1"}, {"e/"}},
			op: mv("d", "e", false), want: [][]string{{"e/", "e/x=1"}, {}}},
		{name: "into a directory the branch lacks", trees: [][]string{{"d/"}, {"a=2"}}, op: mv("a", "d/a", false),
			want: [][]string{{"d/"}, {"d/", "d/a=2"}}},
		{name: "into a directory the branch cannot hold", trees: [][]string{{"d/"}, {"d=f"}, {"a=3"}},
			op: mv("a", "d/a", false), err: syscall.EXDEV, want: [][]string{{"d/"}, {"d=f"}, {"a=3"}}},
		{name: "file over dir", trees: [][]string{{"x=f"}, {"x/"}}, op: mv("x", "y", false), err: syscall.EXDEV,
			want: [][]string{{"x=f"}, {"x/"}}},
		{name: "into itself", trees: [][]string{{"d/"}, {}}, op: mv("d", "d/e", false), err: syscall.EINVAL,
			want: [][]string{{"d/"}, {}}},
		{name: "missing", trees: [][]string{{}, {}}, op: mv("a", "b", false), err: syscall.ENOENT,
			want: [][]string{{}, {}}},
	})
}

// Modes and the attributes a change acts on.
func TestUnionSetAttrAndModes(t *testing.T) {
	ns, dirs := setup(t, [][]string{{"d/"}, {"d/", "d/f=x"}}, nil, namespace.UnionOptions{Create: namespace.FF})
	ctx := ctxT(t)
	mode := uint32(0o600)
	if err := ns.SetAttr(ctx, "d/f", remote.SetAttr{Mode: &mode}); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(dirs[1] + "/d/f"); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("branch 2's file: %v, %v; want mode 0600", fi.Mode(), err)
	}
	// A parent created for ff takes the union's directory's mode.
	if err := os.Mkdir(dirs[1]+"/p", 0o750); err != nil {
		t.Fatal(err)
	}
	os.Chmod(dirs[1]+"/p", 0o750)
	if err := ns.Mkdir(ctx, "p/q", 0o700); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(dirs[0] + "/p")
	if err != nil || fi.Mode().Perm() != 0o750 {
		t.Fatalf("cloned parent: %v, %v; want 0750", fi.Mode(), err)
	}
	if fi, err := os.Stat(dirs[0] + "/p/q"); err != nil || fi.Mode().Perm() != 0o700 {
		t.Fatalf("new directory: %v, %v; want 0700", fi.Mode(), err)
	}
	// The union now shows p from branch 1 and merges both copies.
	if err := os.WriteFile(dirs[1]+"/p/low", nil, 0o644); err != nil {
		t.Fatal(err)
	}
	ents, err := ns.ReadDir(ctx, "p")
	if err != nil || !slices.Equal(names(ents), []string{"low", "q"}) {
		t.Fatalf("ReadDir(p) = %v, %v", names(ents), err)
	}
}
