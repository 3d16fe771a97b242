package namespace_test

import (
	"slices"
	"syscall"
	"testing"
	"time"

	"sshfsm/internal/namespace"
	"sshfsm/internal/remote"
)

// A union as the base with two grafts: FOO (a host that can go down) and
// m, which shadows the base's m.
func TestGraftsOverUnion(t *testing.T) {
	base, fl, bdirs := flakyUnion(t, [][]string{{"a=1", "m/", "m/base="}, {"b=2", "d/"}}, namespace.UnionOptions{})
	fooDir, mDir := t.TempDir(), t.TempDir()
	plant(t, fooDir, "x=foo", "sub/")
	plant(t, mDir, "graft=")
	foo := newFlaky(dial(t, "foo", fooDir, false))
	ns, err := namespace.NewGraft(base, []namespace.Graft{{Name: "FOO", NS: foo}, {Name: "m", NS: dial(t, "m", mDir, false)}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ns.Close() })
	ctx := ctxT(t)

	ents, err := ns.ReadDir(ctx, "")
	if err != nil || !slices.Equal(names(ents), []string{"FOO", "a", "b", "d", "m"}) {
		t.Fatalf("root = %v, %v", names(ents), err)
	}
	if ents, err = ns.ReadDir(ctx, "m"); err != nil || !slices.Equal(names(ents), []string{"graft"}) {
		t.Fatalf("m = %v, %v; want the graft's", names(ents), err)
	}
	if got := readAll(t, ns, "FOO/x"); got != "foo" {
		t.Fatalf("FOO/x = %q", got)
	}
	if a, err := ns.Lstat(ctx, "FOO"); err != nil || a.Mode&syscall.S_IFMT != syscall.S_IFDIR {
		t.Fatalf("Lstat(FOO) = %v, %v", a, err)
	}

	for _, tc := range []struct {
		name string
		op   func() error
		err  syscall.Errno
	}{
		{"create in graft", func() error { return create("FOO/sub/n", "g")(ctx, ns) }, 0},
		{"create in base", func() error { return create("d/n", "u")(ctx, ns) }, 0},
		{"rename inside graft", func() error { return ns.Rename(ctx, "FOO/x", "FOO/sub/x", false) }, 0},
		{"rename graft to base", func() error { return ns.Rename(ctx, "FOO/sub/x", "x", false) }, syscall.EXDEV},
		{"rename base to graft", func() error { return ns.Rename(ctx, "a", "FOO/a", false) }, syscall.EXDEV},
		{"rename between grafts", func() error { return ns.Rename(ctx, "m/graft", "FOO/graft", false) }, syscall.EXDEV},
		{"link graft to base", func() error { return ns.Link(ctx, "FOO/sub/x", "x") }, syscall.EXDEV},
		{"remove graft", func() error { return ns.Remove(ctx, "FOO") }, syscall.EBUSY},
		{"rmdir graft", func() error { return ns.Rmdir(ctx, "FOO") }, syscall.EBUSY},
		{"rename graft", func() error { return ns.Rename(ctx, "FOO", "BAR", false) }, syscall.EBUSY},
		{"rename onto graft", func() error { return ns.Rename(ctx, "d", "m", false) }, syscall.EBUSY},
		{"mkdir graft name", func() error { return ns.Mkdir(ctx, "FOO", 0o755) }, syscall.EEXIST},
		{"create graft name", func() error { return create("m", "")(ctx, ns) }, syscall.EEXIST},
		{"base name under a graft is hidden", func() error { _, err := ns.Lstat(ctx, "m/base"); return err }, syscall.ENOENT},
	} {
		if err := tc.op(); errnoOf(err) != tc.err {
			t.Errorf("%s: %v, want %v", tc.name, err, tc.err)
		}
	}
	if got := tree(t, fooDir); !slices.Equal(got, []string{"sub/", "sub/n=g", "sub/x=foo"}) {
		t.Errorf("FOO = %q", got)
	}
	if got := tree(t, bdirs[1]); !slices.Equal(got, []string{"b=2", "d/", "d/n=u"}) {
		t.Errorf("base branch 2 = %q", got)
	}
	if got := tree(t, bdirs[0]); !slices.Equal(got, []string{"a=1", "m/", "m/base="}) {
		t.Errorf("base branch 1 = %q", got)
	}

	// FOO goes down: still listed, EIO inside without asking it.
	h := ns.(remote.Health)
	changed := h.Changed()
	foo.set(false)
	waitChanged(t, changed)
	start := time.Now()
	if ents, err = ns.ReadDir(ctx, ""); err != nil || !slices.Contains(names(ents), "FOO") {
		t.Fatalf("root with FOO down = %v, %v", names(ents), err)
	}
	if a, err := ns.Lstat(ctx, "FOO"); err != nil || a.Mode&syscall.S_IFMT != syscall.S_IFDIR {
		t.Errorf("Lstat(FOO) while down = %v, %v", a, err)
	}
	if _, err := ns.ReadDir(ctx, "FOO"); errnoOf(err) != syscall.EIO {
		t.Errorf("ReadDir(FOO) while down: %v, want EIO", err)
	}
	if _, err := ns.Lstat(ctx, "FOO/sub"); errnoOf(err) != syscall.EIO {
		t.Errorf("Lstat(FOO/sub) while down: %v, want EIO", err)
	}
	if _, err := ns.StatFS(ctx, ""); err != nil {
		t.Errorf("StatFS with FOO down: %v", err)
	}
	if el, n := time.Since(start), foo.hung.Load(); el > 3*time.Second || n != 0 {
		t.Errorf("with FOO down: %v spent, %d calls reached it", el, n)
	}
	if !h.Up() {
		t.Error("Up = false with the base up")
	}
	// A change inside the base union is passed on, though the base stays up.
	changed = h.Changed()
	fl[1].set(false)
	waitChanged(t, changed)
	if _, err := ns.Lstat(ctx, "b"); errnoOf(err) != syscall.ENOENT {
		t.Errorf("Lstat(b) with its branch down: %v", err)
	}
}

