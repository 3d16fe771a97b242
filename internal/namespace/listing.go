package namespace

import (
	"cmp"
	"slices"
	"strings"
	"syscall"

	"sshfsm/internal/remote"
)

// copyRef points at one branch's copy of a name in the listings of a
// directory.
type copyRef struct {
	name string
	br   int32 // branch
	i    int32 // index in that branch's listing
}

// merge combines the listings of dir's branches (by branch; nil for the
// branches not listed) into one sorted by name, and stores the layouts of
// the subdirectories they reveal, unless the cache changed since gen.
//
// It sorts references to the entries by name, then branch, rather than
// keeping a map of names: each name's copies end up adjacent with the
// winning one first, and nothing is allocated per name but the layout
// of each subdirectory, which matters for directories of thousands of
// files.
func (u *union) merge(dir string, lists [][]remote.DirEntry, gen uint64) []remote.DirEntry {
	return u.mergeWith(dir, lists, gen, nil)
}

// mergeWith is merge that also hands each subdirectory's layout to sub,
// when sub is not nil.
func (u *union) mergeWith(dir string, lists [][]remote.DirEntry, gen uint64, sub func(name string, l dirLayout)) []remote.DirEntry {
	refs := sortedRefs(lists)
	out := make([]remote.DirEntry, 0, len(refs))
	for lo := 0; lo < len(refs); {
		hi := lo + 1
		for hi < len(refs) && refs[hi].name == refs[lo].name {
			hi++
		}
		w := lists[refs[lo].br][refs[lo].i]
		out = append(out, w)
		if isDir(w.Attr) {
			l := runLayout(lists, refs[lo:hi])
			u.layouts.put(join(dir, w.Name), l, gen)
			if sub != nil {
				sub(w.Name, l)
			}
		}
		lo = hi
	}
	return out
}

// sortedRefs returns a reference to every entry of lists but "." and "..",
// sorted by name, then branch.
func sortedRefs(lists [][]remote.DirEntry) []copyRef {
	n := 0
	for _, l := range lists {
		n += len(l)
	}
	refs := make([]copyRef, 0, n)
	for b, l := range lists {
		for i, e := range l {
			if e.Name != "." && e.Name != ".." {
				refs = append(refs, copyRef{e.Name, int32(b), int32(i)})
			}
		}
	}
	slices.SortFunc(refs, func(x, y copyRef) int {
		if c := strings.Compare(x.name, y.name); c != 0 {
			return c
		}
		return cmp.Compare(x.br, y.br)
	})
	return refs
}

// runLayout is the layout of a directory whose copies are run, in branch
// order, the first a directory: the branches from it down to the first
// copy that is not a directory.
func runLayout(lists [][]remote.DirEntry, run []copyRef) dirLayout {
	l := dirLayout{stop: maxBranches, attr: lists[run[0].br][run[0].i].Attr}
	for _, r := range run {
		if !isDir(lists[r.br][r.i].Attr) {
			l.stop = int(r.br)
			break
		}
		l.in = l.in.with(int(r.br))
	}
	return l
}

func isDir(a remote.Attr) bool { return a.Mode&syscall.S_IFMT == syscall.S_IFDIR }
