package namespace_test

import (
	"context"
	"os"
	"slices"
	"syscall"
	"testing"
	"time"

	"sshfsm/internal/namespace"
	"sshfsm/internal/remote"
)

// flakyUnion builds a union whose branches can be taken down.
func flakyUnion(t *testing.T, trees [][]string, o namespace.UnionOptions) (namespace.Namespace, []*flaky, []string) {
	t.Helper()
	var brs []namespace.Branch
	var fl []*flaky
	var dirs []string
	for i, spec := range trees {
		dir := t.TempDir()
		plant(t, dir, spec...)
		f := newFlaky(dial(t, "b", dir, false))
		brs = append(brs, namespace.Branch{Name: "b" + string(rune('1'+i)), Remote: f})
		fl = append(fl, f)
		dirs = append(dirs, dir)
	}
	ns, err := namespace.NewUnion(brs, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ns.Close() })
	return ns, fl, dirs
}

// waitChanged waits for a Changed channel to fire.
func waitChanged(t *testing.T, ch <-chan struct{}) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(5 * time.Second):
		t.Fatal("Changed did not fire")
	}
}

// A branch that is down is absent: its names vanish, the others answer
// at once, no call reaches it, creates avoid it; its names return with it.
func TestDownBranchIsSkipped(t *testing.T) {
	ns, fl, dirs := flakyUnion(t, [][]string{
		{"one=1", "both=1", "d/", "d/x="},
		{"two=2", "both=2", "d/", "d/y=", "only2/", "only2/z="},
	}, namespace.UnionOptions{Create: namespace.FF})
	ctx := ctxT(t) // a call that reached the down branch would hang until this ends
	changed := ns.(remote.Health).Changed()
	fl[0].set(false)
	waitChanged(t, changed)
	start := time.Now()

	if _, err := ns.Lstat(ctx, "one"); errnoOf(err) != syscall.ENOENT {
		t.Errorf("Lstat(one) with its branch down: %v, want ENOENT", err)
	}
	if got := readAll(t, ns, "both"); got != "2" {
		t.Errorf("both = %q, want branch 2's copy", got)
	}
	ents, err := ns.ReadDir(ctx, "")
	if err != nil || !slices.Equal(names(ents), []string{"both", "d", "only2", "two"}) {
		t.Errorf("root = %v, %v", names(ents), err)
	}
	ents, err = ns.ReadDir(ctx, "d")
	if err != nil || !slices.Equal(names(ents), []string{"y"}) {
		t.Errorf("d = %v, %v", names(ents), err)
	}
	// ff would pick branch 1; it is down, so branch 2 gets the name.
	if err := create("new", "n")(ctx, ns); err != nil {
		t.Fatal(err)
	}
	// Remove reaches only the branches that are up: branch 1's copy stays.
	if err := ns.Remove(ctx, "both"); err != nil {
		t.Fatal(err)
	}
	if _, err := ns.StatFS(ctx, ""); err != nil {
		t.Errorf("StatFS: %v", err)
	}
	if el := time.Since(start); el > 3*time.Second {
		t.Errorf("calls took %v with a branch down", el)
	}
	if n := fl[0].hung.Load(); n != 0 {
		t.Errorf("%d calls reached the branch that is down", n)
	}
	if got := tree(t, dirs[0]); !slices.Equal(got, []string{"both=1", "d/", "d/x=", "one=1"}) {
		t.Errorf("branch 1 = %q", got)
	}
	if got := tree(t, dirs[1]); !slices.Equal(got, []string{"d/", "d/y=", "new=n", "only2/", "only2/z=", "two=2"}) {
		t.Errorf("branch 2 = %q", got)
	}

	changed = ns.(remote.Health).Changed()
	fl[0].set(true)
	waitChanged(t, changed)
	if got := readAll(t, ns, "both"); got != "1" {
		t.Errorf("after the branch came back, both = %q; want its copy again", got)
	}
	ents, err = ns.ReadDir(ctx, "d")
	if err != nil || !slices.Equal(names(ents), []string{"x", "y"}) {
		t.Errorf("d = %v, %v; want both branches again", names(ents), err)
	}
}

