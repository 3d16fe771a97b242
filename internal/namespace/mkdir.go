package namespace

import (
	"context"

	"sshfsm/internal/remote"
)

// MkdirAttr makes directory p and returns its attributes: learned while
// making it when the branch can (remote.DirMaker), else asked after.
func MkdirAttr(ctx context.Context, ns Namespace, p string, perm uint32) (remote.Attr, error) {
	switch v := ns.(type) {
	case single:
		if dm, ok := v.Remote.(remote.DirMaker); ok {
			return dm.MkdirAttr(ctx, p, perm)
		}
	case *graft:
		sub, rest, err := v.creatable("mkdir", p)
		if err != nil {
			return remote.Attr{}, err
		}
		return MkdirAttr(ctx, sub, rest, perm)
	}
	if err := ns.Mkdir(ctx, p, perm); err != nil {
		return remote.Attr{}, err
	}
	// The change happened: an interrupt must not hide it now. The
	// deadline still holds: the mkdir and the look share it.
	lctx := context.WithoutCancel(ctx)
	if dl, ok := ctx.Deadline(); ok {
		var cancel context.CancelFunc
		lctx, cancel = context.WithDeadline(lctx, dl)
		defer cancel()
	}
	return ns.Lstat(lctx, p)
}
