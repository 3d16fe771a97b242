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

var (
	_ remote.LinkAttrSetter = single{}
	_ remote.LinkAttrSetter = (*union)(nil)
	_ remote.LinkAttrSetter = (*graft)(nil)
)

func (s single) SetLinkAttr(ctx context.Context, p string, a remote.SetAttr) error {
	return setLinkAttrIn(ctx, s.Remote, p, a)
}

// SetLinkAttr changes the winning copy's link, as SetAttr.
func (u *union) SetLinkAttr(ctx context.Context, p string, a remote.SetAttr) error {
	w, _, err := u.find(ctx, p)
	if err != nil {
		return err
	}
	if err := u.writable(w, "setattr", p, true); err != nil {
		return err
	}
	defer u.layouts.drop(p, false)
	return setLinkAttrIn(ctx, u.br[w].Remote, p, a)
}

// SetLinkAttr changes a link of the base or of a graft; the root and the
// grafts themselves are directories.
func (g *graft) SetLinkAttr(ctx context.Context, p string, a remote.SetAttr) error {
	if p == "" || g.isGraft(p) {
		return remote.ErrNoLinkAttr
	}
	ns, rest, err := g.at("setattr", p)
	if err != nil {
		return err
	}
	return setLinkAttrIn(ctx, ns, rest, a)
}

func setLinkAttrIn(ctx context.Context, r remote.Remote, p string, a remote.SetAttr) error {
	ls, ok := r.(remote.LinkAttrSetter)
	if !ok {
		return remote.ErrNoLinkAttr
	}
	return ls.SetLinkAttr(ctx, p, a)
}
