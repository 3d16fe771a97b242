// Package fusefs serves a namespace to the kernel through go-fuse: nodes,
// file handles, attribute reporting and the one errno translator.
package fusefs

import (
	"log/slog"
	"os"
	"runtime"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"

	"sshfsm/internal/cache"
	"sshfsm/internal/contentcache"
	"sshfsm/internal/inflight"
	"sshfsm/internal/namespace"
)

// IDMapper translates user and group ids between the local machine and
// the remote. ok=false leaves the id unchanged.
type IDMapper interface {
	LocalUID(remote uint32) (uint32, bool)
	LocalGID(remote uint32) (uint32, bool)
	RemoteUID(local uint32) (uint32, bool)
	RemoteGID(local uint32) (uint32, bool)
}

// Options shape what the filesystem reports and how much it caches.
type Options struct {
	AttrTimeout, EntryTimeout, NegativeTimeout, DirCacheTimeout time.Duration
	// PrefetchDepth is how many levels of subdirectories below a directory
	// being read are listed ahead in the background; 0 turns it off.
	PrefetchDepth                                      int
	KernelCache, DirectIO, ReadOnly                    bool
	UID, GID                                           *uint32 // report every file as owned by these
	Umask                                              *uint32 // cleared from every reported mode
	IDMap                                              IDMapper
	FollowSymlinks, TransformSymlinks, ContainSymlinks bool
	MountPrefix                                        string // absolute remote root, for TransformSymlinks
	MountPrefixAt                                      string // where the mount shows MountPrefix: "" (its root) or a graft's name
	// RemoteUID and RemoteGID are the remote user's ids, when
	// RemoteIDsKnown: a read-only open is deferred to the first read
	// only when they may surely read the file.
	RemoteUID, RemoteGID uint32
	RemoteIDsKnown       bool
	Logger               *slog.Logger
	// Changes, when set, carries batches of paths changed on the servers
	// (internal/watch); the mount drops what it caches of them (watch.go).
	Changes <-chan []namespace.Change
	// Cache, when set, is the listing cache to use instead of a new one
	// keeping listings DirCacheTimeout; its owner reads its counters.
	Cache *cache.Dirs
	// Mode is the coherence mode (-o cache=).
	Mode cache.Mode
	// MetaFile, when set, is the snapshot file that keeps listings
	// across mounts of the same tree (persist.go); Mode says what loaded
	// listings may answer.
	MetaFile string
	// Content, when set, keeps file contents on local disk (content.go);
	// ContentID names the mount's files there: the same ID across mounts
	// finds what earlier ones stored.
	Content   *contentcache.Cache
	ContentID string
	// Xattr serves the mount's own extended attributes (xattr.go).
	Xattr bool
	// DisableHardlink makes Link fail with EPERM without asking a server.
	DisableHardlink bool
	// RequestTimeout bounds the whole of a request that only looks
	// (lookup, getattr, readdir, readlink, statfs, access), however many
	// server requests it makes one after another: each of those is
	// bounded by the transport's timeout, and a lookup that waited for a
	// listing the server did not answer must not then wait as long again
	// for a stat. 0: no bound beyond the transport's.
	RequestTimeout time.Duration
	// OwnNewFiles gives new files their creator's owner where the server
	// can (owner.go): for mounts that several local users share.
	OwnNewFiles bool
	// Requests, when set, records every FUSE request in flight and when
	// it began (tracked.go); kinds are named by RequestKind.
	Requests *inflight.Table
	// Metrics, when set with Requests, counts the duration and the
	// error of each of those requests by kind (for metrics=).
	Metrics *RequestMetrics
	// ServerInodes shows the inode numbers the server's tree listings
	// tell (find's %i), where they keep the mount's numbers unique, and
	// lists directories that way: the namespace is one host's tree, so
	// two files never share one. A checkout indexed on the server then
	// looks unchanged to git (it compares st_ino). Off, numbers are
	// hashes of the paths.
	ServerInodes bool
	// Ended, when set, is closed once the kernel has ended the mount's
	// FUSE connection (unmounted, from here or from outside, or aborted),
	// which may be long before the server's Wait returns: requests still
	// being served then answer nobody (connend.go). It is never closed
	// when that cannot be watched.
	Ended chan struct{}

	// inoHash replaces hashIno, for tests that make paths collide.
	inoHash func(string) uint64
}

// MountOptions are passed to the kernel at mount time.
type MountOptions struct {
	FsName, Subtype                                  string
	AllowOther, AllowRoot, DefaultPermissions, Debug bool
	MaxWrite                                         int
	// AutoUnmount leaves fusermount3 behind to unmount when the process
	// ends, however it ends (autounmount.go). Unmount then with Unmount,
	// not the server's.
	AutoUnmount bool
	// Flags are mount(8)'s generic flags (noexec, noatime...) in the
	// order given; the last of a pair wins. nosuid and nodev are always on.
	Flags []string
}

