package fusefs

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"sshfsm/internal/cache"
	"sshfsm/internal/remote"
)

// Walks (find, git status, ls -R, builds) read a directory and then each of
// its subdirectories, depth first: one listing round trip after another.
// When a directory is read or listed for a lookup, its subdirectories are
// queued to be listed in the background by a few workers. When the reader
// then uses one of those prefetched listings, it is walking the tree, and
// the next Options.PrefetchDepth levels below are queued, so the walk finds
// each listing in the cache or already on its way. A single look (ls, one
// stat) thus costs one level of listings ahead; only a walk goes deeper,
// and never further than PrefetchDepth levels ahead of the walker. The
// queue is a stack: what the last directory read revealed is what a
// depth-first walk needs next.
//
// When the namespace can list a whole subtree in one request
// (remote.TreeLister), a walk detected at a directory lists the levels
// below it that way instead (bulkDepthFactor times PrefetchDepth),
// publishing each directory's listing as it completes (cache.Bulk): one
// remote command instead of an OPENDIR, READDIRs and a CLOSE per
// directory. Its listings are prefetched ones, so a walk reaching its
// deepest level starts the next bulk listing there. A host that cannot
// list trees, or a listing that fails, falls back to the listings above.
const (
	prefetchWorkers = 16   // listings in flight at once, mount-wide
	prefetchQueue   = 4096 // directories waiting; more are left to the reader
	// bulkDepthFactor: a bulk listing goes this many times PrefetchDepth
	// levels deep. Its cost is per entry, not per directory, and a walk
	// reaching its last level waits for the next one to start: with 6
	// levels, a walk of Go's source tree ran about 50 listings one after
	// the other, with 24 one.
	bulkDepthFactor = 4
	// bulkRetry is how long walks are listed directory by directory
	// after a bulk listing failed (the connection was down, the user's
	// own ssh master refused the command...).
	bulkRetry = 30 * time.Second
)

type prefetcher struct {
	f *filesys

	// mu guards stack, wanted and workers.
	mu    sync.Mutex
	stack []prefetchJob
	// wanted holds the directories queued since, until a reader reads
	// them (or it grows past maxWanted and starts afresh).
	wanted map[string]bool
	// readDirs holds directories readers read (bounded like wanted).
	readDirs map[string]bool
	workers  int

	// noBulk: the namespace cannot list trees; walks are prefetched
	// directory by directory. bulkPause: after a failed bulk listing,
	// none is tried before this time (unix nanoseconds).
	noBulk    atomic.Bool
	bulkPause atomic.Int64
	// fullUntil: until then (unix nanoseconds) readers during a walk get
	// the entries of files too (statsFiles).
	fullUntil atomic.Int64
}

type prefetchJob struct {
	dir   string
	depth int // levels below the directory read
}

func newPrefetcher(f *filesys) *prefetcher {
	return &prefetcher{f: f, wanted: map[string]bool{}, readDirs: map[string]bool{}}
}

// maxWanted bounds the directories remembered as queued.
const maxWanted = 4 * prefetchQueue

// read queues the subdirectories of dir, whose listing ents a reader or a
// lookup just used; walking says the listing had been prefetched. A
// reader that listed dir itself after it was queued got there before
// the prefetcher: it is walking too. It reports whether a walk goes on.
func (p *prefetcher) read(dir string, ents []remote.DirEntry, walking bool) bool {
	p.mu.Lock()
	walking = walking || p.wanted[dir]
	delete(p.wanted, dir)
	p.mu.Unlock()
	if walking && p.bulk(dir, ents, bulkDepthFactor*p.f.opts.PrefetchDepth, 0) {
		return true
	}
	depth := 0
	if !walking {
		depth = p.f.opts.PrefetchDepth - 1
		// A mount showing server identities lists each directory by a
		// remote command (identity.go), which costs far more than an
		// SFTP READDIR: the level ahead is one tree listing, not one
		// command per subdirectory.
		if p.f.serverIDs() && p.bulk(dir, ents, 1, depth) {
			return false
		}
	}
	p.subdirs(dir, ents, depth)
	return walking
}

// Entries of files during a walk. An entry in a READDIRPLUS reply makes
// the kernel build an inode and go-fuse a node for it, most of what a
// walk costs the kernel and this process. find, the commonest walker,
// needs the entries of directories only (file types come with the
// names); walkers that stat every file (ls -lR, du, grep -r) then look
// each one up from the listing, one request each. So a directory read
// during a walk leaves its files out of READDIRPLUS, until a name so left
// out is looked up: walkers stat files, and for fullWindow every reader
// gets every entry again.
const fullWindow = 30 * time.Second

// filesLeftOut reports whether a reader in a walk leaves out the entries
// of files.
func (p *prefetcher) filesLeftOut() bool {
	return time.Now().UnixNano() >= p.fullUntil.Load()
}

// leavesFilesOut records that a reader read dir and reports whether that
// read leaves the entries of files out: it does during a walk, below a
// directory a reader read. ls -l DIR on a fresh mount reads a prefetched
// listing too (the lookup of DIR listed its parent), but nobody read the
// parent: a look at one directory, whose files it stats, gets them all.
func (p *prefetcher) leavesFilesOut(dir string, walking bool) bool {
	parent, _ := split(dir)
	p.mu.Lock()
	below := dir != "" && p.readDirs[parent]
	if len(p.readDirs) >= maxWanted {
		clear(p.readDirs)
	}
	p.readDirs[dir] = true
	p.mu.Unlock()
	return walking && below && p.filesLeftOut()
}