// Without a base the root holds only the grafts and is read-only.
func TestGraftsWithoutBase(t *testing.T) {
	dir := t.TempDir()
	plant(t, dir, "f=x")
	ns, err := namespace.NewGraft(nil, []namespace.Graft{{Name: "G", NS: dial(t, "g", dir, false)}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ns.Close() })
	ctx := ctxT(t)
	a, err := ns.Lstat(ctx, "")
	if err != nil || a.Mode != syscall.S_IFDIR|0o555 {
		t.Fatalf("root = %o, %v", a.Mode, err)
	}
	if ents, err := ns.ReadDir(ctx, ""); err != nil || !slices.Equal(names(ents), []string{"G"}) {
		t.Fatalf("root = %v, %v", names(ents), err)
	}
	if got := readAll(t, ns, "G/f"); got != "x" {
		t.Fatalf("G/f = %q", got)
	}
	mode := uint32(0o777)
	for _, tc := range []struct {
		name string
		err  error
		want syscall.Errno
	}{
		{"create at root", create("n", "")(ctx, ns), syscall.EACCES},
		{"mkdir at root", ns.Mkdir(ctx, "n", 0o755), syscall.EACCES},
		{"symlink at root", ns.Symlink(ctx, "/t", "n"), syscall.EACCES},
		{"link to root", ns.Link(ctx, "G/f", "n"), syscall.EACCES},
		{"rename to root", ns.Rename(ctx, "G/f", "n", false), syscall.EACCES},
		{"lookup at root", func() error { _, err := ns.Lstat(ctx, "n"); return err }(), syscall.ENOENT},
		{"chmod root", ns.SetAttr(ctx, "", remote.SetAttr{Mode: &mode}), syscall.EPERM},
		{"mkdir graft", ns.Mkdir(ctx, "G", 0o755), syscall.EEXIST},
		{"rmdir graft", ns.Rmdir(ctx, "G"), syscall.EBUSY},
	} {
		if errnoOf(tc.err) != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, tc.err, tc.want)
		}
	}
	if got := tree(t, dir); !slices.Equal(got, []string{"f=x"}) {
		t.Errorf("graft = %q", got)
	}
}

func TestNewGraftRejects(t *testing.T) {
	r := dial(t, "g", t.TempDir(), false)
	for _, tc := range []struct {
		name   string
		grafts []namespace.Graft
		want   syscall.Errno
	}{
		{"nothing", nil, syscall.EINVAL},
		{"empty name", []namespace.Graft{{Name: "", NS: r}}, syscall.EINVAL},
		{"slash", []namespace.Graft{{Name: "a/b", NS: r}}, syscall.EINVAL},
		{"dot dot", []namespace.Graft{{Name: "..", NS: r}}, syscall.EINVAL},
		{"twice", []namespace.Graft{{Name: "a", NS: r}, {Name: "a", NS: r}}, syscall.EINVAL},
		{"no namespace", []namespace.Graft{{Name: "a"}}, syscall.EINVAL},
	} {
		if _, err := namespace.NewGraft(nil, tc.grafts); errnoOf(err) != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, err, tc.want)
		}
	}
}
