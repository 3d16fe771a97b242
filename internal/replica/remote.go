package replica

import (
	"context"
	"errors"
	"io/fs"
	"syscall"
	"time"

	"sshfsm/internal/remote"
)

// Reads and metadata: any healthy member, by load.

func (s *Set) Lstat(ctx context.Context, p string) (remote.Attr, error) {
	var a remote.Attr
	err := s.read(ctx, "lstat", p, func(ctx context.Context, m *member) (err error) {
		a, err = m.r.Lstat(ctx, p)
		return err
	})
	return a, err
}

func (s *Set) Stat(ctx context.Context, p string) (remote.Attr, error) {
	var a remote.Attr
	err := s.read(ctx, "stat", p, func(ctx context.Context, m *member) (err error) {
		a, err = m.r.Stat(ctx, p)
		return err
	})
	return a, err
}

func (s *Set) ReadDir(ctx context.Context, p string) ([]remote.DirEntry, error) {
	var es []remote.DirEntry
	err := s.read(ctx, "readdir", p, func(ctx context.Context, m *member) (err error) {
		es, err = m.r.ReadDir(ctx, p)
		return err
	})
	return es, err
}

func (s *Set) Readlink(ctx context.Context, p string) (string, error) {
	var target string
	err := s.read(ctx, "readlink", p, func(ctx context.Context, m *member) (err error) {
		target, err = m.r.Readlink(ctx, p)
		return err
	})
	return target, err
}

func (s *Set) StatFS(ctx context.Context, p string) (remote.StatFS, error) {
	var st remote.StatFS
	err := s.read(ctx, "statfs", p, func(ctx context.Context, m *member) (err error) {
		st, err = m.r.StatFS(ctx, p)
		return err
	})
	return st, err
}

// Namespace changes: the primary. A change re-sent after its first member
// failed may have been made by that member already; the answers saying
// "already done" are then taken as success (see doc.go).

func (s *Set) Mkdir(ctx context.Context, p string, perm uint32) error {
	return s.write(ctx, "mkdir", p, func(ctx context.Context, m *member, resent bool) error {
		err := m.r.Mkdir(ctx, p, perm)
		if resent && errors.Is(err, fs.ErrExist) {
			if a, e := m.r.Lstat(ctx, p); e == nil && a.Mode&syscall.S_IFMT == syscall.S_IFDIR {
				return nil
			}
		}
		return err
	})
}

func (s *Set) Remove(ctx context.Context, p string) error {
	return s.write(ctx, "remove", p, func(ctx context.Context, m *member, resent bool) error {
		return goneOK(m.r.Remove(ctx, p), resent)
	})
}

func (s *Set) Rmdir(ctx context.Context, p string) error {
	return s.write(ctx, "rmdir", p, func(ctx context.Context, m *member, resent bool) error {
		return goneOK(m.r.Rmdir(ctx, p), resent)
	})
}

// goneOK takes ENOENT after a re-send as the first attempt's success.
func goneOK(err error, resent bool) error {
	if resent && errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	return err
}

func (s *Set) Rename(ctx context.Context, oldp, newp string, noReplace bool) error {
	return s.write(ctx, "rename", oldp, func(ctx context.Context, m *member, resent bool) error {
		err := m.r.Rename(ctx, oldp, newp, noReplace)
		if !resent || !(errors.Is(err, fs.ErrNotExist) || noReplace && errors.Is(err, fs.ErrExist)) {
			return err
		}
		_, oldErr := m.r.Lstat(ctx, oldp)
		_, newErr := m.r.Lstat(ctx, newp)
		if errors.Is(oldErr, fs.ErrNotExist) && newErr == nil {
			return nil
		}
		return err
	})
}

func (s *Set) Symlink(ctx context.Context, target, linkp string) error {
	return s.write(ctx, "symlink", linkp, func(ctx context.Context, m *member, resent bool) error {
		err := m.r.Symlink(ctx, target, linkp)
		if resent && errors.Is(err, fs.ErrExist) {
			if t, e := m.r.Readlink(ctx, linkp); e == nil && t == target {
				return nil
			}
		}
		return err
	})
}

func (s *Set) Link(ctx context.Context, oldp, newp string) error {
	return s.write(ctx, "link", newp, func(ctx context.Context, m *member, resent bool) error {
		err := m.r.Link(ctx, oldp, newp)
		if resent && errors.Is(err, fs.ErrExist) {
			oa, e1 := m.r.Lstat(ctx, oldp)
			na, e2 := m.r.Lstat(ctx, newp)
			if e1 == nil && e2 == nil && oa == na {
				return nil
			}
		}
		return err
	})
}

// SetAttr is idempotent: a re-send needs no reading.
func (s *Set) SetAttr(ctx context.Context, p string, a remote.SetAttr) error {
	return s.write(ctx, "setattr", p, func(ctx context.Context, m *member, _ bool) error {
		return m.r.SetAttr(ctx, p, a)
	})
}

var _ remote.TreeLister = (*Set)(nil)

// ListTree is served by one member, like a read; a member without bulk
// listings answers ErrTreeUnsupported. After a move to another member a
// directory may be reported twice, complete both times. The entries carry
// no identity (inode number, change time): each member has its own, and a
// file's would change with the member answering.
func (s *Set) ListTree(ctx context.Context, dir string, depth int, fn func(dir string, ents []remote.DirEntry)) error {
	return s.read(ctx, "listtree", dir, func(ctx context.Context, m *member) error {
		tl, ok := m.r.(remote.TreeLister)
		if !ok {
			return remote.ErrTreeUnsupported
		}
		return tl.ListTree(ctx, dir, depth, func(d string, ents []remote.DirEntry) {
			for i := range ents {
				a := &ents[i].Attr
				a.Dev, a.Ino, a.Nlink, a.Ctime = 0, 0, 0, time.Time{}
			}
			fn(d, ents)
		})
	})
}
