package fusefs

import (
	"context"
	"syscall"

	"github.com/hanwen/go-fuse/v2/fuse"

	"sshfsm/internal/remote"
)

// A server creates every file as its own account. On a mount that several
// local users share (allow_other, whose default_permissions has the
// kernel check every access against the owners shown), a file one of
// them creates must be theirs, as on a local disk: else they could not
// reopen for writing, chmod or remove in a sticky directory the file they
// just made. Where the server's account may give files away (root), a
// new node then gets the caller's uid, and the caller's gid unless its
// directory is set-group-ID (the server gave it the directory's group
// already), both in the server's terms (idmap). Elsewhere the server's
// owner stays, as before.

// ownByCaller gives the new node p, made by the caller of ctx in the
// directory n with attributes a, the caller's owner; a is updated to
// what the server then holds. A failure leaves the server's owner: the
// node exists, and the creation succeeded.
func (n *node) ownByCaller(ctx context.Context, p string, a *remote.Attr) {
	o := n.fsys.opts
	if !o.OwnNewFiles || o.UID != nil || o.GID != nil || a.UID != 0 {
		return
	}
	caller, ok := fuse.FromContext(ctx)
	if !ok || caller.Uid == 0 {
		return
	}
	uid, gid := caller.Uid, caller.Gid
	if m := o.IDMap; m != nil {
		if v, ok := m.RemoteUID(uid); ok {
			uid = v
		}
		if v, ok := m.RemoteGID(gid); ok {
			gid = v
		}
	}
	if n.setgid() {
		gid = a.GID
	}
	if uid == a.UID && gid == a.GID {
		return
	}
	sa := remote.SetAttr{UID: &uid, GID: &gid}
	var err error
	if a.Mode&syscall.S_IFMT == syscall.S_IFLNK {
		ls, ok := n.fsys.ns.(remote.LinkAttrSetter)
		if !ok {
			return
		}
		err = ls.SetLinkAttr(ctx, p, sa)
	} else {
		err = n.fsys.ns.SetAttr(ctx, p, sa)
	}
	if err != nil {
		n.fsys.log.Debug("new file keeps the server's owner", "path", p, "err", err)
		return
	}
	a.UID, a.GID = uid, gid
	// chown cleared the set-user-ID and set-group-ID bits of a file on
	// the server; the caller created them, and keeps them.
	if bits := a.Mode & (syscall.S_ISUID | syscall.S_ISGID); bits != 0 && a.Mode&syscall.S_IFMT != syscall.S_IFLNK {
		perm := a.Mode & 07777
		if err := n.fsys.ns.SetAttr(ctx, p, remote.SetAttr{Mode: &perm}); err != nil {
			a.Mode &^= bits
		}
	}
}

// setgid reports whether the directory n is set-group-ID, by its newest
// attributes.
func (n *node) setgid() bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.last.Mode&syscall.S_ISGID != 0
}
