package namespace

import (
	"context"
	"fmt"
	"sync"
	"time"

	"sshfsm/internal/remote"
)

// Change listings (remote.ChangeLister) of a whole namespace: one per
// host, run in parallel. A name changed in any branch of a union counts as
// changed in the merged tree. Any member that cannot list changes makes
// the namespace unable to (ErrTreeUnsupported): the caller then checks
// directory by directory everywhere.

var (
	_ remote.ChangeLister = single{}
	_ remote.ChangeLister = (*union)(nil)
	_ remote.ChangeLister = (*graft)(nil)
)

func (s single) ListChanged(ctx context.Context, dir string, within time.Duration, fn func(string, time.Duration)) error {
	if cl, ok := s.Remote.(remote.ChangeLister); ok {
		return cl.ListChanged(ctx, dir, within, fn)
	}
	return remote.ErrTreeUnsupported
}

func (u *union) ListChanged(ctx context.Context, dir string, within time.Duration, fn func(string, time.Duration)) error {
	listers := make([]remote.ChangeLister, len(u.br))
	for i, b := range u.br {
		cl, ok := b.Remote.(remote.ChangeLister)
		if !ok {
			return fmt.Errorf("%s: %w", b.Name, remote.ErrTreeUnsupported)
		}
		listers[i] = cl
	}
	return changedInParallel(ctx, len(listers), fn, func(ctx context.Context, i int, fn func(string, time.Duration)) error {
		if err := listers[i].ListChanged(ctx, dir, within, fn); err != nil {
			return fmt.Errorf("%s: %w", u.br[i].Name, err)
		}
		return nil
	})
}

// ListChanged of a graft lists the base's changes and each graft's, the
// latter below the graft's name. Only the whole tree ("") is supported.
func (g *graft) ListChanged(ctx context.Context, dir string, within time.Duration, fn func(string, time.Duration)) error {
	if dir != "" {
		return remote.ErrTreeUnsupported
	}
	type member struct {
		ns     Namespace
		prefix string
	}
	var ms []member
	if g.base != nil {
		ms = append(ms, member{g.base, ""})
	}
	for _, name := range g.names {
		ms = append(ms, member{g.grafts[name].ns, name + "/"})
	}
	return changedInParallel(ctx, len(ms), fn, func(ctx context.Context, i int, fn func(string, time.Duration)) error {
		cl, ok := ms[i].ns.(remote.ChangeLister)
		if !ok {
			return remote.ErrTreeUnsupported
		}
		return cl.ListChanged(ctx, "", within, func(p string, age time.Duration) { fn(prefixed(ms[i].prefix, p), age) })
	})
}

// changedInParallel runs list for members 0..n-1 at once, passing fn
// calls on one at a time, and returns the first failure (which cancels
// the others).
func changedInParallel(ctx context.Context, n int, fn func(string, time.Duration), list func(context.Context, int, func(string, time.Duration)) error) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		mu    sync.Mutex // serializes fn; guards first
		first error
		wg    sync.WaitGroup
	)
	for i := range n {
		wg.Go(func() {
			err := list(ctx, i, func(p string, age time.Duration) {
				mu.Lock()
				defer mu.Unlock()
				fn(p, age)
			})
			if err != nil {
				mu.Lock()
				if first == nil {
					first = err
					cancel()
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return first
}
