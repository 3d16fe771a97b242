package namespace_test

import (
	"os"
	"testing"

	"sshfsm/internal/namespace"
)

// Origin names the branch whose copy of a path the union shows: two
// branches' files of the same name have different origins, and a file
// only one branch holds (in a directory only it holds) has that one's.
func TestOrigin(t *testing.T) {
	ns, _ := setup(t, [][]string{
		{"both=b1", "m/", "m/a=b1", "only1/", "only1/x="},
		{"both=b2", "two=b2", "m/", "m/a=b2", "m/b="},
	}, nil, namespace.UnionOptions{})
	ctx := ctxT(t)
	origin := func(p string) string {
		t.Helper()
		o, err := namespace.Origin(ctx, ns, p)
		if err != nil {
			t.Fatalf("Origin(%q): %v", p, err)
		}
		return o
	}
	first, second := origin("both"), origin("two")
	if first == second || first == "" || second == "" {
		t.Errorf("origins of the two branches' files: %q and %q", first, second)
	}
	for p, want := range map[string]string{"m/a": first, "m/b": second, "only1/x": first} {
		if got := origin(p); got != want {
			t.Errorf("Origin(%q) = %q, want %q", p, got, want)
		}
	}
	single := namespace.Single(dial(t, "s", t.TempDir(), false))
	if o, err := namespace.Origin(ctx, single, "f"); o != "" || err != nil {
		t.Errorf("a single branch's origin: %q, %v", o, err)
	}
}

// OpenFrom names the branch whose file it opened as Origin names it.
func TestOpenFromNamesTheOrigin(t *testing.T) {
	ns, _ := setup(t, [][]string{
		{"both=b1", "m/", "m/a=b1"},
		{"both=b2", "two=b2", "m/", "m/b="},
	}, nil, namespace.UnionOptions{})
	ctx := ctxT(t)
	for _, p := range []string{"both", "two", "m/a", "m/b"} {
		f, from, err := namespace.OpenFrom(ctx, ns, p, os.O_RDONLY, 0)
		if err != nil {
			t.Fatalf("OpenFrom(%q): %v", p, err)
		}
		f.Close(ctx)
		if want, err := namespace.Origin(ctx, ns, p); err != nil || from != want || from == "" {
			t.Errorf("OpenFrom(%q) names %q, Origin %q (%v)", p, from, want, err)
		}
	}
}
