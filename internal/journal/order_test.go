package journal

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

// parseChanges turns lines like "mkdir a", "rename a c", "b2:create x"
// (branch b2; default b1) into changes numbered from 1.
func parseChanges(t *testing.T, lines []string) []*Change {
	t.Helper()
	ops := map[string]Op{
		"create": Create, "write": Write, "setattr": Setattr, "mkdir": Mkdir, "symlink": Symlink,
		"link": Link, "rename": Rename, "unlink": Unlink, "rmdir": Rmdir,
	}
	var out []*Change
	for i, l := range lines {
		branch := "b1"
		if b, rest, ok := strings.Cut(l, ":"); ok {
			branch, l = b, rest
		}
		f := strings.Fields(l)
		op, ok := ops[f[0]]
		if !ok || len(f) < 2 {
			t.Fatalf("bad change %q", l)
		}
		c := &Change{Seq: uint64(i + 1), Op: op, Host: "h", Branch: branch, Path: "/" + f[1]}
		if len(f) > 2 {
			if op == Symlink {
				c.Target = f[2]
			} else {
				c.NewPath = "/" + f[2]
			}
		}
		out = append(out, c)
	}
	return out
}

// waves drains o, all ready changes at once, and returns the sequence
// numbers of each round.
func waves(t *testing.T, o *Order) [][]uint64 {
	t.Helper()
	var out [][]uint64
	for o.Len() > 0 {
		next := o.Next()
		if len(next) == 0 {
			t.Fatalf("%d changes pending, none ready", o.Len())
		}
		var w []uint64
		for _, c := range next {
			w = append(w, c.Seq)
		}
		out = append(out, w)
		// Finish them last first: the order of completions in a wave
		// must not matter.
		for i := len(w) - 1; i >= 0; i-- {
			if !o.Done(w[i]) {
				t.Fatalf("Done(%d) refused", w[i])
			}
		}
	}
	return out
}

func TestOrderWaves(t *testing.T) {
	for _, tc := range []struct {
		name    string
		changes []string
		want    string
	}{
		{"tree then rename", []string{"mkdir a", "create a/b", "write a/b", "rename a c", "unlink c/b"},
			"[[1] [2] [3] [4] [5]]"},
		{"independent files", []string{"create x", "create y", "write x", "write y", "setattr x"},
			"[[1 2] [3 4] [5]]"},
		{"siblings under one new directory", []string{"mkdir d", "create d/a", "create d/b", "write d/a", "write d/b"},
			"[[1] [2 3] [4 5]]"},
		{"a name prefix is not a parent", []string{"mkdir a", "create ab", "create a/b"},
			"[[1 2] [3]]"},
		{"rename chain", []string{"rename a b", "rename b c", "create a", "write c"},
			"[[1] [2 3] [4]]"},
		{"create in the destination of a rename", []string{"create x/f", "rename x y", "create y/g", "create x/h"},
			"[[1] [2] [3 4]]"},
		{"rmdir waits for what is inside", []string{"create d/f", "unlink d/f", "create e", "rmdir d"},
			"[[1 3] [2] [4]]"},
		{"directory setattr waits for its children", []string{"create d/f", "create d/g", "setattr d", "write d/f"},
			"[[1 2] [3] [4]]"},
		{"link joins both names", []string{"create a", "create b", "link a c", "write c", "write b"},
			"[[1 2] [3 5] [4]]"},
		{"symlink target is not a path", []string{"create t", "symlink s t", "write t"},
			"[[1 2] [3]]"},
		{"branches are separate trees", []string{"mkdir a", "b2:mkdir a", "create a/f", "b2:create a/f"},
			"[[1 2] [3 4]]"},
		{"root waits for everything", []string{"create a", "mkdir b", "setattr .", "create c"},
			"[[1 2] [3] [4]]"},
		{"rename into own subtree names", []string{"mkdir a", "rename a a/b", "create a/b/c"},
			"[[1] [2] [3]]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := NewOrder()
			for _, c := range parseChanges(t, tc.changes) {
				o.Add(c)
			}
			if got := fmt.Sprint(waves(t, o)); got != tc.want {
				t.Errorf("waves %s, want %s", got, tc.want)
			}
			if len(o.trees) != 0 {
				t.Errorf("%d trees left after everything is done", len(o.trees))
			}
		})
	}
}

// TestOrderAddWhileDraining: changes added while earlier ones are in
// flight wait for those, not only for the ones not yet handed out.
func TestOrderAddWhileDraining(t *testing.T) {
	cs := parseChanges(t, []string{"mkdir a", "create a/f", "create b", "write a/f"})
	o := NewOrder()
	o.Add(cs[0])
	if got := o.Next(); len(got) != 1 || got[0].Seq != 1 {
		t.Fatalf("first Next: %v", got)
	}
	o.Add(cs[1])
	o.Add(cs[2])
	if got := seqsOf(o.Next()); !slices.Equal(got, []uint64{3}) {
		t.Fatalf("with mkdir in flight: %v, want [3]", got)
	}
	if o.Done(2) {
		t.Fatal("Done of a change not handed out accepted")
	}
	o.Done(1)
	o.Add(cs[3])
	if got := seqsOf(o.Next()); !slices.Equal(got, []uint64{2}) {
		t.Fatalf("after mkdir done: %v, want [2]", got)
	}
	o.Done(2)
	o.Done(3)
	if got := seqsOf(o.Next()); !slices.Equal(got, []uint64{4}) {
		t.Fatalf("last: %v, want [4]", got)
	}
	o.Done(4)
	if o.Len() != 0 || len(o.trees) != 0 {
		t.Fatalf("left: %d changes, %d trees", o.Len(), len(o.trees))
	}
}

func TestOrderWaits(t *testing.T) {
	o := NewOrder()
	for _, c := range parseChanges(t, []string{"mkdir a", "create a/f", "write a/f", "create a/g", "create x", "b2:create a/f"}) {
		o.Add(c)
	}
	for _, tc := range []struct {
		path string
		want []uint64
	}{
		{"/a/f", []uint64{1, 3}},  // its last change, and its directory's
		{"/a/new", []uint64{1}},   // a name with no change: its directory's
		{"/a", []uint64{1, 3, 4}}, // a directory: itself and what is in it
		{"/x", []uint64{5}},
		{"/y/z", []uint64{}},            // nothing related
		{"/", []uint64{1, 3, 4, 5}},     // the root: everything of its branch
		{"/a/f/deeper", []uint64{1, 3}}, // below a file: the last change of each name above
	} {
		got := o.Waits("h", "b1", tc.path)
		slices.Sort(got)
		if !slices.Equal(got, tc.want) && !(len(got) == 0 && len(tc.want) == 0) {
			t.Errorf("Waits(%s) = %v, want %v", tc.path, got, tc.want)
		}
	}
	if got := o.Waits("h", "b3", "/a"); len(got) != 0 {
		t.Errorf("Waits on a branch with nothing pending: %v", got)
	}
}

func seqsOf(cs []*Change) []uint64 {
	var out []uint64
	for _, c := range cs {
		out = append(out, c.Seq)
	}
	return out
}
