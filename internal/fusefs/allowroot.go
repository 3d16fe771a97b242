package fusefs

import "github.com/hanwen/go-fuse/v2/fuse"

// ownerOrRoot answers EACCES to the requests of every user but owner and
// root: allow_root as libfuse implements it. The kernel knows only
// allow_other (fusermount3 refuses allow_root), so the mount is made with
// allow_other and the daemon turns away the other users, as libfuse's
// session does. Like libfuse, it lets through the requests on files
// already open (read, write, fsync, release, readdir, fsyncdir): only
// root or the owner can have opened them, and a descriptor they passed
// on keeps working.
type ownerOrRoot struct {
	fuse.RawFileSystem
	owner uint32
}

func (o ownerOrRoot) denied(h *fuse.InHeader) bool {
	return h.Uid != o.owner && h.Uid != 0
}

func (o ownerOrRoot) Lookup(c <-chan struct{}, h *fuse.InHeader, name string, out *fuse.EntryOut) fuse.Status {
	if o.denied(h) {
		return fuse.EACCES
	}
	return o.RawFileSystem.Lookup(c, h, name, out)
}

func (o ownerOrRoot) GetAttr(c <-chan struct{}, in *fuse.GetAttrIn, out *fuse.AttrOut) fuse.Status {
	if o.denied(&in.InHeader) {
		return fuse.EACCES
	}
	return o.RawFileSystem.GetAttr(c, in, out)
}

func (o ownerOrRoot) SetAttr(c <-chan struct{}, in *fuse.SetAttrIn, out *fuse.AttrOut) fuse.Status {
	if o.denied(&in.InHeader) {
		return fuse.EACCES
	}
	return o.RawFileSystem.SetAttr(c, in, out)
}

func (o ownerOrRoot) Mknod(c <-chan struct{}, in *fuse.MknodIn, name string, out *fuse.EntryOut) fuse.Status {
	if o.denied(&in.InHeader) {
		return fuse.EACCES
	}
	return o.RawFileSystem.Mknod(c, in, name, out)
}

func (o ownerOrRoot) Mkdir(c <-chan struct{}, in *fuse.MkdirIn, name string, out *fuse.EntryOut) fuse.Status {
	if o.denied(&in.InHeader) {
		return fuse.EACCES
	}
	return o.RawFileSystem.Mkdir(c, in, name, out)
}

func (o ownerOrRoot) Unlink(c <-chan struct{}, h *fuse.InHeader, name string) fuse.Status {
	if o.denied(h) {
		return fuse.EACCES
	}
	return o.RawFileSystem.Unlink(c, h, name)
}

func (o ownerOrRoot) Rmdir(c <-chan struct{}, h *fuse.InHeader, name string) fuse.Status {
	if o.denied(h) {
		return fuse.EACCES
	}
	return o.RawFileSystem.Rmdir(c, h, name)
}

func (o ownerOrRoot) Rename(c <-chan struct{}, in *fuse.RenameIn, oldName, newName string) fuse.Status {
	if o.denied(&in.InHeader) {
		return fuse.EACCES
	}
	return o.RawFileSystem.Rename(c, in, oldName, newName)
}

func (o ownerOrRoot) Link(c <-chan struct{}, in *fuse.LinkIn, name string, out *fuse.EntryOut) fuse.Status {
	if o.denied(&in.InHeader) {
		return fuse.EACCES
	}
	return o.RawFileSystem.Link(c, in, name, out)
}

func (o ownerOrRoot) Symlink(c <-chan struct{}, h *fuse.InHeader, target, name string, out *fuse.EntryOut) fuse.Status {
	if o.denied(h) {
		return fuse.EACCES
	}
	return o.RawFileSystem.Symlink(c, h, target, name, out)
}

func (o ownerOrRoot) Readlink(c <-chan struct{}, h *fuse.InHeader) ([]byte, fuse.Status) {
	if o.denied(h) {
		return nil, fuse.EACCES
	}
	return o.RawFileSystem.Readlink(c, h)
}

func (o ownerOrRoot) Access(c <-chan struct{}, in *fuse.AccessIn) fuse.Status {
	if o.denied(&in.InHeader) {
		return fuse.EACCES
	}
	return o.RawFileSystem.Access(c, in)
}

func (o ownerOrRoot) GetXAttr(c <-chan struct{}, h *fuse.InHeader, attr string, dest []byte) (uint32, fuse.Status) {
	if o.denied(h) {
		return 0, fuse.EACCES
	}
	return o.RawFileSystem.GetXAttr(c, h, attr, dest)
}

func (o ownerOrRoot) ListXAttr(c <-chan struct{}, h *fuse.InHeader, dest []byte) (uint32, fuse.Status) {
	if o.denied(h) {
		return 0, fuse.EACCES
	}
	return o.RawFileSystem.ListXAttr(c, h, dest)
}

