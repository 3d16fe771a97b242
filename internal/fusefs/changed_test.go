package fusefs

import (
	"syscall"
	"testing"
	"time"

	"sshfsm/internal/remote"
)

// TestKeepOwnCarriesTheMountsCounts checks that attributes fetched over
// SFTP (no identity) keep the link count and change time the mount
// recorded, and that a listing's identity replaces them.
func TestKeepOwnCarriesTheMountsCounts(t *testing.T) {
	now := time.Unix(5000, 0)
	old := remote.Attr{Mode: syscall.S_IFREG | 0o644, Size: 1, Mtime: time.Unix(1000, 0), Nlink: 3, Ctime: time.Unix(4000, 0)}
	sftp := old
	sftp.Nlink, sftp.Ctime = 0, time.Time{}
	if got := keepOwn(old, sftp, now); got.Nlink != 3 || !got.Ctime.Equal(old.Ctime) {
		t.Errorf("unchanged file: nlink %d ctime %v, want 3 and %v", got.Nlink, got.Ctime, old.Ctime)
	}
	written := sftp
	written.Size, written.Mtime = 2, time.Unix(4500, 0)
	if got := keepOwn(old, written, now); got.Nlink != 3 || !got.Ctime.Equal(written.Mtime) {
		t.Errorf("written: nlink %d ctime %v, want 3 and the new mtime", got.Nlink, got.Ctime)
	}
	chmod := sftp
	chmod.Mode = syscall.S_IFREG | 0o600
	if got := keepOwn(old, chmod, now); !got.Ctime.Equal(now) {
		t.Errorf("chmod seen: ctime %v, want now", got.Ctime)
	}
	listed := sftp
	listed.Ino, listed.Nlink, listed.Ctime = 42, 2, time.Unix(4100, 0)
	if got := keepOwn(old, listed, now); got != listed {
		t.Errorf("a listing's identity: got %+v, want it as listed", got)
	}
	dir := sftp
	dir.Mode = syscall.S_IFDIR | 0o755
	if got := keepOwn(old, dir, now); got.Nlink != 0 || !got.Ctime.IsZero() {
		t.Errorf("another type at the name kept the old file's counts: %+v", got)
	}
}

// TestChangedInodeCounts checks the link count link(2) and unlink leave.
func TestChangedInodeCounts(t *testing.T) {
	n := &node{}
	n.last = remote.Attr{Mode: syscall.S_IFREG | 0o644, Nlink: 1}
	n.changedInode(+1)
	n.changedInode(+1)
	if n.last.Nlink != 3 || n.last.Ctime.IsZero() {
		t.Fatalf("after two links: nlink %d ctime %v", n.last.Nlink, n.last.Ctime)
	}
	n.changedInode(-1)
	if n.last.Nlink != 2 {
		t.Errorf("after an unlink: nlink %d, want 2", n.last.Nlink)
	}
	unknown := &node{}
	unknown.last = remote.Attr{Mode: syscall.S_IFREG | 0o644}
	unknown.changedInode(+1)
	if unknown.last.Nlink != 2 {
		t.Errorf("a file of unknown count linked once: nlink %d, want 2", unknown.last.Nlink)
	}
}

// TestSFTPTimeClamps checks that times SFTP v3 cannot carry are clamped,
// not wrapped.
func TestSFTPTimeClamps(t *testing.T) {
	for _, c := range []struct{ in, want int64 }{
		{1 << 31, 1 << 31}, {1 << 32, 1<<32 - 1}, {-1, 0}, {0, 0}, {1<<32 - 1, 1<<32 - 1},
	} {
		if got := sftpTime(time.Unix(c.in, 0)).Unix(); got != c.want {
			t.Errorf("sftpTime(%d) = %d, want %d", c.in, got, c.want)
		}
	}
}
