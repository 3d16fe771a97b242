package fusefs

import (
	"github.com/hanwen/go-fuse/v2/fuse"

	"sshfsm/internal/inflight"
)

// tracked records every request the kernel waits on in a table of
// requests in flight (Options.Requests), from when go-fuse hands it to
// the file system until it is answered, so that a request that hangs is
// seen (sshfsm status) while it hangs. FORGET gets no answer, SETLKW may
// wait for a lock as long as its holder keeps it, and INTERRUPT is
// go-fuse's own: they are not tracked.
type tracked struct {
	fuse.RawFileSystem
	t *inflight.Table
}

// Kinds of the requests tracked, for RequestKind.
const (
	opLookup int32 = iota
	opGetAttr
	opSetAttr
	opMknod
	opMkdir
	opUnlink
	opRmdir
	opRename
	opLink
	opSymlink
	opReadlink
	opAccess
	opGetXAttr
	opListXAttr
	opSetXAttr
	opRemoveXAttr
	opCreate
	opTmpfile
	opOpen
	opRead
	opLseek
	opGetLk
	opSetLk
	opRelease
	opWrite
	opCopyFileRange
	opIoctl
	opFlush
	opFsync
	opFallocate
	opOpenDir
	opReadDir
	opReadDirPlus
	opReleaseDir
	opFsyncDir
	opStatFs
	opStatx
)

var requestKinds = [...]string{
	opLookup: "LOOKUP", opGetAttr: "GETATTR", opSetAttr: "SETATTR", opMknod: "MKNOD",
	opMkdir: "MKDIR", opUnlink: "UNLINK", opRmdir: "RMDIR", opRename: "RENAME",
	opLink: "LINK", opSymlink: "SYMLINK", opReadlink: "READLINK", opAccess: "ACCESS",
	opGetXAttr: "GETXATTR", opListXAttr: "LISTXATTR", opSetXAttr: "SETXATTR",
	opRemoveXAttr: "REMOVEXATTR", opCreate: "CREATE", opTmpfile: "TMPFILE", opOpen: "OPEN",
	opRead: "READ", opLseek: "LSEEK", opGetLk: "GETLK", opSetLk: "SETLK",
	opRelease: "RELEASE", opWrite: "WRITE", opCopyFileRange: "COPY_FILE_RANGE",
	opIoctl: "IOCTL", opFlush: "FLUSH", opFsync: "FSYNC", opFallocate: "FALLOCATE",
	opOpenDir: "OPENDIR", opReadDir: "READDIR", opReadDirPlus: "READDIRPLUS",
	opReleaseDir: "RELEASEDIR", opFsyncDir: "FSYNCDIR", opStatFs: "STATFS", opStatx: "STATX",
}

// RequestKind names a kind of request of Options.Requests (the FUSE
// opcode's name).
func RequestKind(k int32) string {
	if k < 0 || int(k) >= len(requestKinds) {
		return "?"
	}
	return requestKinds[k]
}

func (r tracked) Lookup(c <-chan struct{}, h *fuse.InHeader, name string, out *fuse.EntryOut) fuse.Status {
	defer r.t.End(r.t.Begin(h.Unique, opLookup))
	return r.RawFileSystem.Lookup(c, h, name, out)
}

func (r tracked) GetAttr(c <-chan struct{}, in *fuse.GetAttrIn, out *fuse.AttrOut) fuse.Status {
	defer r.t.End(r.t.Begin(in.Unique, opGetAttr))
	return r.RawFileSystem.GetAttr(c, in, out)
}

func (r tracked) SetAttr(c <-chan struct{}, in *fuse.SetAttrIn, out *fuse.AttrOut) fuse.Status {
	defer r.t.End(r.t.Begin(in.Unique, opSetAttr))
	return r.RawFileSystem.SetAttr(c, in, out)
}

func (r tracked) Mknod(c <-chan struct{}, in *fuse.MknodIn, name string, out *fuse.EntryOut) fuse.Status {
	defer r.t.End(r.t.Begin(in.Unique, opMknod))
	return r.RawFileSystem.Mknod(c, in, name, out)
}

func (r tracked) Mkdir(c <-chan struct{}, in *fuse.MkdirIn, name string, out *fuse.EntryOut) fuse.Status {
	defer r.t.End(r.t.Begin(in.Unique, opMkdir))
	return r.RawFileSystem.Mkdir(c, in, name, out)
}

