package fusefs

import (
	"time"

	"github.com/hanwen/go-fuse/v2/fuse"

	"sshfsm/internal/inflight"
	"sshfsm/internal/metrics"
)

// tracked records every request the kernel waits on in a table of
// requests in flight (Options.Requests), from when go-fuse hands it to
// the file system until it is answered, so that a request that hangs is
// seen (sshfsm status) while it hangs. FORGET gets no answer, SETLKW may
// wait for a lock as long as its holder keeps it, and INTERRUPT is
// go-fuse's own: they are not tracked. With Options.Latency, each
// request's duration is recorded by kind as well.
type tracked struct {
	fuse.RawFileSystem
	t   *inflight.Table
	lat *RequestLatency // nil: not timed
}

// RequestLatency is the histogram of the durations of the FUSE requests
// tracked, by kind. The zero RequestLatency is ready to use.
type RequestLatency struct {
	kinds [len(requestKinds)]metrics.Latency
}

// Each calls f with every kind's name and histogram, in opcode order,
// kinds never asked for included.
func (l *RequestLatency) Each(f func(kind string, b metrics.Buckets)) {
	for k := range l.kinds {
		f(requestKinds[k], l.kinds[k].Snapshot())
	}
}

// begun is a request tracked since begin, for end.
type begun struct {
	tok   inflight.Token
	kind  int32
	start time.Time // zero when not timed
}

func (r tracked) begin(unique uint64, kind int32) begun {
	b := begun{tok: r.t.Begin(unique, kind), kind: kind}
	if r.lat != nil {
		b.start = time.Now()
	}
	return b
}

func (r tracked) end(b begun) {
	r.t.End(b.tok)
	if r.lat != nil {
		r.lat.kinds[b.kind].Observe(time.Since(b.start))
	}
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
	defer r.end(r.begin(h.Unique, opLookup))
	return r.RawFileSystem.Lookup(c, h, name, out)
}

func (r tracked) GetAttr(c <-chan struct{}, in *fuse.GetAttrIn, out *fuse.AttrOut) fuse.Status {
	defer r.end(r.begin(in.Unique, opGetAttr))
	return r.RawFileSystem.GetAttr(c, in, out)
}

func (r tracked) SetAttr(c <-chan struct{}, in *fuse.SetAttrIn, out *fuse.AttrOut) fuse.Status {
	defer r.end(r.begin(in.Unique, opSetAttr))
	return r.RawFileSystem.SetAttr(c, in, out)
}

func (r tracked) Mknod(c <-chan struct{}, in *fuse.MknodIn, name string, out *fuse.EntryOut) fuse.Status {
	defer r.end(r.begin(in.Unique, opMknod))
	return r.RawFileSystem.Mknod(c, in, name, out)
}

func (r tracked) Mkdir(c <-chan struct{}, in *fuse.MkdirIn, name string, out *fuse.EntryOut) fuse.Status {
	defer r.end(r.begin(in.Unique, opMkdir))
	return r.RawFileSystem.Mkdir(c, in, name, out)
}

func (r tracked) Unlink(c <-chan struct{}, h *fuse.InHeader, name string) fuse.Status {
	defer r.end(r.begin(h.Unique, opUnlink))
	return r.RawFileSystem.Unlink(c, h, name)
}

func (r tracked) Rmdir(c <-chan struct{}, h *fuse.InHeader, name string) fuse.Status {
	defer r.end(r.begin(h.Unique, opRmdir))
	return r.RawFileSystem.Rmdir(c, h, name)
}

func (r tracked) Rename(c <-chan struct{}, in *fuse.RenameIn, oldName, newName string) fuse.Status {
	defer r.end(r.begin(in.Unique, opRename))
	return r.RawFileSystem.Rename(c, in, oldName, newName)
}

func (r tracked) Link(c <-chan struct{}, in *fuse.LinkIn, name string, out *fuse.EntryOut) fuse.Status {
	defer r.end(r.begin(in.Unique, opLink))
	return r.RawFileSystem.Link(c, in, name, out)
}

func (r tracked) Symlink(c <-chan struct{}, h *fuse.InHeader, target, name string, out *fuse.EntryOut) fuse.Status {
	defer r.end(r.begin(h.Unique, opSymlink))
	return r.RawFileSystem.Symlink(c, h, target, name, out)
}

func (r tracked) Readlink(c <-chan struct{}, h *fuse.InHeader) ([]byte, fuse.Status) {
	defer r.end(r.begin(h.Unique, opReadlink))
	return r.RawFileSystem.Readlink(c, h)
}

func (r tracked) Access(c <-chan struct{}, in *fuse.AccessIn) fuse.Status {
	defer r.end(r.begin(in.Unique, opAccess))
	return r.RawFileSystem.Access(c, in)
}

func (r tracked) GetXAttr(c <-chan struct{}, h *fuse.InHeader, attr string, dest []byte) (uint32, fuse.Status) {
	defer r.end(r.begin(h.Unique, opGetXAttr))
	return r.RawFileSystem.GetXAttr(c, h, attr, dest)
}

func (r tracked) ListXAttr(c <-chan struct{}, h *fuse.InHeader, dest []byte) (uint32, fuse.Status) {
	defer r.end(r.begin(h.Unique, opListXAttr))
	return r.RawFileSystem.ListXAttr(c, h, dest)
}

func (r tracked) SetXAttr(c <-chan struct{}, in *fuse.SetXAttrIn, attr string, data []byte) fuse.Status {
	defer r.end(r.begin(in.Unique, opSetXAttr))
	return r.RawFileSystem.SetXAttr(c, in, attr, data)
}

func (r tracked) RemoveXAttr(c <-chan struct{}, h *fuse.InHeader, attr string) fuse.Status {
	defer r.end(r.begin(h.Unique, opRemoveXAttr))
	return r.RawFileSystem.RemoveXAttr(c, h, attr)
}

