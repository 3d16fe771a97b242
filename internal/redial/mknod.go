package redial

import (
	"context"

	"sshfsm/internal/remote"
)

var _ remote.NodeMaker = (*Remote)(nil)

// Mknod creates a special file through the connected host.
func (r *Remote) Mknod(ctx context.Context, p string, mode, dev uint32) error {
	t, err := r.remote(ctx)
	if err != nil {
		return err
	}
	nm, ok := t.(remote.NodeMaker)
	if !ok {
		return remote.ErrNoNodes
	}
	return nm.Mknod(ctx, p, mode, dev)
}

var _ remote.LinkAttrSetter = (*Remote)(nil)

// SetLinkAttr changes a link's own attributes through the connected host.
func (r *Remote) SetLinkAttr(ctx context.Context, p string, a remote.SetAttr) error {
	t, err := r.remote(ctx)
	if err != nil {
		return err
	}
	ls, ok := t.(remote.LinkAttrSetter)
	if !ok {
		return remote.ErrNoLinkAttr
	}
	return ls.SetLinkAttr(ctx, p, a)
}