const (
	defaultMaxWrite = 1 << 20
	// blockSize is reported as st_blksize: tools size their buffers by it,
	// and larger buffers mean fewer, larger FUSE requests.
	blockSize = 1 << 20
	// writeWindow bounds the bytes of one handle's writes in flight.
	writeWindow = 8 << 20
)

// filesys is the state shared by every node of one mount.
type filesys struct {
	ns   namespace.Namespace
	opts Options
	log  *slog.Logger
	root *node
	dirs *cache.Dirs
	pre  *prefetcher
	inos *inoTable
	errs errLog
	syms symLog
	// conn is the mount's FUSE connection, known once mounted (Gone).
	conn atomic.Pointer[fuseConn]
	// notes tells the kernel what revalidations of persisted listings
	// found; nil without MetaFile.
	notes *notifier
	// fills are the disk cache's fetches in progress (content.go).
	fills fills
	// aheadSlots bounds the fetches ahead of readers (fetchahead.go).
	aheadSlots readAheadSlots
	// sib fetches the small files of directories readers read (siblings.go).
	sib *siblings
	// pt hands verified cached files to the kernel (passthrough.go).
	pt passthrough
	// noTree: the namespace could not list a directory by a tree listing
	// (identity.go).
	noTree atomic.Bool
	// own remembers the mount's own recent changes, so that the change
	// watcher's report of them is not taken for someone else's (echo.go).
	own ownChanges
}

// Mount mounts ns at mountpoint and serves it until the returned server is
// unmounted.
//
// Every remote call gets the kernel request's context, which go-fuse
// cancels when the kernel sends INTERRUPT (the caller got a signal). Each
// method narrows it to signals that end the caller or ask it to end
// (package interrupt), for which the call returns EINTR at once; SIGURG,
// SIGCHLD, timers and the like leave it running. Lookups are answered from whole-directory
// listings kept for DirCacheTimeout, which the mount's own changes keep
// current. Writes are pipelined; their errors surface at the next write,
// fsync or close. Data cached by the kernel survives an open when size and
// mtime are unchanged (always with KernelCache; never with DirectIO); a
// read-only open of such a file reaches the server only when a read does
// (lazy.go).
func Mount(mountpoint string, ns namespace.Namespace, o Options, mo MountOptions) (*fuse.Server, error) {
	if _, _, err := kernelFlags(mo.Flags, o.ReadOnly); err != nil {
		return nil, err
	}
	fds := fuseFDs() // before the mount's own
	fsys := newFilesys(ns, o)
	fsys.startPersist()
	fo := fsys.fsOptions(mo)
	raw := fsys.rawFS(fo)
	if mo.AllowRoot {
		raw = ownerOrRoot{RawFileSystem: raw, owner: uint32(os.Getuid())}
	}
	at := mountpoint
	if mo.AutoUnmount {
		fo.MountOptions.DirectMount = false
		var err error
		if at, err = autoUnmount(mountpoint, &fo.MountOptions); err != nil {
			fsys.dirs.Close()
			return nil, err
		}
	}
	server, err := mountWithReaders(at, raw, &fo.MountOptions)
	if err != nil {
		fsys.dirs.Close()
		return nil, err
	}
	watchEnd(fds, o.Ended)
	if err := raiseReadahead(mountpoint, fo.MaxReadAhead>>10); err != nil {
		fsys.log.Debug("readahead left at the kernel default", "err", err)
	}
	if c := findConn(mountpoint); c != nil {
		fsys.conn.Store(c)
	}
	fsys.pt.probe(server, o)
	fsys.sib.stopAtUnmount(server)
	fsys.watchHealth(server)
	fsys.followChanges(server)
	fsys.persistUntilUnmount(server)
	return server, nil
}

// go-fuse keeps up to GOMAXPROCS goroutines blocked reading /dev/fuse
// and starts a new one, on a small stack that then grows by copying,
// whenever a request takes the last of them. And a goroutine blocked in a
// system call holds its P until the runtime's monitor takes it back,
// which it checks every 20 µs while no P is idle. With GOMAXPROCS at the
// core count (2 cores), both happened on nearly every request: about a
// sixth of the daemon's CPU at 4 KiB random reads went to stack copying
// and to the monitor's wakeups. So go-fuse gets fuseReaders readers, and
// there are enough Ps that blocked readers leave some idle. More readers
// cost more: each idle reader is a thread the kernel may wake, and the
// monitor wakes more often to look at their Ps. Measured on 2 cores
// (medians of 3-4 alternating runs, daemon CPU per MiB, 128 KiB O_DIRECT;
// fio IOPS, 4 KiB at queue depth 32): 8 readers and 16 Ps: seq read 0.89-0.92
// ms, seq write 0.74-0.76 ms, rand read 32.5k, rand write 27.1k; 4 and 8:
// 0.79-0.83, 0.68-0.71, 36.2k, 29.3k; 2 and 4: 0.72-0.76, 0.71-0.73, 34.5k,
// 30.1k.
const fuseReaders = 4

