package namespace

import (
	"context"

	"sshfsm/internal/remote"
)

var (
	_ remote.NodeMaker = single{}
	_ remote.NodeMaker = (*union)(nil)
	_ remote.NodeMaker = (*graft)(nil)
)

// Mknod creates a special file when the branch can.
func (s single) Mknod(ctx context.Context, p string, mode, dev uint32) error {
	return mknodIn(ctx, s.Remote, p, mode, dev)
}

// Mknod creates a special file in the branch the create policy picks, as
// a new file goes there.
func (u *union) Mknod(ctx context.Context, p string, mode, dev uint32) error {
	return u.create(ctx, "mknod", p, func(b int) error { return mknodIn(ctx, u.br[b].Remote, p, mode, dev) })
}

// Mknod creates a special file in the base or in a graft.
func (g *graft) Mknod(ctx context.Context, p string, mode, dev uint32) error {
	ns, rest, err := g.creatable("mknod", p)
	if err != nil {
		return err
	}
	return mknodIn(ctx, ns, rest, mode, dev)
}

func mknodIn(ctx context.Context, r remote.Remote, p string, mode, dev uint32) error {
	nm, ok := r.(remote.NodeMaker)
	if !ok {
		return remote.ErrNoNodes
	}
	return nm.Mknod(ctx, p, mode, dev)
}
