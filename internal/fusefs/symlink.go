package fusefs

import (
	"context"
	"errors"
	"path"
	"slices"
	"strings"
	"sync"
	"syscall"

	"github.com/hanwen/go-fuse/v2/fs"

	"sshfsm/internal/cache"
	"sshfsm/internal/interrupt"
	"sshfsm/internal/namespace"
	"sshfsm/internal/remote"
)

var _ = (fs.NodeReadlinker)((*node)(nil))

// Readlink returns the link's target, rewritten by transform_symlinks
// and checked by contain_symlinks.
//
// contain_symlinks (on by default) keeps symlinks from leading out of the
// mount: a remote absolute target means a path on the remote machine, and
// the same path on this machine is a different, possibly sensitive, file.
// Readlink of an absolute target, or of a relative one that climbs above
// the mount root, fails with EACCES; each such link is logged once. With
// transform_symlinks, absolute targets under the remote mount prefix are
// first rewritten relative to the link, and so stay usable.
//
// The kernel follows the target it is shown through the mount, links
// inside it included: "dot/../x" climbs two levels from the link if "dot"
// is a link to ".", not zero as its text suggests. So a target is shown
// as the server stores it only when its shape alone keeps it inside (see
// plainTarget); any other is resolved through the mount's namespace, one
// component at a time and following links (ELOOP after maxHops), and
// shown as the equivalent plain target, or refused if it leaves the
// mount. A plain target needs no trust in the server: each link the
// kernel meets on its way is another Readlink, checked the same way, so a
// link the server swaps afterwards cannot lead out either.
//
// What stays as on any Linux filesystem: a ".." the user types after a
// link in a path (mnt/link/..) is resolved by the kernel from wherever
// the link led, and a link to the mount root followed by ".." leaves the
// mount as mnt/.. does.
func (n *node) Readlink(ctx context.Context) ([]byte, syscall.Errno) {
	ctx, req := interrupt.FilterWithin(ctx, n.fsys, n.fsys.opts.RequestTimeout)
	defer req.End()
	p, ok := n.path()
	if !ok {
		return nil, syscall.ENOENT
	}
	target, err := n.fsys.linkTarget(ctx, p)
	if err != nil {
		return nil, n.fsys.toErrno(err)
	}
	if !n.fsys.opts.ContainSymlinks {
		return []byte(target), 0
	}
	shown, err := n.fsys.containTarget(ctx, p, target)
	if errors.Is(err, errOutside) {
		n.fsys.syms.once(n.fsys, p, target)
		return nil, syscall.EACCES
	}
	if err != nil {
		return nil, n.fsys.toErrno(err)
	}
	return []byte(shown), 0
}

// linkTarget reads the target of the link at p, rewritten by
// transform_symlinks.
func (f *filesys) linkTarget(ctx context.Context, p string) (string, error) {
	target, err := f.ns.Readlink(ctx, p)
	if err != nil {
		return "", err
	}
	if f.opts.TransformSymlinks {
		target = transformTarget(f.opts.MountPrefix, f.opts.MountPrefixAt, p, target)
	}
	return target, nil
}

// transformTarget rewrites an absolute target under prefix, the remote
// directory that the mount shows at the path at ("" for the mount root, a
// graft's name), relative to the directory of the link at linkPath
// (relative to the mount root).
func transformTarget(prefix, at, linkPath, target string) string {
	if prefix == "" || !path.IsAbs(target) {
		return target
	}
	prefix = path.Clean(prefix)
	t := path.Clean(target)
	var rel string
	switch {
	case t == prefix:
		rel = ""
	case prefix == "/":
		rel = t[1:]
	case strings.HasPrefix(t, prefix+"/"):
		rel = t[len(prefix)+1:]
	default:
		return target
	}
	if at != "" {
		rel = strings.TrimSuffix(at+"/"+rel, "/")
	}
	depth := strings.Count(linkPath, "/")
	up := strings.Repeat("../", depth)
	if rel == "" {
		if up == "" {
			return "."
		}
		return strings.TrimSuffix(up, "/")
	}
	return up + rel
}

const (
	// maxHops is how many links one resolution follows before ELOOP, as
	// the kernel's MAXSYMLINKS.
	maxHops = 40
	// maxSteps bounds the components one resolution walks, links' targets
	// included, so that a server cannot make a Readlink cost more than a
	// few thousand lookups.
	maxSteps = 4096
	// maxTarget is the longest target shown: the kernel's PATH_MAX less
	// the terminating NUL.
	maxTarget = 4095
)

// errOutside is the answer for a target that leads out of the mount.
var errOutside = errors.New("symlink target leads outside the mount")

// plainTarget reports whether target, read from a link whose directory
// lies depth levels below the mount root, stays inside the mount by its
// shape alone: a relative path of ".." components, at most depth of them,
// followed only by names (no ".", "..", empty component or NUL), or "."
// alone. Each ".." then climbs from the link's own directory, which the
// kernel knows as the mount does, and each name steps down into the mount
// (or into a link, whose own target is checked when the kernel meets it).
func plainTarget(depth int, target string) bool {
	if target == "." {
		return true
	}
	if target == "" || len(target) > maxTarget || target[0] == '/' {
		return false
	}
	comps := strings.Split(target, "/")
	i := 0
	for i < len(comps) && comps[i] == ".." {
		i++
	}
	if i > depth {
		return false
	}
	for _, c := range comps[i:] {
		if namespace.ValidName(c) != nil {
			return false
		}
	}
	return true
}

