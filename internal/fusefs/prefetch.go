package fusefs

import (
	"context"
	"syscall"

	"sshfsm/internal/remote"
)

// Walks (find, git status, ls -R, builds) read a directory and then each of
// its subdirectories, one after the other: one listing round trip after
// another. When a directory is read, its subdirectories are listed ahead in
// the background, a few at a time, so the walk finds them in the listing
// cache or already on their way. Only directories actually read trigger
// this, so it stays one level ahead of the reader and never crawls a tree
// on its own.
const (
	prefetchParallel = 4   // listings in flight at once, mount-wide
	prefetchPerDir   = 256 // subdirectories considered per directory read
)

type prefetcher struct {
	slots chan struct{} // a token per listing in flight
}

func newPrefetcher() *prefetcher {
	return &prefetcher{slots: make(chan struct{}, prefetchParallel)}
}

// subdirs starts listing the subdirectories of dir found in ents. It never
// blocks: subdirectories beyond the free slots are left for the reader.
func (p *prefetcher) subdirs(f *filesys, dir string, ents []remote.DirEntry) {
	if !f.dirs.Enabled() {
		return
	}
	seen := 0
	for _, e := range ents {
		if e.Attr.Mode&syscall.S_IFMT != syscall.S_IFDIR || e.Name == "." || e.Name == ".." {
			continue
		}
		if seen++; seen > prefetchPerDir {
			return
		}
		select {
		case p.slots <- struct{}{}:
		default:
			return
		}
		// Prefetch starts nothing, and frees the slot at once, when
		// the listing is fresh or already on its way.
		f.dirs.Prefetch(context.Background(), join(dir, e.Name), f.ns.ReadDir, func() { <-p.slots })
	}
}