// The union's Health: Up while any branch is, Changed only when the set
// of branches that are up changes; with none up, calls fail with EIO.
func TestUnionHealth(t *testing.T) {
	ns, fl, _ := flakyUnion(t, [][]string{{"a="}, {"b="}}, namespace.UnionOptions{})
	h := ns.(remote.Health)
	if !h.Up() {
		t.Fatal("Up = false with every branch up")
	}
	ch := h.Changed()
	fl[1].set(true) // a reconnect: Changed of the branch fires, its state stays
	select {
	case <-ch:
		t.Fatal("Changed fired though no branch changed state")
	case <-time.After(200 * time.Millisecond):
	}
	fl[1].set(false)
	waitChanged(t, ch)
	if !h.Up() {
		t.Fatal("Up = false with one branch up")
	}
	ch = h.Changed()
	fl[0].set(false)
	waitChanged(t, ch)
	if h.Up() {
		t.Fatal("Up = true with no branch up")
	}
	ctx := ctxT(t)
	if _, err := ns.Lstat(ctx, "a"); errnoOf(err) != syscall.EIO {
		t.Errorf("Lstat with no branch up: %v, want EIO", err)
	}
	if _, err := ns.ReadDir(ctx, ""); errnoOf(err) != syscall.EIO {
		t.Errorf("ReadDir with no branch up: %v, want EIO", err)
	}
	ch = h.Changed()
	fl[1].set(true)
	waitChanged(t, ch)
	if a, err := ns.Lstat(ctx, "b"); err != nil || a.Mode&syscall.S_IFMT != syscall.S_IFREG {
		t.Errorf("Lstat(b) after its branch came back: %v", err)
	}
}