// containTarget returns the target to show for the link at linkPath whose
// target the server gave as target: target itself when plainTarget, else
// the plain target reaching the same place through the mount's namespace.
// It fails with errOutside for a target that leads out of the mount, and
// with the error of a lookup that fails on the way (ENOENT, ENOTDIR,
// ELOOP): without the component, where a ".." after it leads is unknown.
func (f *filesys) containTarget(ctx context.Context, linkPath, target string) (string, error) {
	dir, _ := split(linkPath)
	from := components(dir)
	if plainTarget(len(from), target) {
		return target, nil
	}
	if refusedTarget(target) {
		return "", errOutside
	}
	comps := strings.Split(target, "/")
	last := lastUp(comps)
	r := resolver{f: f, ctx: ctx}
	to, err := r.walk(slices.Clone(from), comps[:last+1])
	if err != nil {
		return "", err
	}
	var rest []string
	for _, c := range comps[last+1:] {
		if c == "" || c == "." {
			continue
		}
		if err := namespace.ValidName(c); err != nil {
			return "", err
		}
		rest = append(rest, c)
	}
	return relativeTarget(from, to, rest), nil
}

// refusedTarget reports whether target cannot be shown whatever the
// namespace holds: absolute (a path on this machine, not the server's),
// empty, too long for the kernel, or holding a NUL byte.
func refusedTarget(target string) bool {
	return target == "" || target[0] == '/' || len(target) > maxTarget || strings.IndexByte(target, 0) >= 0
}

// lastUp returns the index of the last ".." in comps, -1 if none.
func lastUp(comps []string) int {
	for i := len(comps) - 1; i >= 0; i-- {
		if comps[i] == ".." {
			return i
		}
	}
	return -1
}

// components splits a path relative to the mount root ("" is the root).
func components(p string) []string {
	if p == "" {
		return nil
	}
	return strings.Split(p, "/")
}

// relativeTarget is the plain target that leads from the directory from
// to the directory to, then down through the names rest.
func relativeTarget(from, to, rest []string) string {
	k := 0
	for k < len(from) && k < len(to) && from[k] == to[k] {
		k++
	}
	var parts []string
	for range from[k:] {
		parts = append(parts, "..")
	}
	parts = append(append(parts, to[k:]...), rest...)
	if len(parts) == 0 {
		return "."
	}
	return strings.Join(parts, "/")
}

// resolver walks targets through the mount's namespace as the kernel
// would through the mount, counting the links it follows.
type resolver struct {
	f     *filesys
	ctx   context.Context
	hops  int
	steps int
}

// walk resolves comps from the directory cur (components below the mount
// root) and returns the directory reached; every name in comps is
// followed by a "..", so each must lead to a directory. A link met on the
// way is followed from its own directory, its target rewritten by
// transform_symlinks as Readlink would.
func (r *resolver) walk(cur, comps []string) ([]string, error) {
	for _, c := range comps {
		if r.steps++; r.steps > maxSteps {
			return nil, syscall.ELOOP
		}
		switch c {
		case "", ".":
			continue
		case "..":
			if len(cur) == 0 {
				return nil, errOutside
			}
			cur = cur[:len(cur)-1]
			continue
		}
		if err := namespace.ValidName(c); err != nil {
			return nil, err
		}
		p := strings.Join(append(cur[:len(cur):len(cur)], c), "/")
		a, err := r.f.lstat(r.ctx, p)
		if err != nil {
			return nil, err
		}
		switch {
		case isLink(a):
			if cur, err = r.follow(cur, p); err != nil {
				return nil, err
			}
		case fileType(a) == syscall.S_IFDIR:
			cur = append(cur[:len(cur):len(cur)], c)
		default:
			return nil, syscall.ENOTDIR
		}
	}
	return cur, nil
}

// follow resolves the link at p, whose directory is cur.
func (r *resolver) follow(cur []string, p string) ([]string, error) {
	if r.hops++; r.hops > maxHops {
		return nil, syscall.ELOOP
	}
	target, err := r.f.linkTarget(r.ctx, p)
	if err != nil {
		return nil, err
	}
	if refusedTarget(target) {
		return nil, errOutside
	}
	return r.walk(cur, strings.Split(target, "/"))
}

// lstat returns the attributes of p, from a fresh listing if one has
// them, without following a link.
func (f *filesys) lstat(ctx context.Context, p string) (remote.Attr, error) {
	dir, name := split(p)
	if a, st := f.dirs.Peek(dir, name); st == cache.Hit {
		return a, nil
	}
	return f.ns.Lstat(ctx, p)
}

// symLog remembers the links already reported as escaping.
type symLog struct {
	mu   sync.Mutex // guards seen
	seen map[string]struct{}
}

func (l *symLog) once(f *filesys, p, target string) {
	l.mu.Lock()
	_, dup := l.seen[p]
	if !dup && len(l.seen) < errLogMax {
		if l.seen == nil {
			l.seen = map[string]struct{}{}
		}
		l.seen[p] = struct{}{}
	}
	l.mu.Unlock()
	if !dup {
		f.log.Warn("symlink leads outside the mount; denied by contain_symlinks", "path", p, "target", target)
	}
}