func (o ownerOrRoot) SetXAttr(c <-chan struct{}, in *fuse.SetXAttrIn, attr string, data []byte) fuse.Status {
	if o.denied(&in.InHeader) {
		return fuse.EACCES
	}
	return o.RawFileSystem.SetXAttr(c, in, attr, data)
}

func (o ownerOrRoot) RemoveXAttr(c <-chan struct{}, h *fuse.InHeader, attr string) fuse.Status {
	if o.denied(h) {
		return fuse.EACCES
	}
	return o.RawFileSystem.RemoveXAttr(c, h, attr)
}

func (o ownerOrRoot) Create(c <-chan struct{}, in *fuse.CreateIn, name string, out *fuse.CreateOut) fuse.Status {
	if o.denied(&in.InHeader) {
		return fuse.EACCES
	}
	return o.RawFileSystem.Create(c, in, name, out)
}

func (o ownerOrRoot) Tmpfile(c <-chan struct{}, in *fuse.CreateIn, out *fuse.CreateOut) fuse.Status {
	if o.denied(&in.InHeader) {
		return fuse.EACCES
	}
	return o.RawFileSystem.Tmpfile(c, in, out)
}

func (o ownerOrRoot) Open(c <-chan struct{}, in *fuse.OpenIn, out *fuse.OpenOut) fuse.Status {
	if o.denied(&in.InHeader) {
		return fuse.EACCES
	}
	return o.RawFileSystem.Open(c, in, out)
}

func (o ownerOrRoot) Lseek(c <-chan struct{}, in *fuse.LseekIn, out *fuse.LseekOut) fuse.Status {
	if o.denied(&in.InHeader) {
		return fuse.EACCES
	}
	return o.RawFileSystem.Lseek(c, in, out)
}

func (o ownerOrRoot) GetLk(c <-chan struct{}, in *fuse.LkIn, out *fuse.LkOut) fuse.Status {
	if o.denied(&in.InHeader) {
		return fuse.EACCES
	}
	return o.RawFileSystem.GetLk(c, in, out)
}

func (o ownerOrRoot) SetLk(c <-chan struct{}, in *fuse.LkIn) fuse.Status {
	if o.denied(&in.InHeader) {
		return fuse.EACCES
	}
	return o.RawFileSystem.SetLk(c, in)
}

func (o ownerOrRoot) SetLkw(c <-chan struct{}, in *fuse.LkIn) fuse.Status {
	if o.denied(&in.InHeader) {
		return fuse.EACCES
	}
	return o.RawFileSystem.SetLkw(c, in)
}

func (o ownerOrRoot) CopyFileRange(c <-chan struct{}, in *fuse.CopyFileRangeIn) (uint32, fuse.Status) {
	if o.denied(&in.InHeader) {
		return 0, fuse.EACCES
	}
	return o.RawFileSystem.CopyFileRange(c, in)
}

func (o ownerOrRoot) Ioctl(c <-chan struct{}, in *fuse.IoctlIn, inbuf []byte, out *fuse.IoctlOut, outbuf []byte) fuse.Status {
	if o.denied(&in.InHeader) {
		return fuse.EACCES
	}
	return o.RawFileSystem.Ioctl(c, in, inbuf, out, outbuf)
}

func (o ownerOrRoot) Flush(c <-chan struct{}, in *fuse.FlushIn) fuse.Status {
	if o.denied(&in.InHeader) {
		return fuse.EACCES
	}
	return o.RawFileSystem.Flush(c, in)
}

func (o ownerOrRoot) Fallocate(c <-chan struct{}, in *fuse.FallocateIn) fuse.Status {
	if o.denied(&in.InHeader) {
		return fuse.EACCES
	}
	return o.RawFileSystem.Fallocate(c, in)
}

func (o ownerOrRoot) OpenDir(c <-chan struct{}, in *fuse.OpenIn, out *fuse.OpenOut) fuse.Status {
	if o.denied(&in.InHeader) {
		return fuse.EACCES
	}
	return o.RawFileSystem.OpenDir(c, in, out)
}

func (o ownerOrRoot) StatFs(c <-chan struct{}, h *fuse.InHeader, out *fuse.StatfsOut) fuse.Status {
	if o.denied(h) {
		return fuse.EACCES
	}
	return o.RawFileSystem.StatFs(c, h, out)
}

func (o ownerOrRoot) Statx(c <-chan struct{}, in *fuse.StatxIn, out *fuse.StatxOut) fuse.Status {
	if o.denied(&in.InHeader) {
		return fuse.EACCES
	}
	return o.RawFileSystem.Statx(c, in, out)
}
