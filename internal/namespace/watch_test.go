package namespace_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"sshfsm/internal/namespace"
)

func TestTrees(t *testing.T) {
	a := dial(t, "a", t.TempDir(), false)
	b := dial(t, "b", t.TempDir(), false)
	c := dial(t, "c", t.TempDir(), false)
	d := dial(t, "d", t.TempDir(), false)
	u, err := namespace.NewUnion([]namespace.Branch{{Name: "a", Remote: a}, {Name: "b", Remote: b}}, namespace.UnionOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ro, err := namespace.NewUnion([]namespace.Branch{{Name: "d", Remote: d, ReadOnly: true}}, namespace.UnionOptions{})
	if err != nil {
		t.Fatal(err)
	}
	g, err := namespace.NewGraft(u, []namespace.Graft{{Name: "zz", NS: c}, {Name: "ro", NS: ro}})
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		ns   namespace.Namespace
		want []namespace.Tree
	}{
		{"single", namespace.Single(a), []namespace.Tree{{Prefix: "", Remote: a}}},
		{"union", u, []namespace.Tree{{Prefix: "", Remote: a}, {Prefix: "", Remote: b}}},
		// The base first, then the grafts by name; a read-only graft is
		// a union of its one branch.
		{"graft", g, []namespace.Tree{{Prefix: "", Remote: a}, {Prefix: "", Remote: b},
			{Prefix: "ro", Remote: d}, {Prefix: "zz", Remote: c}}},
		{"other", a, []namespace.Tree{{Prefix: "", Remote: a}}},
	}
	for _, c := range cases {
		got := namespace.Trees(c.ns)
		if !slices.Equal(got, c.want) {
			t.Errorf("%s: got %v, want %v", c.name, got, c.want)
		}
	}
}

// A union remembers which branches hold a directory; a directory created
// on a server directly shows in the union only once Forget dropped that.
func TestForgetDropsLayouts(t *testing.T) {
	ctx := context.Background()
	hi, lo := t.TempDir(), t.TempDir()
	plant(t, lo, "d/x=1")
	u, err := namespace.NewUnion([]namespace.Branch{{Name: "hi", Remote: dial(t, "hi", hi, false)},
		{Name: "lo", Remote: dial(t, "lo", lo, false)}}, namespace.UnionOptions{LayoutTTL: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	g, err := namespace.NewGraft(nil, []namespace.Graft{{Name: "g", NS: u}})
	if err != nil {
		t.Fatal(err)
	}
	names := func(ns namespace.Namespace, dir string) []string {
		t.Helper()
		ents, err := ns.ReadDir(ctx, dir)
		if err != nil {
			t.Fatalf("readdir %s: %v", dir, err)
		}
		var out []string
		for _, e := range ents {
			out = append(out, e.Name)
		}
		return out
	}
	if got := names(u, "d"); !slices.Equal(got, []string{"x"}) {
		t.Fatalf("d: %v", got)
	}
	plant(t, hi, "d/y=2") // on the server, behind the union's back
	if got := names(u, "d"); !slices.Equal(got, []string{"x"}) {
		t.Fatalf("d with its layout kept: %v (the layout is not cached?)", got)
	}
	// Attribute and content changes leave layouts alone.
	namespace.Forget(g, namespace.Change{Path: "g/d", Kind: namespace.ChangeData})
	if got := names(u, "d"); !slices.Equal(got, []string{"x"}) {
		t.Fatalf("d after a content change: %v", got)
	}
	namespace.Forget(g, namespace.Change{Path: "g/d", Kind: namespace.ChangeCreated, Dir: true})
	if got := names(u, "d"); !slices.Equal(got, []string{"x", "y"}) {
		t.Errorf("d after Forget through the graft: %v", got)
	}
}

func TestChangeThen(t *testing.T) {
	ch := func(k namespace.ChangeKind, dir bool) namespace.Change {
		return namespace.Change{Path: "p", Kind: k, Dir: dir}
	}
	cases := []struct{ a, b, want namespace.Change }{
		{ch(namespace.ChangeAttr, false), ch(namespace.ChangeData, false), ch(namespace.ChangeData, false)},
		{ch(namespace.ChangeData, false), ch(namespace.ChangeAttr, false), ch(namespace.ChangeData, false)},
		{ch(namespace.ChangeCreated, false), ch(namespace.ChangeData, false), ch(namespace.ChangeCreated, false)},
		{ch(namespace.ChangeCreated, false), ch(namespace.ChangeRemoved, false), ch(namespace.ChangeRemoved, false)},
		// A directory replaced by a file, and the reverse.
		{ch(namespace.ChangeRemoved, true), ch(namespace.ChangeCreated, false), ch(namespace.ChangeCreated, false)},
		{ch(namespace.ChangeRemoved, false), ch(namespace.ChangeCreated, true), ch(namespace.ChangeCreated, true)},
		{ch(namespace.ChangeCreated, true), ch(namespace.ChangeAttr, true), ch(namespace.ChangeCreated, true)},
		{ch(namespace.ChangeTree, true), ch(namespace.ChangeCreated, false), ch(namespace.ChangeTree, true)},
		{ch(namespace.ChangeAttr, false), ch(namespace.ChangeTree, true), ch(namespace.ChangeTree, true)},
	}
	for _, c := range cases {
		if got := c.a.Then(c.b); got != c.want {
			t.Errorf("%+v then %+v: %+v, want %+v", c.a, c.b, got, c.want)
		}
	}
}
