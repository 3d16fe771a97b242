package fusefs

import (
	"math"
	"syscall"
	"time"

	"github.com/hanwen/go-fuse/v2/fuse"

	"sshfsm/internal/remote"
)

// fillAttr converts remote attributes into what the kernel is told,
// applying uid=, gid=, idmap and umask.
func (f *filesys) fillAttr(out *fuse.Attr, a remote.Attr) {
	mode := a.Mode
	if mode&syscall.S_IFMT == 0 {
		mode |= syscall.S_IFREG
	}
	if f.opts.Umask != nil {
		// As libfuse's umask=, which sshfs users know: the permissions
		// shown are 0777 less the mask, whatever the server stores.
		mode = mode&syscall.S_IFMT | 0o777&^*f.opts.Umask
	}
	out.Mode = mode
	out.Size = kernelSize(a.Size)
	out.Blocks = out.Size/512 + min(out.Size%512, 1)
	out.Blksize = blockSize
	out.Nlink = 1
	out.Uid, out.Gid = f.localIDs(a.UID, a.GID)
	setTime(&out.Atime, &out.Atimensec, a.Atime)
	setTime(&out.Mtime, &out.Mtimensec, a.Mtime)
	if a.HasIdentity() && f.serverIDs() {
		// A tree listing told them (identity.go). A directory's count
		// stays 1 ("unknown" to walkers such as find): a union's merges
		// the subdirectories of several.
		if mode&syscall.S_IFMT != syscall.S_IFDIR {
			out.Nlink = uint32(min(max(a.Nlink, 1), math.MaxUint32))
		}
		setTime(&out.Ctime, &out.Ctimensec, a.Ctime)
		return
	}
	// SFTP carries no change time; the modification time is the closest,
	// unless the mount changed the file since (changed.go), which also
	// counts the links it made and removed.
	ctime := a.Mtime
	if !a.HasIdentity() {
		if a.Nlink > 0 && mode&syscall.S_IFMT != syscall.S_IFDIR {
			out.Nlink = uint32(min(a.Nlink, math.MaxUint32))
		}
		if a.Ctime.After(ctime) {
			ctime = a.Ctime
		}
	}
	setTime(&out.Ctime, &out.Ctimensec, ctime)
}

// kernelSize is the size the kernel is told of a file the server says
// has size bytes: the kernel keeps sizes as signed 64-bit numbers, and a
// larger one (a server's -1) would read there as negative.
func kernelSize(size uint64) uint64 { return min(size, math.MaxInt64) }

func setTime(sec *uint64, nsec *uint32, t time.Time) {
	if t.IsZero() || t.Unix() < 0 {
		*sec, *nsec = 0, 0
		return
	}
	*sec = uint64(t.Unix())
	*nsec = uint32(t.Nanosecond())
}

func (f *filesys) localIDs(uid, gid uint32) (uint32, uint32) {
	if m := f.opts.IDMap; m != nil {
		if v, ok := m.LocalUID(uid); ok {
			uid = v
		}
		if v, ok := m.LocalGID(gid); ok {
			gid = v
		}
	}
	if f.opts.UID != nil {
		uid = *f.opts.UID
	}
	if f.opts.GID != nil {
		gid = *f.opts.GID
	}
	return uid, gid
}

// remoteSetAttr converts a kernel setattr request into the remote's terms.
// It leaves Size alone: truncation is ordered with pending writes by the
// caller.
func (f *filesys) remoteSetAttr(in *fuse.SetAttrIn) remote.SetAttr {
	var sa remote.SetAttr
	if m, ok := in.GetMode(); ok {
		perm := m & 07777
		sa.Mode = &perm
	}
	if uid, ok := in.GetUID(); ok {
		if m := f.opts.IDMap; m != nil {
			if v, ok := m.RemoteUID(uid); ok {
				uid = v
			}
		}
		sa.UID = &uid
	}
	if gid, ok := in.GetGID(); ok {
		if m := f.opts.IDMap; m != nil {
			if v, ok := m.RemoteGID(gid); ok {
				gid = v
			}
		}
		sa.GID = &gid
	}
	if t, ok := in.GetATime(); ok {
		t = sftpTime(t)
		sa.Atime = &t
	}
	if t, ok := in.GetMTime(); ok {
		t = sftpTime(t)
		sa.Mtime = &t
	}
	return sa
}

// SFTP v3 carries times as unsigned 32-bit seconds: 1970 to 2106.
var (
	sftpTimeMin = time.Unix(0, 0)
	sftpTimeMax = time.Unix(math.MaxUint32, 0)
)

// sftpTime clamps t to the times SFTP can carry, as Linux clamps a time
// set on a filesystem whose inodes hold a narrower range
// (timestamp_truncate: ext4 with small inodes, XFS without bigtime):
// the call succeeds and the nearest time it can hold is kept, where the
// wire would otherwise wrap 2106 around to 1970.
func sftpTime(t time.Time) time.Time {
	switch {
	case t.Before(sftpTimeMin):
		return sftpTimeMin
	case t.After(sftpTimeMax):
		return sftpTimeMax
	}
	return t
}

func isLink(a remote.Attr) bool { return a.Mode&syscall.S_IFMT == syscall.S_IFLNK }

// fileType is the S_IFMT part of a remote mode, regular file if unset.
func fileType(a remote.Attr) uint32 {
	if t := a.Mode & syscall.S_IFMT; t != 0 {
		return t
	}
	return syscall.S_IFREG
}
