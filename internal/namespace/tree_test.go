package namespace

import (
	"context"
	"errors"
	"testing"

	"sshfsm/internal/remote"
)

// treeRemote is a remote whose only working call is ListTree.
type treeRemote struct {
	remote.Remote
	got string
}

func (r *treeRemote) ListTree(ctx context.Context, dir string, depth int, fn func(string, []remote.DirEntry)) error {
	r.got = dir
	fn(dir, []remote.DirEntry{{Name: "x"}})
	return nil
}

func TestSingleForwardsListTree(t *testing.T) {
	r := &treeRemote{}
	tl, ok := Single(r).(remote.TreeLister)
	if !ok {
		t.Fatal("a single-branch namespace is not a TreeLister")
	}
	var reported []string
	err := tl.ListTree(context.Background(), "a/b", 2, func(d string, _ []remote.DirEntry) { reported = append(reported, d) })
	if err != nil || r.got != "a/b" || len(reported) != 1 {
		t.Fatalf("err %v, asked %q, reported %q", err, r.got, reported)
	}
	plain := Single(struct{ remote.Remote }{})
	if err := plain.(remote.TreeLister).ListTree(context.Background(), "", 1, nil); !errors.Is(err, remote.ErrTreeUnsupported) {
		t.Fatalf("branch without tree listings: %v", err)
	}
}
