package namespace

import (
	"context"
	"fmt"
	"io/fs"

	"sshfsm/internal/remote"
)

// Serving returns the branch's remote that serves p (as given to Single,
// NewUnion or NewGraft) and p relative to it: in a union the branch of
// the copy shown, below a graft the graft's. Callers use it for what only
// the branch can do, such as running a command on its host.
func Serving(ctx context.Context, ns Namespace, p string) (remote.Remote, string, error) {
	switch n := ns.(type) {
	case single:
		return n.Remote, p, nil
	case *union:
		w, _, err := n.find(ctx, p)
		if err != nil {
			return nil, "", err
		}
		return n.br[w].Remote, p, nil
	case *graft:
		if p == "" {
			if n.base == nil {
				return nil, "", fmt.Errorf("serving the root of grafts: %w", fs.ErrNotExist)
			}
			return Serving(ctx, n.base, p)
		}
		sub, rest, err := n.at("serving", p)
		if err != nil {
			return nil, "", err
		}
		return Serving(ctx, sub, rest)
	}
	return ns, p, nil
}

// Origin names the branch that serves p now, for what is learnt of p's
// content: "" when ns has one branch for p, otherwise the branch's place
// in its union and its name (host and directory). Two branches may hold
// files of the same name, size and mtime and different bytes; after a
// failover the other one serves p.
func Origin(ctx context.Context, ns Namespace, p string) (string, error) {
	switch n := ns.(type) {
	case *union:
		if len(n.br) == 1 {
			return "", nil
		}
		w, err := n.origin(ctx, p)
		if err != nil {
			return "", err
		}
		return n.originName(w), nil
	case *graft:
		if p == "" {
			if n.base == nil {
				return "", nil
			}
			return Origin(ctx, n.base, p)
		}
		sub, rest, err := n.at("origin", p)
		if err != nil {
			return "", err
		}
		return Origin(ctx, sub, rest)
	}
	return "", nil
}

// originName is how Origin names branch w of the union.
func (u *union) originName(w int) string {
	if len(u.br) == 1 {
		return ""
	}
	return fmt.Sprintf("%d %s", w, u.br[w].Name)
}

// OpenFrom opens p as ns.Open does, and names as Origin does the branch
// whose file it opened: the bytes read through the file are that
// branch's, whichever branch Origin named before the open (a union may
// have failed over, or back, in between).
func OpenFrom(ctx context.Context, ns Namespace, p string, flags int, perm uint32) (remote.File, string, error) {
	switch n := ns.(type) {
	case *union:
		f, w, err := n.open(ctx, p, flags, perm)
		if err != nil {
			return nil, "", err
		}
		return f, n.originName(w), nil
	case *graft:
		sub, rest, err := n.opening(p, flags)
		if err != nil {
			return nil, "", err
		}
		return OpenFrom(ctx, sub, rest, flags, perm)
	}
	f, err := ns.Open(ctx, p, flags, perm)
	return f, "", err
}
