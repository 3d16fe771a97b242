package namespace

import "sshfsm/internal/remote"

// Changes made on a server directly (an editor there, a build, git) reach
// the mount through a watcher on that server (internal/watch). The watcher
// knows paths below one branch's remote directory; this file says where
// such a path appears in the namespace, and lets the namespace drop what
// it caches about it.

// Tree is one branch's remote tree and where its root appears.
type Tree struct {
	// Prefix is the namespace path of the tree's root: "" for a single
	// branch and for every branch of a union, NAME for a graft. A path p
	// below the tree's root appears as Prefix/p (shadowed, in a union,
	// where a higher branch holds the name).
	Prefix string
	// Remote is the branch's remote as given to Single, NewUnion or
	// NewGraft.
	Remote remote.Remote
}

// Trees lists the trees of ns, the base's before the grafts'. A namespace
// built otherwise than by this package is one tree at the root.
func Trees(ns Namespace) []Tree {
	switch n := ns.(type) {
	case single:
		return []Tree{{Remote: n.Remote}}
	case *union:
		ts := make([]Tree, len(n.br))
		for i, b := range n.br {
			ts[i] = Tree{Remote: b.Remote}
		}
		return ts
	case *graft:
		var ts []Tree
		if n.base != nil {
			ts = Trees(n.base)
		}
		for _, name := range n.names {
			for _, t := range Trees(n.grafts[name].ns) {
				t.Prefix = joinPath(name, t.Prefix)
				ts = append(ts, t)
			}
		}
		return ts
	}
	return []Tree{{Remote: ns}}
}

// ChangeKind says what changed about a path.
type ChangeKind uint8

// Change kinds. Each includes the ones before it, except that a creation
// and a removal are each other's opposite.
const (
	ChangeAttr    ChangeKind = iota + 1 // attributes only (chmod, chown, touch)
	ChangeData                          // contents, and so size and times
	ChangeCreated                       // the name appeared, or now names another file
	ChangeRemoved                       // the name is gone
	// ChangeTree: anything at or below the path may have changed (the
	// watcher lost events, or was not running for a while).
	ChangeTree
)

// Change is a path of a namespace changed outside the mount.
type Change struct {
	Path string // namespace path; "" is the root
	Kind ChangeKind
	// Dir: the name is a directory: the one created, the one removed, the
	// one whose attributes changed; what is cached below it is stale too.
	// Always set for ChangeTree.
	Dir bool
}

// Then returns what c followed by next (of the same path) amounts to: the
// later of a creation and a removal, with what it says of the name's
// type; otherwise the larger kind.
func (c Change) Then(next Change) Change {
	switch {
	case c.Kind == ChangeTree || next.Kind == ChangeTree:
		return Change{Path: c.Path, Kind: ChangeTree, Dir: true}
	case next.Kind == ChangeCreated || next.Kind == ChangeRemoved:
		return Change{Path: c.Path, Kind: next.Kind, Dir: next.Dir}
	}
	return Change{Path: c.Path, Kind: max(c.Kind, next.Kind), Dir: c.Dir || next.Dir}
}

// Forget drops what ns caches about a path changed outside the mount: a
// union's layout of a name created, removed or replaced (a file may now
// shadow a lower branch's directory), and below a directory those of
// everything in it.
func Forget(ns Namespace, c Change) {
	if c.Kind < ChangeCreated {
		return
	}
	switch n := ns.(type) {
	case *union:
		n.layouts.drop(c.Path, c.Dir || c.Kind == ChangeTree)
	case *graft:
		if gr, rest := n.route(c.Path); gr != nil {
			c.Path = rest
			Forget(gr.ns, c)
		} else if n.base != nil {
			Forget(n.base, c)
		}
	}
}

// joinPath is join for a second path that may be "".
func joinPath(dir, p string) string {
	if p == "" {
		return dir
	}
	return join(dir, p)
}
