package fusefs

import (
	"context"
	"syscall"
	"time"

	"github.com/hanwen/go-fuse/v2/fs"

	"sshfsm/internal/cache"
)

var _ = (fs.NodeRenamer)((*node)(nil))

const (
	renameNoReplace = 1 << 0
	renameExchange  = 1 << 1
)

// Rename moves name to newName in newParent. RENAME_NOREPLACE is honoured
// by the remote; RENAME_EXCHANGE and RENAME_WHITEOUT cannot be expressed
// over SFTP and fail with EINVAL. The file keeps its inode number.
func (n *node) Rename(ctx context.Context, name string, newParent fs.InodeEmbedder, newName string, flags uint32) syscall.Errno {
	ctx, req := n.changing(ctx)
	defer req.End()
	if errno := n.fsys.readOnly(); errno != 0 {
		return errno
	}
	if flags&^renameNoReplace != 0 {
		return syscall.EINVAL
	}
	np := newParent.(*node)
	oldDir, oldp, errno := n.childPath(name)
	if errno != 0 {
		return errno
	}
	newDir, newp, errno := np.childPath(newName)
	if errno != 0 {
		return errno
	}
	if over := np.GetChild(newName); over != nil && over != n.GetChild(name) {
		if err := over.Operations().(*node).openLazies(ctx); err != nil {
			return n.fsys.toErrno(err)
		}
	}
	if err := n.fsys.ns.Rename(ctx, oldp, newp, flags&renameNoReplace != 0); err != nil {
		return n.fsys.toErrno(err)
	}
	moved := n.GetChild(name)
	if moved != nil {
		dir := moved.IsDir()
		n.fsys.own.removed(oldp, dir)
		n.fsys.own.created(newp, dir)
	}
	n.renamed(np, name, newName, oldDir, oldp, newDir, newp)
	if moved != nil && oldDir != newDir {
		forgetLinkTargets(moved)
	}
	return 0
}

// forgetLinkTargets makes the kernel ask Readlink again for the link in,
// or for every link it knows below the directory in, after a move to
// another directory. The kernel keeps a link's target with its inode,
// and a target checked for the old depth may climb too far from the new
// one: a link three levels down may climb three levels, and moved one
// level up it would leave the mount.
func forgetLinkTargets(in *fs.Inode) {
	switch in.StableAttr().Mode {
	case syscall.S_IFLNK:
		in.NotifyContent(0, 0)
	case syscall.S_IFDIR:
		for _, ch := range in.Children() {
			forgetLinkTargets(ch)
		}
	}
}

// renamed brings caches and inode numbers in line with a done rename.
func (n *node) renamed(np *node, name, newName, oldDir, oldp, newDir, newp string) {
	n.fsys.forgetContent(oldp)
	n.fsys.forgetContent(newp)
	d := n.fsys.dirs
	a, st := d.Peek(oldDir, name)
	d.Remove(oldDir, name)
	if st == cache.Hit {
		d.Set(newDir, newName, a)
	} else {
		d.Forget(newDir, newName)
	}
	n.fsys.entriesChanged(oldDir, time.Time{})
	if newDir != oldDir {
		n.fsys.entriesChanged(newDir, time.Time{})
	}
	if over := np.GetChild(newName); over != nil {
		if ch := n.GetChild(name); ch != over {
			// The file renamed over lost a name (changed.go).
			on := over.Operations().(*node)
			on.changedInode(-1)
			on.detach(newp)
		}
	}
	ch := n.GetChild(name)
	if ch != nil {
		ch.Operations().(*node).changedInode(0) // as ext4, a rename is a change of the inode
	}
	if ch == nil {
		n.fsys.inos.move(oldp, newp, n.fsys.inos.get(oldp))
		d.DropTree(oldp)
		d.DropTree(newp)
		return
	}
	n.fsys.inos.move(oldp, newp, ch.StableAttr().Ino)
	if ch.IsDir() {
		d.DropTree(oldp)
		d.DropTree(newp)
		n.fsys.pinSubtree(ch, newp)
	}
}

// pinSubtree records the numbers of the known nodes below a renamed
// directory under their new paths.
func (f *filesys) pinSubtree(dir *fs.Inode, p string) {
	for name, ch := range dir.Children() {
		cp := join(p, name)
		f.inos.set(cp, ch.StableAttr().Ino)
		if ch.IsDir() {
			f.pinSubtree(ch, cp)
		}
	}
}