// wasRead reports whether a reader read dir lately (readdir).
func (p *prefetcher) wasRead(dir string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.readDirs[dir]
}

// statsFiles records that a walker looked up a file whose entry its
// directory's read left out.
func (p *prefetcher) statsFiles() {
	p.fullUntil.Store(time.Now().Add(fullWindow).UnixNano())
}

// walked is read for a lookup that found the listing of dir prefetched.
func (p *prefetcher) walked(dir string) {
	if !p.f.dirs.TakePrefetched(dir) {
		return
	}
	if ents, ok := p.f.dirs.List(dir); ok {
		p.read(dir, ents, true)
	}
}

// subdirs queues the subdirectories of dir found in ents, dir being depth
// levels below the directory read. It never blocks.
func (p *prefetcher) subdirs(dir string, ents []remote.DirEntry, depth int) {
	if !p.f.dirs.Enabled() || p.f.opts.PrefetchDepth <= 0 || depth >= p.f.opts.PrefetchDepth {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	// Pushed last to first, so that the first subdirectory is taken first.
	for i := len(ents) - 1; i >= 0; i-- {
		e := ents[i]
		if e.Attr.Mode&syscall.S_IFMT != syscall.S_IFDIR || e.Name == "." || e.Name == ".." {
			continue
		}
		if len(p.stack) >= prefetchQueue {
			break
		}
		p.stack = append(p.stack, prefetchJob{join(dir, e.Name), depth + 1})
		if len(p.wanted) >= maxWanted {
			clear(p.wanted)
		}
		p.wanted[join(dir, e.Name)] = true
	}
	for p.workers < prefetchWorkers && p.workers < len(p.stack) {
		p.workers++
		go p.work()
	}
}

// work lists queued directories until none is left.
func (p *prefetcher) work() {
	for {
		p.mu.Lock()
		if len(p.stack) == 0 {
			p.workers--
			p.mu.Unlock()
			return
		}
		job := p.stack[len(p.stack)-1]
		p.stack = p.stack[:len(p.stack)-1]
		p.mu.Unlock()
		p.list(job)
	}
}

// list fetches one listing unless it is fresh or on its way, then queues
// the next level.
func (p *prefetcher) list(job prefetchJob) {
	var ents []remote.DirEntry
	fetch := func(ctx context.Context, dir string) ([]remote.DirEntry, error) {
		var err error
		ents, err = p.f.readDir(ctx, dir)
		return ents, err
	}
	done := make(chan struct{})
	p.f.dirs.Prefetch(context.Background(), job.dir, fetch, func() { close(done) })
	<-done
	if ents != nil {
		p.subdirs(job.dir, ents, job.depth)
	}
}

// listAhead lists dir for a lookup and queues its subdirectories, as a
// read of dir does: tools that stat paths (git status, make) walk the tree
// through lookups without reading every directory first.
func (f *filesys) listAhead(ctx context.Context, dir string) ([]remote.DirEntry, error) {
	ents, err := f.readDir(ctx, dir)
	if err == nil {
		f.pre.read(dir, ents, false)
	}
	return ents, err
}

// bulk lists depth levels below dir (where a walk was detected: many) in
// one request unless a bulk listing already covers them; should it fail,
// the subdirectories are queued as a read at the given fallback depth
// would. It reports false when the namespace cannot list trees (or did
// not lately).
func (p *prefetcher) bulk(dir string, ents []remote.DirEntry, depth, fallback int) bool {
	tl, ok := p.f.ns.(remote.TreeLister)
	if !ok || p.noBulk.Load() || !p.f.dirs.Enabled() || p.f.opts.PrefetchDepth <= 0 ||
		time.Now().UnixNano() < p.bulkPause.Load() {
		return false
	}
	if !hasSubdirs(ents) {
		return true
	}
	b := p.f.dirs.StartBulk(dir, depth)
	if b != nil {
		go p.runBulk(tl, b, dir, ents, fallback)
	}
	return true
}

// runBulk runs one bulk listing; if it fails, the walk at dir is
// prefetched directory by directory.
func (p *prefetcher) runBulk(tl remote.TreeLister, b *cache.Bulk, dir string, ents []remote.DirEntry, fallback int) {
	// No deadline of ours: the transport ends a listing whose remote
	// stays silent, and closing the namespace ends it too.
	start, dirs := time.Now(), 0
	err := tl.ListTree(context.Background(), b.Root(), b.Depth(), func(d string, ents []remote.DirEntry) {
		dirs++
		b.Publish(d, ents)
	})
	b.End(err == nil || errors.Is(err, remote.ErrTreeTruncated))
	p.f.log.Debug("bulk listing", "dir", dir, "depth", b.Depth(), "dirs", dirs, "took", time.Since(start), "err", err)
	switch {
	case err == nil, errors.Is(err, remote.ErrTreeTruncated):
		// Directories it did not reach are listed by their readers; a
		// walk going on there starts another bulk listing.
		return
	case errors.Is(err, remote.ErrTreeUnsupported):
		p.noBulk.Store(true)
	default:
		p.bulkPause.Store(time.Now().Add(bulkRetry).UnixNano())
	}
	p.subdirs(dir, ents, fallback)
}

func hasSubdirs(ents []remote.DirEntry) bool {
	for _, e := range ents {
		if e.Attr.Mode&syscall.S_IFMT == syscall.S_IFDIR && e.Name != "." && e.Name != ".." {
			return true
		}
	}
	return false
}
