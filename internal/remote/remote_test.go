package remote

import (
	"syscall"
	"testing"
	"time"
)

// What SFTP returns keeps the identity a tree listing told, and a change
// time that moves as the server's would with the change seen.
func TestKeepIdentity(t *testing.T) {
	t0, now := time.Unix(1000, 500), time.Unix(5000, 0)
	listed := Attr{Mode: syscall.S_IFREG | 0o644, Size: 3, Mtime: time.Unix(900, 0), Dev: 7, Ino: 42, Nlink: 2, Ctime: t0}
	sftp := listed
	sftp.Dev, sftp.Ino, sftp.Nlink, sftp.Ctime = 0, 0, 0, time.Time{}

	if got := KeepIdentity(listed, sftp, now); got != listed {
		t.Errorf("unchanged file: %+v, want %+v", got, listed)
	}
	written := sftp
	written.Size, written.Mtime = 9, time.Unix(2000, 0)
	if got := KeepIdentity(listed, written, now); got.Ino != 42 || !got.Ctime.Equal(written.Mtime) {
		t.Errorf("written: %+v, want ino 42 and ctime at the new mtime", got)
	}
	chmod := sftp
	chmod.Mode = syscall.S_IFREG | 0o600
	if got := KeepIdentity(listed, chmod, now); got.Ino != 42 || !got.Ctime.Equal(now) {
		t.Errorf("chmod: %+v, want ctime now", got)
	}
	dir := sftp
	dir.Mode = syscall.S_IFDIR | 0o755
	if got := KeepIdentity(listed, dir, now); got.HasIdentity() {
		t.Errorf("another type of file took the identity: %+v", got)
	}
	other := listed
	other.Ino, other.Ctime = 43, time.Unix(3000, 0)
	if got := KeepIdentity(listed, other, now); got != other {
		t.Errorf("a listing's own identity replaced: %+v", got)
	}
}
