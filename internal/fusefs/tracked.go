package fusefs

import (
	"strconv"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/hanwen/go-fuse/v2/fuse"
	"golang.org/x/sys/unix"

	"sshfsm/internal/inflight"
	"sshfsm/internal/metrics"
)

// tracked records every request the kernel waits on in a table of
// requests in flight (Options.Requests), from when go-fuse hands it to
// the file system until it is answered, so that a request that hangs is
// seen (sshfsm status) while it hangs. FORGET gets no answer, SETLKW may
// wait for a lock as long as its holder keeps it, and INTERRUPT is
// go-fuse's own: they are not tracked. With Options.Metrics, each
// request's duration and error are counted by kind as well.
type tracked struct {
	fuse.RawFileSystem
	t *inflight.Table
	m *RequestMetrics // nil: not measured
}

// RequestMetrics are the durations of the FUSE requests tracked and the
// errors they were answered with, by kind. The zero RequestMetrics is
// ready to use.
type RequestMetrics struct {
	durations [len(requestKinds)]metrics.Latency
	// errors counts the answers other than OK by kind and errno; errnos
	// beyond the table count as maxErrno.
	errors [len(requestKinds)][maxErrno + 1]atomic.Uint64
}

// maxErrno bounds the errnos counted apart (Linux's end below 134).
const maxErrno = 255

// Durations calls f with every kind's name and histogram, in opcode
// order, kinds never asked for included.
func (m *RequestMetrics) Durations(f func(kind string, b metrics.Buckets)) {
	for k := range m.durations {
		f(requestKinds[k], m.durations[k].Snapshot())
	}
}

// Errors calls f with every kind and errno (its name, such as ENOENT) that
// answered a request at least once, and how many it answered.
func (m *RequestMetrics) Errors(f func(kind, errno string, n uint64)) {
	for k := range m.errors {
		for e := range m.errors[k] {
			if n := m.errors[k][e].Load(); n > 0 {
				f(requestKinds[k], errnoName(e), n)
			}
		}
	}
}

func errnoName(e int) string {
	if e == maxErrno {
		return "other"
	}
	if name := unix.ErrnoName(syscall.Errno(e)); name != "" {
		return name
	}
	return "errno " + strconv.Itoa(e)
}

// begun is a request tracked since begin, for end.
type begun struct {
	tok   inflight.Token
	kind  int32
	start time.Time // zero when not measured
}

func (r tracked) begin(unique uint64, kind int32) begun {
	b := begun{tok: r.t.Begin(unique, kind), kind: kind}
	if r.m != nil {
		b.start = time.Now()
	}
	return b
}