// What the union caches about directories follows its own changes and
// the branches' health, even with a long LayoutTTL.
func TestLayoutCoherence(t *testing.T) {
	ns, fl, dirs := flakyUnion(t, [][]string{
		{"m/", "m/a=", "x=file", "r/", "r/in="},
		{"m/", "m/b=", "x/", "x/low=", "s/", "s/deep/", "s/deep/f="},
	}, namespace.UnionOptions{LayoutTTL: time.Hour})
	ctx := ctxT(t)
	list := func(p string, want ...string) {
		t.Helper()
		ents, err := ns.ReadDir(ctx, p)
		if err != nil || !slices.Equal(names(ents), want) {
			t.Fatalf("ReadDir(%s) = %v, %v; want %v", p, names(ents), err, want)
		}
	}
	list("", "m", "r", "s", "x")
	list("m", "a", "b")
	// Removing the file reveals the lower directory.
	if err := ns.Remove(ctx, "x"); err != nil {
		t.Fatal(err)
	}
	list("x", "low")
	// A renamed directory is found under its new name, not its old one.
	if err := ns.Rename(ctx, "r", "r2", false); err != nil {
		t.Fatal(err)
	}
	list("r2", "in")
	if _, err := ns.ReadDir(ctx, "r"); errnoOf(err) != syscall.ENOENT {
		t.Fatalf("ReadDir(r) after rename: %v", err)
	}
	// Emptied and removed, then made again in branch 1 only.
	for _, p := range []string{"m/a", "m/b"} {
		if err := ns.Remove(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	if err := ns.Rmdir(ctx, "m"); err != nil {
		t.Fatal(err)
	}
	if err := ns.Mkdir(ctx, "m", 0o755); err != nil {
		t.Fatal(err)
	}
	list("m")
	if got := tree(t, dirs[1]); slices.Contains(got, "m/") {
		t.Fatalf("branch 2 still holds m: %q", got)
	}
	// A directory probed while its branch was down is probed again when
	// the branch returns.
	changed := ns.(remote.Health).Changed()
	fl[1].set(false)
	waitChanged(t, changed)
	if _, err := ns.ReadDir(ctx, "s/deep"); errnoOf(err) != syscall.ENOENT {
		t.Fatalf("ReadDir(s/deep) with its branch down: %v", err)
	}
	changed = ns.(remote.Health).Changed()
	fl[1].set(true)
	waitChanged(t, changed)
	list("s/deep", "f")
}

// slow wraps a remote without Health whose lookups and listings hang
// until their context ends, as a host that stopped answering but is not
// known to be down yet.
type slow struct {
	remote.Remote
}

func (s slow) Lstat(ctx context.Context, p string) (remote.Attr, error) {
	<-ctx.Done()
	return remote.Attr{}, ctx.Err()
}

func (s slow) ReadDir(ctx context.Context, p string) ([]remote.DirEntry, error) {
	<-ctx.Done()
	return nil, ctx.Err()
}

// A lookup answers as soon as a higher branch decides it, without waiting
// for a lower branch that hangs; where the hanging branch's answer
// matters, the call ends with its context.
func TestAnswerAsSoonAsDecided(t *testing.T) {
	d1, d2 := t.TempDir(), t.TempDir()
	plant(t, d1, "one=1", "d/", "d/x=")
	ns, err := namespace.NewUnion([]namespace.Branch{
		{Name: "b1", Remote: dial(t, "b1", d1, false)},
		{Name: "b2", Remote: slow{dial(t, "b2", d2, false)}},
	}, namespace.UnionOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ns.Close() })
	ctx := ctxT(t)
	start := time.Now()
	if a, err := ns.Lstat(ctx, "one"); err != nil || a.Size != 1 {
		t.Fatalf("Lstat(one) = %v, %v", a, err)
	}
	if got := readAll(t, ns, "one"); got != "1" {
		t.Fatalf("one = %q", got)
	}
	if el := time.Since(start); el > 2*time.Second {
		t.Fatalf("answers took %v behind a hanging lower branch", el)
	}
	short, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	start = time.Now()
	if _, err := ns.Lstat(short, "two"); errnoOf(err) != syscall.ETIMEDOUT {
		t.Errorf("Lstat(two): %v, want ETIMEDOUT", err)
	}
	if _, err := ns.ReadDir(short, ""); errnoOf(err) != syscall.ETIMEDOUT {
		t.Errorf("ReadDir: %v, want ETIMEDOUT", err)
	}
	if el := time.Since(start); el > 2*time.Second {
		t.Errorf("calls took %v past their deadline", el)
	}
	cancelled, stop := context.WithCancel(ctx)
	stop()
	if _, err := ns.Lstat(cancelled, "d/x"); errnoOf(err) != syscall.EINTR {
		t.Errorf("Lstat with a cancelled context: %v, want EINTR", err)
	}
}

// A directory removed behind the union's back answers ENOENT, not an
// empty listing, though its layout was cached.
func TestReadDirOfVanishedDirectory(t *testing.T) {
	ns, dirs := setup(t, [][]string{{"d/"}, {"d/"}}, nil, namespace.UnionOptions{LayoutTTL: time.Hour})
	ctx := ctxT(t)
	if ents, err := ns.ReadDir(ctx, "d"); err != nil || len(ents) != 0 {
		t.Fatalf("ReadDir(d) = %v, %v", names(ents), err)
	}
	for _, d := range dirs {
		if err := os.Remove(d + "/d"); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := ns.ReadDir(ctx, "d"); errnoOf(err) != syscall.ENOENT {
		t.Fatalf("ReadDir(d) after it went: %v, want ENOENT", err)
	}
}

// failsOnce is a branch that is up until its first call, which fails with
// EHOSTUNREACH and takes it down, as a delay_connect host whose first dial
// fails does.
type failsOnce struct{ *flaky }

func (f failsOnce) fail() error {
	if !f.Up() {
		return nil
	}
	f.set(false)
	return syscall.EHOSTUNREACH
}

func (f failsOnce) Lstat(ctx context.Context, p string) (remote.Attr, error) {
	if err := f.fail(); err != nil {
		return remote.Attr{}, err
	}
	return f.flaky.Lstat(ctx, p)
}

func (f failsOnce) ReadDir(ctx context.Context, p string) ([]remote.DirEntry, error) {
	if err := f.fail(); err != nil {
		return nil, err
	}
	return f.flaky.ReadDir(ctx, p)
}

// A branch that fails a call and is down by then counts as absent for
// that call, as if it had been down before it: the other branches answer.
// Only when no branch answers does the call fail, with its error.
func TestBranchDownDuringCall(t *testing.T) {
	ctx := ctxT(t)
	union := func(down bool) (namespace.Namespace, []failsOnce) {
		var brs []namespace.Branch
		var fl []failsOnce
		for i, spec := range [][]string{{"one=1", "d/", "d/x="}, {"two=2", "d/", "d/y="}} {
			dir := t.TempDir()
			plant(t, dir, spec...)
			f := failsOnce{newFlaky(dial(t, "b", dir, false))}
			if i == 0 || down {
				brs = append(brs, namespace.Branch{Name: "b" + string(rune('1'+i)), Remote: f})
			} else {
				brs = append(brs, namespace.Branch{Name: "b2", Remote: f.flaky})
			}
			fl = append(fl, f)
		}
		ns, err := namespace.NewUnion(brs, namespace.UnionOptions{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { ns.Close() })
		return ns, fl
	}

	ns, _ := union(false)
	ents, err := ns.ReadDir(ctx, "")
	if err != nil || !slices.Equal(names(ents), []string{"d", "two"}) {
		t.Errorf("root with branch 1 failing and going down: %v, %v; want branch 2's names", names(ents), err)
	}
	ns, _ = union(false)
	if a, err := ns.Lstat(ctx, "d/y"); err != nil || a.Mode&syscall.S_IFMT != syscall.S_IFREG {
		t.Errorf("Lstat(d/y) with branch 1 failing and going down: %+v, %v", a, err)
	}
	ns, _ = union(false)
	if _, err := ns.Lstat(ctx, "one"); errnoOf(err) != syscall.ENOENT {
		t.Errorf("Lstat(one) with its branch failing and going down: %v, want ENOENT as when it was down", err)
	}

	ns, _ = union(true)
	if _, err := ns.ReadDir(ctx, ""); errnoOf(err) != syscall.EHOSTUNREACH {
		t.Errorf("root with every branch failing: %v, want EHOSTUNREACH", err)
	}
	ns, _ = union(true)
	if _, err := ns.Lstat(ctx, "d/x"); errnoOf(err) != syscall.EHOSTUNREACH {
		t.Errorf("Lstat(d/x) with every branch failing: %v, want EHOSTUNREACH", err)
	}
}
