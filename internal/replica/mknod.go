package replica

import (
	"context"
	"errors"
	"io/fs"

	"sshfsm/internal/remote"
)

var _ remote.NodeMaker = (*Set)(nil)

// Mknod creates a special file through one member, like any write. A
// re-sent creation that finds a node of the same type took effect the
// first time.
func (s *Set) Mknod(ctx context.Context, p string, mode, dev uint32) error {
	return s.write(ctx, "mknod", p, func(ctx context.Context, m *member, resent bool) error {
		nm, ok := m.r.(remote.NodeMaker)
		if !ok {
			return remote.ErrNoNodes
		}
		err := nm.Mknod(ctx, p, mode, dev)
		if resent && errors.Is(err, fs.ErrExist) {
			if a, e := m.r.Lstat(ctx, p); e == nil && a.Mode&fmtMask == mode&fmtMask {
				return nil
			}
		}
		return err
	})
}

// fmtMask is S_IFMT, the file type bits of a mode.
const fmtMask = 0o170000

var _ remote.LinkAttrSetter = (*Set)(nil)

// SetLinkAttr is idempotent, as SetAttr: a re-send needs no reading.
func (s *Set) SetLinkAttr(ctx context.Context, p string, a remote.SetAttr) error {
	return s.write(ctx, "setlinkattr", p, func(ctx context.Context, m *member, _ bool) error {
		ls, ok := m.r.(remote.LinkAttrSetter)
		if !ok {
			return remote.ErrNoLinkAttr
		}
		return ls.SetLinkAttr(ctx, p, a)
	})
}
