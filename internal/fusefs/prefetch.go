package fusefs

import (
	"context"
	"sync"
	"syscall"

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
const (
	prefetchWorkers = 16   // listings in flight at once, mount-wide
	prefetchQueue   = 4096 // directories waiting; more are left to the reader
)

type prefetcher struct {
	f *filesys

	// mu guards stack and workers.
	mu      sync.Mutex
	stack   []prefetchJob
	workers int
}

type prefetchJob struct {
	dir   string
	depth int // levels below the directory read
}

func newPrefetcher(f *filesys) *prefetcher { return &prefetcher{f: f} }

// read queues the subdirectories of dir, whose listing ents a reader or a
// lookup just used; walking says the listing had been prefetched.
func (p *prefetcher) read(dir string, ents []remote.DirEntry, walking bool) {
	depth := 0
	if !walking {
		depth = p.f.opts.PrefetchDepth - 1
	}
	p.subdirs(dir, ents, depth)
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
		ents, err = p.f.ns.ReadDir(ctx, dir)
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
	ents, err := f.ns.ReadDir(ctx, dir)
	if err == nil {
		f.pre.read(dir, ents, false)
	}
	return ents, err
}