func (r tracked) Unlink(c <-chan struct{}, h *fuse.InHeader, name string) fuse.Status {
	defer r.t.End(r.t.Begin(h.Unique, opUnlink))
	return r.RawFileSystem.Unlink(c, h, name)
}

func (r tracked) Rmdir(c <-chan struct{}, h *fuse.InHeader, name string) fuse.Status {
	defer r.t.End(r.t.Begin(h.Unique, opRmdir))
	return r.RawFileSystem.Rmdir(c, h, name)
}

func (r tracked) Rename(c <-chan struct{}, in *fuse.RenameIn, oldName, newName string) fuse.Status {
	defer r.t.End(r.t.Begin(in.Unique, opRename))
	return r.RawFileSystem.Rename(c, in, oldName, newName)
}

func (r tracked) Link(c <-chan struct{}, in *fuse.LinkIn, name string, out *fuse.EntryOut) fuse.Status {
	defer r.t.End(r.t.Begin(in.Unique, opLink))
	return r.RawFileSystem.Link(c, in, name, out)
}

func (r tracked) Symlink(c <-chan struct{}, h *fuse.InHeader, target, name string, out *fuse.EntryOut) fuse.Status {
	defer r.t.End(r.t.Begin(h.Unique, opSymlink))
	return r.RawFileSystem.Symlink(c, h, target, name, out)
}

func (r tracked) Readlink(c <-chan struct{}, h *fuse.InHeader) ([]byte, fuse.Status) {
	defer r.t.End(r.t.Begin(h.Unique, opReadlink))
	return r.RawFileSystem.Readlink(c, h)
}

func (r tracked) Access(c <-chan struct{}, in *fuse.AccessIn) fuse.Status {
	defer r.t.End(r.t.Begin(in.Unique, opAccess))
	return r.RawFileSystem.Access(c, in)
}

func (r tracked) GetXAttr(c <-chan struct{}, h *fuse.InHeader, attr string, dest []byte) (uint32, fuse.Status) {
	defer r.t.End(r.t.Begin(h.Unique, opGetXAttr))
	return r.RawFileSystem.GetXAttr(c, h, attr, dest)
}

func (r tracked) ListXAttr(c <-chan struct{}, h *fuse.InHeader, dest []byte) (uint32, fuse.Status) {
	defer r.t.End(r.t.Begin(h.Unique, opListXAttr))
	return r.RawFileSystem.ListXAttr(c, h, dest)
}

func (r tracked) SetXAttr(c <-chan struct{}, in *fuse.SetXAttrIn, attr string, data []byte) fuse.Status {
	defer r.t.End(r.t.Begin(in.Unique, opSetXAttr))
	return r.RawFileSystem.SetXAttr(c, in, attr, data)
}

func (r tracked) RemoveXAttr(c <-chan struct{}, h *fuse.InHeader, attr string) fuse.Status {
	defer r.t.End(r.t.Begin(h.Unique, opRemoveXAttr))
	return r.RawFileSystem.RemoveXAttr(c, h, attr)
}

func (r tracked) Create(c <-chan struct{}, in *fuse.CreateIn, name string, out *fuse.CreateOut) fuse.Status {
	defer r.t.End(r.t.Begin(in.Unique, opCreate))
	return r.RawFileSystem.Create(c, in, name, out)
}

func (r tracked) Tmpfile(c <-chan struct{}, in *fuse.CreateIn, out *fuse.CreateOut) fuse.Status {
	defer r.t.End(r.t.Begin(in.Unique, opTmpfile))
	return r.RawFileSystem.Tmpfile(c, in, out)
}

func (r tracked) Open(c <-chan struct{}, in *fuse.OpenIn, out *fuse.OpenOut) fuse.Status {
	defer r.t.End(r.t.Begin(in.Unique, opOpen))
	return r.RawFileSystem.Open(c, in, out)
}

func (r tracked) Read(c <-chan struct{}, in *fuse.ReadIn, buf []byte) (fuse.ReadResult, fuse.Status) {
	defer r.t.End(r.t.Begin(in.Unique, opRead))
	return r.RawFileSystem.Read(c, in, buf)
}

func (r tracked) Lseek(c <-chan struct{}, in *fuse.LseekIn, out *fuse.LseekOut) fuse.Status {
	defer r.t.End(r.t.Begin(in.Unique, opLseek))
	return r.RawFileSystem.Lseek(c, in, out)
}