func (r tracked) Create(c <-chan struct{}, in *fuse.CreateIn, name string, out *fuse.CreateOut) fuse.Status {
	defer r.end(r.begin(in.Unique, opCreate))
	return r.RawFileSystem.Create(c, in, name, out)
}

func (r tracked) Tmpfile(c <-chan struct{}, in *fuse.CreateIn, out *fuse.CreateOut) fuse.Status {
	defer r.end(r.begin(in.Unique, opTmpfile))
	return r.RawFileSystem.Tmpfile(c, in, out)
}

func (r tracked) Open(c <-chan struct{}, in *fuse.OpenIn, out *fuse.OpenOut) fuse.Status {
	defer r.end(r.begin(in.Unique, opOpen))
	return r.RawFileSystem.Open(c, in, out)
}

func (r tracked) Read(c <-chan struct{}, in *fuse.ReadIn, buf []byte) (fuse.ReadResult, fuse.Status) {
	defer r.end(r.begin(in.Unique, opRead))
	return r.RawFileSystem.Read(c, in, buf)
}

func (r tracked) Lseek(c <-chan struct{}, in *fuse.LseekIn, out *fuse.LseekOut) fuse.Status {
	defer r.end(r.begin(in.Unique, opLseek))
	return r.RawFileSystem.Lseek(c, in, out)
}

func (r tracked) GetLk(c <-chan struct{}, in *fuse.LkIn, out *fuse.LkOut) fuse.Status {
	defer r.end(r.begin(in.Unique, opGetLk))
	return r.RawFileSystem.GetLk(c, in, out)
}

func (r tracked) SetLk(c <-chan struct{}, in *fuse.LkIn) fuse.Status {
	defer r.end(r.begin(in.Unique, opSetLk))
	return r.RawFileSystem.SetLk(c, in)
}

func (r tracked) Release(c <-chan struct{}, in *fuse.ReleaseIn) {
	defer r.end(r.begin(in.Unique, opRelease))
	r.RawFileSystem.Release(c, in)
}

func (r tracked) Write(c <-chan struct{}, in *fuse.WriteIn, data []byte) (uint32, fuse.Status) {
	defer r.end(r.begin(in.Unique, opWrite))
	return r.RawFileSystem.Write(c, in, data)
}

func (r tracked) Writev(c <-chan struct{}, in *fuse.WriteIn, data [][]byte) (uint32, fuse.Status) {
	defer r.end(r.begin(in.Unique, opWrite))
	return r.RawFileSystem.Writev(c, in, data)
}

func (r tracked) CopyFileRange(c <-chan struct{}, in *fuse.CopyFileRangeIn) (uint32, fuse.Status) {
	defer r.end(r.begin(in.Unique, opCopyFileRange))
	return r.RawFileSystem.CopyFileRange(c, in)
}

func (r tracked) Ioctl(c <-chan struct{}, in *fuse.IoctlIn, inbuf []byte, out *fuse.IoctlOut, outbuf []byte) fuse.Status {
	defer r.end(r.begin(in.Unique, opIoctl))
	return r.RawFileSystem.Ioctl(c, in, inbuf, out, outbuf)
}

func (r tracked) Flush(c <-chan struct{}, in *fuse.FlushIn) fuse.Status {
	defer r.end(r.begin(in.Unique, opFlush))
	return r.RawFileSystem.Flush(c, in)
}

func (r tracked) Fsync(c <-chan struct{}, in *fuse.FsyncIn) fuse.Status {
	defer r.end(r.begin(in.Unique, opFsync))
	return r.RawFileSystem.Fsync(c, in)
}

func (r tracked) Fallocate(c <-chan struct{}, in *fuse.FallocateIn) fuse.Status {
	defer r.end(r.begin(in.Unique, opFallocate))
	return r.RawFileSystem.Fallocate(c, in)
}

func (r tracked) OpenDir(c <-chan struct{}, in *fuse.OpenIn, out *fuse.OpenOut) fuse.Status {
	defer r.end(r.begin(in.Unique, opOpenDir))
	return r.RawFileSystem.OpenDir(c, in, out)
}

func (r tracked) ReadDir(c <-chan struct{}, in *fuse.ReadIn, out *fuse.DirEntryList) fuse.Status {
	defer r.end(r.begin(in.Unique, opReadDir))
	return r.RawFileSystem.ReadDir(c, in, out)
}

func (r tracked) ReadDirPlus(c <-chan struct{}, in *fuse.ReadIn, out *fuse.DirEntryList) fuse.Status {
	defer r.end(r.begin(in.Unique, opReadDirPlus))
	return r.RawFileSystem.ReadDirPlus(c, in, out)
}

func (r tracked) ReleaseDir(in *fuse.ReleaseIn) {
	defer r.end(r.begin(in.Unique, opReleaseDir))
	r.RawFileSystem.ReleaseDir(in)
}

func (r tracked) FsyncDir(c <-chan struct{}, in *fuse.FsyncIn) fuse.Status {
	defer r.end(r.begin(in.Unique, opFsyncDir))
	return r.RawFileSystem.FsyncDir(c, in)
}

func (r tracked) StatFs(c <-chan struct{}, h *fuse.InHeader, out *fuse.StatfsOut) fuse.Status {
	defer r.end(r.begin(h.Unique, opStatFs))
	return r.RawFileSystem.StatFs(c, h, out)
}

func (r tracked) Statx(c <-chan struct{}, in *fuse.StatxIn, out *fuse.StatxOut) fuse.Status {
	defer r.end(r.begin(in.Unique, opStatx))
	return r.RawFileSystem.Statx(c, in, out)
}
