package namespace

import (
	"context"

	"sshfsm/internal/remote"
)

var _ remote.TreeLister = single{}

// ListTree lists a subtree in one request when the branch can.
func (s single) ListTree(ctx context.Context, dir string, depth int, fn func(string, []remote.DirEntry)) error {
	if tl, ok := s.Remote.(remote.TreeLister); ok {
		return tl.ListTree(ctx, dir, depth, fn)
	}
	return remote.ErrTreeUnsupported
}