func (r tracked) GetLk(c <-chan struct{}, in *fuse.LkIn, out *fuse.LkOut) fuse.Status {
	defer r.t.End(r.t.Begin(in.Unique, opGetLk))
	return r.RawFileSystem.GetLk(c, in, out)
}

func (r tracked) SetLk(c <-chan struct{}, in *fuse.LkIn) fuse.Status {
	defer r.t.End(r.t.Begin(in.Unique, opSetLk))
	return r.RawFileSystem.SetLk(c, in)
}

func (r tracked) Release(c <-chan struct{}, in *fuse.ReleaseIn) {
	defer r.t.End(r.t.Begin(in.Unique, opRelease))
	r.RawFileSystem.Release(c, in)
}

func (r tracked) Write(c <-chan struct{}, in *fuse.WriteIn, data []byte) (uint32, fuse.Status) {
	defer r.t.End(r.t.Begin(in.Unique, opWrite))
	return r.RawFileSystem.Write(c, in, data)
}

func (r tracked) Writev(c <-chan struct{}, in *fuse.WriteIn, data [][]byte) (uint32, fuse.Status) {
	defer r.t.End(r.t.Begin(in.Unique, opWrite))
	return r.RawFileSystem.Writev(c, in, data)
}

func (r tracked) CopyFileRange(c <-chan struct{}, in *fuse.CopyFileRangeIn) (uint32, fuse.Status) {
	defer r.t.End(r.t.Begin(in.Unique, opCopyFileRange))
	return r.RawFileSystem.CopyFileRange(c, in)
}

func (r tracked) Ioctl(c <-chan struct{}, in *fuse.IoctlIn, inbuf []byte, out *fuse.IoctlOut, outbuf []byte) fuse.Status {
	defer r.t.End(r.t.Begin(in.Unique, opIoctl))
	return r.RawFileSystem.Ioctl(c, in, inbuf, out, outbuf)
}

func (r tracked) Flush(c <-chan struct{}, in *fuse.FlushIn) fuse.Status {
	defer r.t.End(r.t.Begin(in.Unique, opFlush))
	return r.RawFileSystem.Flush(c, in)
}

func (r tracked) Fsync(c <-chan struct{}, in *fuse.FsyncIn) fuse.Status {
	defer r.t.End(r.t.Begin(in.Unique, opFsync))
	return r.RawFileSystem.Fsync(c, in)
}

func (r tracked) Fallocate(c <-chan struct{}, in *fuse.FallocateIn) fuse.Status {
	defer r.t.End(r.t.Begin(in.Unique, opFallocate))
	return r.RawFileSystem.Fallocate(c, in)
}

func (r tracked) OpenDir(c <-chan struct{}, in *fuse.OpenIn, out *fuse.OpenOut) fuse.Status {
	defer r.t.End(r.t.Begin(in.Unique, opOpenDir))
	return r.RawFileSystem.OpenDir(c, in, out)
}

func (r tracked) ReadDir(c <-chan struct{}, in *fuse.ReadIn, out *fuse.DirEntryList) fuse.Status {
	defer r.t.End(r.t.Begin(in.Unique, opReadDir))
	return r.RawFileSystem.ReadDir(c, in, out)
}

func (r tracked) ReadDirPlus(c <-chan struct{}, in *fuse.ReadIn, out *fuse.DirEntryList) fuse.Status {
	defer r.t.End(r.t.Begin(in.Unique, opReadDirPlus))
	return r.RawFileSystem.ReadDirPlus(c, in, out)
}

func (r tracked) ReleaseDir(in *fuse.ReleaseIn) {
	defer r.t.End(r.t.Begin(in.Unique, opReleaseDir))
	r.RawFileSystem.ReleaseDir(in)
}

func (r tracked) FsyncDir(c <-chan struct{}, in *fuse.FsyncIn) fuse.Status {
	defer r.t.End(r.t.Begin(in.Unique, opFsyncDir))
	return r.RawFileSystem.FsyncDir(c, in)
}

func (r tracked) StatFs(c <-chan struct{}, h *fuse.InHeader, out *fuse.StatfsOut) fuse.Status {
	defer r.t.End(r.t.Begin(h.Unique, opStatFs))
	return r.RawFileSystem.StatFs(c, h, out)
}

func (r tracked) Statx(c <-chan struct{}, in *fuse.StatxIn, out *fuse.StatxOut) fuse.Status {
	defer r.t.End(r.t.Begin(in.Unique, opStatx))
	return r.RawFileSystem.Statx(c, in, out)
}
