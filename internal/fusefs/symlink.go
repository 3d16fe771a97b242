package fusefs

import (
	"context"
	"path"
	"strings"
	"sync"
	"syscall"

	"github.com/hanwen/go-fuse/v2/fs"

	"sshfsm/internal/interrupt"
)

var _ = (fs.NodeReadlinker)((*node)(nil))

// Readlink returns the link's target, rewritten by transform_symlinks
// and checked by contain_symlinks.
//
// contain_symlinks (on by default) keeps symlinks from leading out of the
// mount: a remote absolute target means a path on the remote machine, and
// the same path on this machine is a different, possibly sensitive, file.
// Readlink of an absolute target, or of a relative one whose ".." climbs
// above the mount root, fails with EACCES; each such link is logged once.
// With transform_symlinks, absolute targets under the remote mount prefix
// are first rewritten relative to the link, and so stay usable.
func (n *node) Readlink(ctx context.Context) ([]byte, syscall.Errno) {
	ctx, req := interrupt.Filter(ctx, n.fsys)
	defer req.End()
	p, ok := n.path()
	if !ok {
		return nil, syscall.ENOENT
	}
	target, err := n.fsys.ns.Readlink(ctx, p)
	if err != nil {
		return nil, n.fsys.toErrno(err)
	}
	o := n.fsys.opts
	if o.TransformSymlinks {
		target = transformTarget(o.MountPrefix, p, target)
	}
	if o.ContainSymlinks && escapes(p, target) {
		n.fsys.syms.once(n.fsys, p, target)
		return nil, syscall.EACCES
	}
	return []byte(target), 0
}

// transformTarget rewrites an absolute target under prefix relative to
// the directory of the link at linkPath (relative to the mount root).
func transformTarget(prefix, linkPath, target string) string {
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

// escapes reports whether target, read from the link at linkPath, leads
// outside the mount root.
func escapes(linkPath, target string) bool {
	if path.IsAbs(target) {
		return true
	}
	depth := strings.Count(linkPath, "/")
	for _, c := range strings.Split(target, "/") {
		switch c {
		case "", ".":
		case "..":
			depth--
			if depth < 0 {
				return true
			}
		default:
			depth++
		}
	}
	return false
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
