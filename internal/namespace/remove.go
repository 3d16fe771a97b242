package namespace

import (
	"context"
	"fmt"
	"io/fs"
	"syscall"

	"sshfsm/internal/remote"
)

// Remove removes the non-directory p from every branch that holds it as
// one, lower copies first, so that no copy reappears. Nothing is removed
// if a read-only branch holds a copy (EROFS). A directory of the same name
// in a lower branch is another file: it stays, and shows once p is gone.
func (u *union) Remove(ctx context.Context, p string) error {
	if p == "" {
		return fmt.Errorf("remove the root: %w", syscall.EBUSY)
	}
	l, err := u.layout(ctx, parentOf(p))
	if err != nil {
		return err
	}
	c, err := u.probe(ctx, l.in, p, probeAll)
	if err != nil {
		return err
	}
	w := c.winner()
	switch {
	case w < 0:
		return fmt.Errorf("remove %s: %w", p, fs.ErrNotExist)
	case c.dirs.has(w):
		return fmt.Errorf("remove %s: %w", p, syscall.EISDIR)
	}
	targets := c.has &^ c.dirs
	if err := u.allWritable(targets, "remove", p); err != nil {
		return err
	}
	defer u.layouts.drop(p, false)
	return u.removeAll(ctx, targets, w, func(b int) error { return u.br[b].Remote.Remove(ctx, p) })
}

// Rmdir removes directory p from every branch it lives in, lower copies
// first. It must be empty in the union (ENOTEMPTY) and no read-only branch
// may hold a copy (EROFS); otherwise nothing is removed.
func (u *union) Rmdir(ctx context.Context, p string) error {
	if p == "" {
		return fmt.Errorf("rmdir the root: %w", syscall.EBUSY)
	}
	l, err := u.layout(ctx, parentOf(p))
	if err != nil {
		return err
	}
	c, err := u.probe(ctx, l.in, p, probeLayout)
	if err != nil {
		return err
	}
	w := c.winner()
	switch {
	case w < 0:
		return fmt.Errorf("rmdir %s: %w", p, fs.ErrNotExist)
	case !c.dirs.has(w):
		return fmt.Errorf("rmdir %s: %w", p, syscall.ENOTDIR)
	}
	targets := c.dirLayout().in
	if err := u.allWritable(targets, "rmdir", p); err != nil {
		return err
	}
	if err := u.empty(ctx, targets, p); err != nil {
		return err
	}
	defer u.layouts.drop(p, true)
	return u.removeAll(ctx, targets, w, func(b int) error { return u.br[b].Remote.Rmdir(ctx, p) })
}

// empty fails with ENOTEMPTY unless directory p is empty in every branch
// of in.
func (u *union) empty(ctx context.Context, in set, p string) error {
	lists, err := u.readDirs(ctx, in, p)
	if err != nil {
		return err
	}
	for _, l := range lists {
		for _, e := range l {
			if e.Name != "." && e.Name != ".." {
				return fmt.Errorf("%s: %w", p, syscall.ENOTEMPTY)
			}
		}
	}
	return nil
}

// allWritable fails with EROFS if a branch of in is read-only.
func (u *union) allWritable(in set, op, p string) error {
	for i := range in.all() {
		if err := u.writable(i, op, p, true); err != nil {
			return err
		}
	}
	return nil
}

// removeAll runs rm in every branch of in: the branches below w in
// parallel, then w. A copy that is already gone is no error; any other
// error returns before w is touched, so the union still shows p.
func (u *union) removeAll(ctx context.Context, in set, w int, rm func(b int) error) error {
	lower := in.without(w)
	errs := make(chan error, lower.len())
	for i := range lower.all() {
		go func() { errs <- rm(i) }()
	}
	var first error
	for range lower.len() {
		if err := <-errs; err != nil && !absent(err) && first == nil {
			first = err
		}
	}
	if first != nil {
		return first
	}
	return rm(w)
}

// SetAttr changes the winning copy of p, which must not be on a read-only
// branch (EROFS; there is no copy-up). For a merged directory only the
// winning copy changes: it is the one whose attributes the union shows.
func (u *union) SetAttr(ctx context.Context, p string, a remote.SetAttr) error {
	w, _, err := u.find(ctx, p)
	if err != nil {
		return err
	}
	if err := u.writable(w, "setattr", p, true); err != nil {
		return err
	}
	defer u.layouts.drop(p, false)
	return u.br[w].Remote.SetAttr(ctx, p, a)
}
