package fusefs

import (
	"syscall"
	"time"

	"sshfsm/internal/cache"
	"sshfsm/internal/remote"
)

// SFTP tells no link count and no change time, and a tree listing, which
// does (identity.go), is not run after each change the mount makes. So
// the mount keeps what its own changes did to them, as a local disk
// would show them:
//
//   - a file it creates has one link; link(2) adds one to the count the
//     file had (the server's, when a listing told it; else the mount's;
//     a file whose count nobody told counts as having had one), unlink
//     and a rename over one of its names take one away;
//   - chmod, chown, utimes, truncate, link, unlink and rename set the
//     file's change time to the client's clock (the server's own change
//     time is not at hand without a listing; the next listing replaces
//     both with the server's values);
//   - a directory whose entries change gets the modification and change
//     time of the server's answer when one carries it (a created entry's
//     own times: a new file's mtime is the time its directory changed),
//     and otherwise its cached attributes are dropped, so the next stat
//     asks the server. The kernel drops its own copy of the directory's
//     attributes after each such change.
//
// These counts live in the node (node.last) for as long as the kernel
// keeps it: a name the kernel forgot and looks up again shows what the
// server or its listing says.

// keepOwn is remote.KeepIdentity for attributes that carry no server
// identity on either side: a, just fetched, keeps the link count and
// change time the mount recorded in old, moved as KeepIdentity moves them.
func keepOwn(old, a remote.Attr, now time.Time) remote.Attr {
	if old.HasIdentity() || a.HasIdentity() || (old.Nlink == 0 && old.Ctime.IsZero()) ||
		(old.Mode^a.Mode)&syscall.S_IFMT != 0 {
		return remote.KeepIdentity(old, a, now)
	}
	a.Nlink, a.Ctime = old.Nlink, old.Ctime
	return remote.MoveCtime(old, a, now)
}

// changedInode records a change of the node's inode made through the
// mount now: its change time moves to now and its link count by links
// (+1 for link, -1 for a name removed; never below one, the count of a
// file that still has a name: the node's path says when it has none).
func (n *node) changedInode(links int) {
	now := time.Now()
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.last.Mode == 0 {
		return // never reported: nothing to move
	}
	if n.last.Mode&syscall.S_IFMT != syscall.S_IFDIR && links != 0 {
		c := int64(max(n.last.Nlink, 1)) + int64(links)
		n.last.Nlink = uint64(max(c, 1))
	}
	if now.After(n.last.Ctime) {
		n.last.Ctime = now
	}
}

// entriesChanged records that entries of the directory at dir were
// created, removed or renamed through the mount. at is the time the
// server gave the change (a created entry's modification time), zero
// when no answer told it: then the directory's cached attributes are
// dropped and the next stat asks the server.
func (f *filesys) entriesChanged(dir string, at time.Time) {
	if dir == "" {
		return // the root's attributes are always asked (statPath)
	}
	parent, name := split(dir)
	if at.IsZero() {
		f.dirs.Forget(parent, name)
		return
	}
	a, st := f.dirs.Peek(parent, name)
	if st != cache.Hit || fileType(a) != syscall.S_IFDIR {
		return
	}
	at = at.Truncate(time.Second) // as SFTP tells a directory's times
	if !at.After(a.Mtime) {
		return
	}
	a.Mtime = at
	if a.HasIdentity() && at.After(a.Ctime) {
		a.Ctime = at
	}
	f.dirs.Set(parent, name, a)
}
