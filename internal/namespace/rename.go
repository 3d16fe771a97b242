package namespace

import (
	"context"
	"fmt"
	"io/fs"
	"strings"
	"syscall"
)

// Rename renames oldp inside the one branch that holds it, atomically
// there. EXDEV (mv then copies and unlinks) when that is not possible: a
// name several branches hold (a merged directory, or a file with lower
// copies that would reappear), a newp that a higher branch holds (it would
// keep shadowing the result), or a branch that cannot hold newp's
// directory. Copies of newp on writable branches below are removed after
// the rename, so that none reappears; copies on read-only branches stay
// hidden below it.
func (u *union) Rename(ctx context.Context, oldp, newp string, noReplace bool) error {
	switch {
	case oldp == "" || newp == "":
		return fmt.Errorf("rename the root: %w", syscall.EBUSY)
	case strings.HasPrefix(newp, oldp+"/"):
		return fmt.Errorf("rename %s into itself: %w", oldp, syscall.EINVAL)
	}
	lo, err := u.layout(ctx, parentOf(oldp))
	if err != nil {
		return err
	}
	co, err := u.probe(ctx, lo.in, oldp, probeAll)
	if err != nil {
		return err
	}
	w := co.winner()
	switch {
	case w < 0:
		return fmt.Errorf("rename %s: %w", oldp, fs.ErrNotExist)
	case co.has.len() > 1:
		return fmt.Errorf("rename %s: several branches hold it: %w", oldp, syscall.EXDEV)
	}
	if err := u.writable(w, "rename", oldp, true); err != nil {
		return err
	}
	ln, err := u.layout(ctx, parentOf(newp))
	if err != nil {
		return err
	}
	cn, err := u.probe(ctx, ln.in, newp, probeAll)
	if err != nil {
		return err
	}
	if oldp == newp {
		return nil
	}
	if err := u.replaceable(ctx, oldp, newp, co.dirs.has(w), cn, w, noReplace); err != nil {
		return err
	}
	if err := u.ensureDir(ctx, w, parentOf(newp), ln); err != nil {
		return fmt.Errorf("rename %s -> %s: %w", oldp, newp, err)
	}
	err = u.br[w].Remote.Rename(ctx, oldp, newp, noReplace)
	u.layouts.drop(oldp, true)
	u.layouts.drop(newp, true)
	if err != nil {
		return err
	}
	u.removeBelow(ctx, newp, cn, w)
	return nil
}

// replaceable checks that oldp (a directory if dir) may replace newp, whose
// copies are cn, as rename(2) would in the union's view, and that the
// result will show: no branch above w holds newp.
func (u *union) replaceable(ctx context.Context, oldp, newp string, dir bool, cn *copies, w int, noReplace bool) error {
	nw := cn.winner()
	if nw < 0 {
		return nil
	}
	switch {
	case noReplace:
		return fmt.Errorf("rename %s -> %s: %w", oldp, newp, fs.ErrExist)
	case dir && !cn.isDir():
		return fmt.Errorf("rename %s -> %s: %w", oldp, newp, syscall.ENOTDIR)
	case !dir && cn.isDir():
		return fmt.Errorf("rename %s -> %s: %w", oldp, newp, syscall.EISDIR)
	case nw < w:
		return fmt.Errorf("rename %s -> %s: a higher branch holds the target: %w", oldp, newp, syscall.EXDEV)
	}
	if dir {
		return u.empty(ctx, cn.dirLayout().in, newp)
	}
	return nil
}

// removeBelow removes the copies of p that branches below w held before a
// rename onto p: they would show again if w's copy went. Read-only
// branches are left alone. The rename is done, so failures are logged.
func (u *union) removeBelow(ctx context.Context, p string, c *copies, w int) {
	for i := range c.has.below(w).all() {
		if u.br[i].ReadOnly {
			continue
		}
		var err error
		if c.dirs.has(i) {
			err = u.br[i].Remote.Rmdir(ctx, p)
		} else {
			err = u.br[i].Remote.Remove(ctx, p)
		}
		if err != nil && !absent(err) {
			u.log.Warn("renamed over a name, but a lower copy of it stays", "branch", u.br[i].Name, "path", p, "err", err)
		}
	}
}