func mountWithReaders(mountpoint string, raw fuse.RawFileSystem, mo *fuse.MountOptions) (*fuse.Server, error) {
	procs := runtime.GOMAXPROCS(fuseReaders) // go-fuse sizes its pool from it
	server, err := fuse.NewServer(raw, mountpoint, mo)
	runtime.GOMAXPROCS(max(procs, 2*fuseReaders))
	if err != nil {
		return nil, err
	}
	fuseCloseOnExec()
	// What fs.Mount does once the server is made.
	go server.Serve()
	if err := server.WaitMount(); err != nil {
		return nil, err
	}
	return server, nil
}

func newFilesys(ns namespace.Namespace, o Options) *filesys {
	lg := o.Logger
	if lg == nil {
		lg = slog.New(slog.DiscardHandler)
	}
	fsys := &filesys{
		ns:   ns,
		opts: o,
		log:  lg,
		dirs: o.Cache,
		inos: newInoTable(o.inoHash),

		aheadSlots: make(readAheadSlots, readAheadMax),
	}
	if fsys.dirs == nil {
		fsys.dirs = cache.New(o.DirCacheTimeout, nil)
	}
	if o.Changes != nil {
		fsys.own.enable(nil)
	}
	fsys.root = &node{fsys: fsys}
	fsys.pre = newPrefetcher(fsys)
	fsys.sib = newSiblings(fsys)
	return fsys
}

// maxBackground is how many background requests the kernel keeps in flight.
const maxBackground = 64

func (f *filesys) fsOptions(mo MountOptions) *fs.Options {
	maxWrite := mo.MaxWrite
	if maxWrite <= 0 {
		maxWrite = defaultMaxWrite
	}
	var opts []string
	if mo.DefaultPermissions {
		opts = append(opts, "default_permissions")
	}
	// Mounting directly (as root), go-fuse passes the bits to mount(2);
	// through fusermount3 (an ordinary user, or root when mount(2) refuses
	// an access time name among the options), the names.
	flags, names, _ := kernelFlags(mo.Flags, f.opts.ReadOnly) // checked by Mount
	opts = append(opts, names...)
	entry, attr, neg := f.opts.EntryTimeout, f.opts.AttrTimeout, f.opts.NegativeTimeout
	return &fs.Options{
		MountOptions: fuse.MountOptions{
			// allow_root is allow_other for the kernel, and ownerOrRoot
			// in the daemon (Mount).
			AllowOther:       mo.AllowOther || mo.AllowRoot,
			Options:          opts,
			FsName:           mo.FsName,
			Name:             mo.Subtype,
			Debug:            mo.Debug,
			MaxWrite:         maxWrite,
			MaxReadAhead:     maxWrite,
			DirectMount:      true,
			DirectMountFlags: flags,
			// Without Xattr, Getxattr answers every name with ENOSYS
			// (misc.go), ACLs and capabilities included, and the kernel
			// stops asking. With it, go-fuse answers those ENODATA
			// itself: the kernel still asks once per file (ls -l).
			IgnoreSecurityLabels: f.opts.Xattr,
			// Asynchronous direct I/O keeps several O_DIRECT requests of
			// one file in flight (fio, databases); without it the kernel
			// sends them one at a time, one round trip each.
			ExtraCapabilities:    fuse.CAP_ASYNC_DIO,
			EnableSymlinkCaching: true,
			// Read data comes from SSH, never from a local descriptor, so
			// splicing cannot apply; left on, go-fuse still tries it for
			// every read reply and spends three system calls finding out.
			DisableSplice: true,
			// Asynchronous direct I/O and readahead are background
			// requests; the default of 12 in flight held 4 KiB random
			// reads at queue depth 32 to 23-24k IOPS, 64 gives 28-29k.
			MaxBackground: maxBackground,
		},
		EntryTimeout:    &entry,
		AttrTimeout:     &attr,
		NegativeTimeout: &neg,
		NullPermissions: true,
		RootStableAttr:  &fs.StableAttr{Ino: rootIno},
	}
}

// readOnly answers EROFS for modifications of a read-only mount.
func (f *filesys) readOnly() syscall.Errno {
	if f.opts.ReadOnly {
		return syscall.EROFS
	}
	return 0
}

// fuseCloseOnExec marks this process's descriptors of /dev/fuse
// close-on-exec. go-fuse's direct mount (as root) opens /dev/fuse without
// O_CLOEXEC and leaves it so: every ssh started afterwards (a reconnect, a
// channel opened on demand) would hold the FUSE connection open, and a
// daemon killed with SIGKILL would then leave the processes waiting on it
// in uninterruptible sleep, instead of failing them with ENOTCONN. It runs
// before the server serves its first request, so the mount's own work
// starts no process before it; only a reconnect at that instant could.
func fuseCloseOnExec() {
	for fd := range fuseFDs() {
		syscall.CloseOnExec(fd)
	}
}