// end ends the request b; st points to its answer, nil for requests
// answered without a status (RELEASE).
func (r tracked) end(b begun, st *fuse.Status) {
	r.t.End(b.tok)
	if r.m == nil {
		return
	}
	r.m.durations[b.kind].Observe(time.Since(b.start))
	if st != nil && *st != fuse.OK {
		r.m.errors[b.kind][min(uint32(*st), maxErrno)].Add(1)
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

func (r tracked) Lookup(c <-chan struct{}, h *fuse.InHeader, name string, out *fuse.EntryOut) (st fuse.Status) {
	defer r.end(r.begin(h.Unique, opLookup), &st)
	return r.RawFileSystem.Lookup(c, h, name, out)
}

func (r tracked) GetAttr(c <-chan struct{}, in *fuse.GetAttrIn, out *fuse.AttrOut) (st fuse.Status) {
	defer r.end(r.begin(in.Unique, opGetAttr), &st)
	return r.RawFileSystem.GetAttr(c, in, out)
}

func (r tracked) SetAttr(c <-chan struct{}, in *fuse.SetAttrIn, out *fuse.AttrOut) (st fuse.Status) {
	defer r.end(r.begin(in.Unique, opSetAttr), &st)
	return r.RawFileSystem.SetAttr(c, in, out)
}

func (r tracked) Mknod(c <-chan struct{}, in *fuse.MknodIn, name string, out *fuse.EntryOut) (st fuse.Status) {
	defer r.end(r.begin(in.Unique, opMknod), &st)
	return r.RawFileSystem.Mknod(c, in, name, out)
}

func (r tracked) Mkdir(c <-chan struct{}, in *fuse.MkdirIn, name string, out *fuse.EntryOut) (st fuse.Status) {
	defer r.end(r.begin(in.Unique, opMkdir), &st)
	return r.RawFileSystem.Mkdir(c, in, name, out)
}

func (r tracked) Unlink(c <-chan struct{}, h *fuse.InHeader, name string) (st fuse.Status) {
	defer r.end(r.begin(h.Unique, opUnlink), &st)
	return r.RawFileSystem.Unlink(c, h, name)
}

func (r tracked) Rmdir(c <-chan struct{}, h *fuse.InHeader, name string) (st fuse.Status) {
	defer r.end(r.begin(h.Unique, opRmdir), &st)
	return r.RawFileSystem.Rmdir(c, h, name)
}

func (r tracked) Rename(c <-chan struct{}, in *fuse.RenameIn, oldName, newName string) (st fuse.Status) {
	defer r.end(r.begin(in.Unique, opRename), &st)
	return r.RawFileSystem.Rename(c, in, oldName, newName)
}

func (r tracked) Link(c <-chan struct{}, in *fuse.LinkIn, name string, out *fuse.EntryOut) (st fuse.Status) {
	defer r.end(r.begin(in.Unique, opLink), &st)
	return r.RawFileSystem.Link(c, in, name, out)
}

func (r tracked) Symlink(c <-chan struct{}, h *fuse.InHeader, target, name string, out *fuse.EntryOut) (st fuse.Status) {
	defer r.end(r.begin(h.Unique, opSymlink), &st)
	return r.RawFileSystem.Symlink(c, h, target, name, out)
}

func (r tracked) Readlink(c <-chan struct{}, h *fuse.InHeader) (_ []byte, st fuse.Status) {
	defer r.end(r.begin(h.Unique, opReadlink), &st)
	return r.RawFileSystem.Readlink(c, h)
}

func (r tracked) Access(c <-chan struct{}, in *fuse.AccessIn) (st fuse.Status) {
	defer r.end(r.begin(in.Unique, opAccess), &st)
	return r.RawFileSystem.Access(c, in)
}

func (r tracked) GetXAttr(c <-chan struct{}, h *fuse.InHeader, attr string, dest []byte) (_ uint32, st fuse.Status) {
	defer r.end(r.begin(h.Unique, opGetXAttr), &st)
	return r.RawFileSystem.GetXAttr(c, h, attr, dest)
}

func (r tracked) ListXAttr(c <-chan struct{}, h *fuse.InHeader, dest []byte) (_ uint32, st fuse.Status) {
	defer r.end(r.begin(h.Unique, opListXAttr), &st)
	return r.RawFileSystem.ListXAttr(c, h, dest)
}

func (r tracked) SetXAttr(c <-chan struct{}, in *fuse.SetXAttrIn, attr string, data []byte) (st fuse.Status) {
	defer r.end(r.begin(in.Unique, opSetXAttr), &st)
	return r.RawFileSystem.SetXAttr(c, in, attr, data)
}

func (r tracked) RemoveXAttr(c <-chan struct{}, h *fuse.InHeader, attr string) (st fuse.Status) {
	defer r.end(r.begin(h.Unique, opRemoveXAttr), &st)
	return r.RawFileSystem.RemoveXAttr(c, h, attr)
}

func (r tracked) Create(c <-chan struct{}, in *fuse.CreateIn, name string, out *fuse.CreateOut) (st fuse.Status) {
	defer r.end(r.begin(in.Unique, opCreate), &st)
	return r.RawFileSystem.Create(c, in, name, out)
}

func (r tracked) Tmpfile(c <-chan struct{}, in *fuse.CreateIn, out *fuse.CreateOut) (st fuse.Status) {
	defer r.end(r.begin(in.Unique, opTmpfile), &st)
	return r.RawFileSystem.Tmpfile(c, in, out)
}

func (r tracked) Open(c <-chan struct{}, in *fuse.OpenIn, out *fuse.OpenOut) (st fuse.Status) {
	defer r.end(r.begin(in.Unique, opOpen), &st)
	return r.RawFileSystem.Open(c, in, out)
}

func (r tracked) Read(c <-chan struct{}, in *fuse.ReadIn, buf []byte) (_ fuse.ReadResult, st fuse.Status) {
	defer r.end(r.begin(in.Unique, opRead), &st)
	return r.RawFileSystem.Read(c, in, buf)
}

func (r tracked) Lseek(c <-chan struct{}, in *fuse.LseekIn, out *fuse.LseekOut) (st fuse.Status) {
	defer r.end(r.begin(in.Unique, opLseek), &st)
	return r.RawFileSystem.Lseek(c, in, out)
}

func (r tracked) GetLk(c <-chan struct{}, in *fuse.LkIn, out *fuse.LkOut) (st fuse.Status) {
	defer r.end(r.begin(in.Unique, opGetLk), &st)
	return r.RawFileSystem.GetLk(c, in, out)
}

func (r tracked) SetLk(c <-chan struct{}, in *fuse.LkIn) (st fuse.Status) {
	defer r.end(r.begin(in.Unique, opSetLk), &st)
	return r.RawFileSystem.SetLk(c, in)
}

func (r tracked) Release(c <-chan struct{}, in *fuse.ReleaseIn) {
	defer r.end(r.begin(in.Unique, opRelease), nil)
	r.RawFileSystem.Release(c, in)
}

func (r tracked) Write(c <-chan struct{}, in *fuse.WriteIn, data []byte) (_ uint32, st fuse.Status) {
	defer r.end(r.begin(in.Unique, opWrite), &st)
	return r.RawFileSystem.Write(c, in, data)
}

func (r tracked) Writev(c <-chan struct{}, in *fuse.WriteIn, data [][]byte) (_ uint32, st fuse.Status) {
	defer r.end(r.begin(in.Unique, opWrite), &st)
	return r.RawFileSystem.Writev(c, in, data)
}

func (r tracked) CopyFileRange(c <-chan struct{}, in *fuse.CopyFileRangeIn) (_ uint32, st fuse.Status) {
	defer r.end(r.begin(in.Unique, opCopyFileRange), &st)
	return r.RawFileSystem.CopyFileRange(c, in)
}

func (r tracked) Ioctl(c <-chan struct{}, in *fuse.IoctlIn, inbuf []byte, out *fuse.IoctlOut, outbuf []byte) (st fuse.Status) {
	defer r.end(r.begin(in.Unique, opIoctl), &st)
	return r.RawFileSystem.Ioctl(c, in, inbuf, out, outbuf)
}

func (r tracked) Flush(c <-chan struct{}, in *fuse.FlushIn) (st fuse.Status) {
	defer r.end(r.begin(in.Unique, opFlush), &st)
	return r.RawFileSystem.Flush(c, in)
}

func (r tracked) Fsync(c <-chan struct{}, in *fuse.FsyncIn) (st fuse.Status) {
	defer r.end(r.begin(in.Unique, opFsync), &st)
	return r.RawFileSystem.Fsync(c, in)
}

func (r tracked) Fallocate(c <-chan struct{}, in *fuse.FallocateIn) (st fuse.Status) {
	defer r.end(r.begin(in.Unique, opFallocate), &st)
	return r.RawFileSystem.Fallocate(c, in)
}

func (r tracked) OpenDir(c <-chan struct{}, in *fuse.OpenIn, out *fuse.OpenOut) (st fuse.Status) {
	defer r.end(r.begin(in.Unique, opOpenDir), &st)
	return r.RawFileSystem.OpenDir(c, in, out)
}

func (r tracked) ReadDir(c <-chan struct{}, in *fuse.ReadIn, out *fuse.DirEntryList) (st fuse.Status) {
	defer r.end(r.begin(in.Unique, opReadDir), &st)
	return r.RawFileSystem.ReadDir(c, in, out)
}

func (r tracked) ReadDirPlus(c <-chan struct{}, in *fuse.ReadIn, out *fuse.DirEntryList) (st fuse.Status) {
	defer r.end(r.begin(in.Unique, opReadDirPlus), &st)
	return r.RawFileSystem.ReadDirPlus(c, in, out)
}

func (r tracked) ReleaseDir(in *fuse.ReleaseIn) {
	defer r.end(r.begin(in.Unique, opReleaseDir), nil)
	r.RawFileSystem.ReleaseDir(in)
}

func (r tracked) FsyncDir(c <-chan struct{}, in *fuse.FsyncIn) (st fuse.Status) {
	defer r.end(r.begin(in.Unique, opFsyncDir), &st)
	return r.RawFileSystem.FsyncDir(c, in)
}

func (r tracked) StatFs(c <-chan struct{}, h *fuse.InHeader, out *fuse.StatfsOut) (st fuse.Status) {
	defer r.end(r.begin(h.Unique, opStatFs), &st)
	return r.RawFileSystem.StatFs(c, h, out)
}

func (r tracked) Statx(c <-chan struct{}, in *fuse.StatxIn, out *fuse.StatxOut) (st fuse.Status) {
	defer r.end(r.begin(in.Unique, opStatx), &st)
	return r.RawFileSystem.Statx(c, in, out)
}
