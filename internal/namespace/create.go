package namespace

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"syscall"

	"sshfsm/internal/remote"
)

// Open opens the winning copy of p. With os.O_CREATE and no copy, the
// create policy chooses the branch. A copy on a read-only branch cannot be
// opened for writing or truncated (EROFS): there is no copy-up.
func (u *union) Open(ctx context.Context, p string, flags int, perm uint32) (remote.File, error) {
	f, _, err := u.open(ctx, p, flags, perm)
	return f, err
}

// open is Open, also returning the branch whose file it opened.
func (u *union) open(ctx context.Context, p string, flags int, perm uint32) (remote.File, int, error) {
	if p == "" {
		return nil, -1, fmt.Errorf("open the root: %w", syscall.EISDIR)
	}
	l, err := u.layout(ctx, parentOf(p))
	if err != nil {
		return nil, -1, err
	}
	c, err := u.probe(ctx, l.in, p, probeWinner)
	if err != nil {
		return nil, -1, err
	}
	if w := c.winner(); w >= 0 {
		if flags&os.O_CREATE != 0 && flags&os.O_EXCL != 0 {
			return nil, -1, fmt.Errorf("create %s: %w", p, fs.ErrExist)
		}
		if err := u.writable(w, "open", p, flags&(os.O_WRONLY|os.O_RDWR|os.O_TRUNC) != 0); err != nil {
			return nil, -1, err
		}
		f, err := u.br[w].Remote.Open(ctx, p, flags, perm)
		return f, w, err
	}
	if flags&os.O_CREATE == 0 {
		return nil, -1, fmt.Errorf("open %s: %w", p, fs.ErrNotExist)
	}
	var f remote.File
	w := -1
	err = u.place(ctx, "create", p, l, func(b int) (err error) {
		f, err = u.br[b].Remote.Open(ctx, p, flags, perm)
		w = b
		return err
	})
	return f, w, err
}

// writable fails with EROFS when a change (write) would touch branch i
// and it is read-only.
func (u *union) writable(i int, op, p string, write bool) error {
	if write && u.br[i].ReadOnly {
		return fmt.Errorf("%s %s: branch %s is read-only: %w", op, p, u.br[i].Name, syscall.EROFS)
	}
	return nil
}

func (u *union) Mkdir(ctx context.Context, p string, perm uint32) error {
	return u.create(ctx, "mkdir", p, func(b int) error { return u.br[b].Remote.Mkdir(ctx, p, perm) })
}

func (u *union) Symlink(ctx context.Context, target, p string) error {
	return u.create(ctx, "symlink", p, func(b int) error { return u.br[b].Remote.Symlink(ctx, target, p) })
}

// create makes the new name p with mk in the branch the policy picks;
// EEXIST if the union shows p already.
func (u *union) create(ctx context.Context, op, p string, mk func(b int) error) error {
	if p == "" {
		return fmt.Errorf("%s the root: %w", op, fs.ErrExist)
	}
	l, err := u.layout(ctx, parentOf(p))
	if err != nil {
		return err
	}
	c, err := u.probe(ctx, l.in, p, probeWinner)
	if err != nil {
		return err
	}
	if c.winner() >= 0 {
		return fmt.Errorf("%s %s: %w", op, p, fs.ErrExist)
	}
	return u.place(ctx, op, p, l, mk)
}

// place creates the new name p with mk in the branch the policy picks
// for p's directory, whose layout is l.
func (u *union) place(ctx context.Context, op, p string, l dirLayout, mk func(b int) error) error {
	b, err := u.pick(ctx, parentOf(p), l)
	if err != nil {
		return err
	}
	return u.placeIn(ctx, op, p, l, b, mk)
}

// placeIn creates the new name p with mk in branch b, first creating p's
// directory there if b lacks it; EXDEV if b cannot hold the directory.
func (u *union) placeIn(ctx context.Context, op, p string, l dirLayout, b int, mk func(b int) error) error {
	if err := u.ensureDir(ctx, b, parentOf(p), l); err != nil {
		return fmt.Errorf("%s %s: %w", op, p, err)
	}
	err := mk(b)
	u.layouts.drop(p, false)
	return err
}

// Link makes newp a hard link to oldp's winning copy. A hard link cannot
// cross branches, so it goes to that copy's branch, which gets newp's
// directory if it lacks it; EXDEV if that branch cannot hold it.
func (u *union) Link(ctx context.Context, oldp, newp string) error {
	w, _, err := u.find(ctx, oldp)
	if err != nil {
		return err
	}
	if err := u.writable(w, "link", newp, true); err != nil {
		return err
	}
	if newp == "" {
		return fmt.Errorf("link the root: %w", fs.ErrExist)
	}
	l, err := u.layout(ctx, parentOf(newp))
	if err != nil {
		return err
	}
	c, err := u.probe(ctx, l.in, newp, probeWinner)
	if err != nil {
		return err
	}
	if c.winner() >= 0 {
		return fmt.Errorf("link %s: %w", newp, fs.ErrExist)
	}
	return u.placeIn(ctx, "link", newp, l, w, func(b int) error {
		return u.br[b].Remote.Link(ctx, oldp, newp)
	})
}

// errCannotHold: a branch holds a non-directory where a directory would
// have to be created, or its copy would be shadowed.
var errCannotHold = errors.New("the branch cannot hold the directory")

// ensureDir makes sure branch b holds directory dir (layout l) as a
// contributing copy, creating the missing part of the path in b with the
// modes of the union's directories.
func (u *union) ensureDir(ctx context.Context, b int, dir string, l dirLayout) error {
	if l.in.has(b) {
		return nil
	}
	ok, err := u.canHold(ctx, b, dir)
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("%s in %s: %w (%w)", dir, u.br[b].Name, errCannotHold, syscall.EXDEV)
	}
	return u.clone(ctx, b, dir)
}

// canHold reports whether branch b holds dir as a contributing copy or
// could: every component of dir below the deepest one b holds must be
// absent in b and unshadowed above b (b above the layout's stop).
func (u *union) canHold(ctx context.Context, b int, dir string) (bool, error) {
	for a := dir; ; a = parentOf(a) {
		l, err := u.layout(ctx, a)
		if err != nil {
			return false, err
		}
		if l.in.has(b) {
			return true, nil
		}
		if b >= l.stop || a == "" {
			return false, nil
		}
	}
}

// clone creates in branch b the components of dir that b lacks, each with
// the mode of the union's copy (canHold said b can hold dir).
func (u *union) clone(ctx context.Context, b int, dir string) error {
	type comp struct {
		p    string
		mode uint32
	}
	var missing []comp // deepest first
	for a := dir; a != ""; a = parentOf(a) {
		l, err := u.layout(ctx, a)
		if err != nil {
			return err
		}
		if l.in.has(b) {
			break
		}
		missing = append(missing, comp{a, l.attr.Mode & 07777})
	}
	if len(missing) == 0 {
		return nil
	}
	defer u.layouts.drop(missing[len(missing)-1].p, true)
	for k := len(missing) - 1; k >= 0; k-- {
		if err := u.br[b].Remote.Mkdir(ctx, missing[k].p, missing[k].mode); err != nil {
			return err
		}
		u.log.Debug("directory created in a branch for a new name", "branch", u.br[b].Name, "dir", missing[k].p)
	}
	return nil
}
