package fusefs

import (
	"context"
	"sync"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"

	"sshfsm/internal/remote"
)

// A namespace of several hosts (a union, grafts) reports through
// remote.Health when the set of hosts that answer changes: the names of a
// host that went down vanish, those of one that came back reappear, and a
// name may now be served by another host. The listings cached here and
// what the kernel caches (attributes, data, directory contents, negative
// entries) describe the old set, so at each change they are dropped:
//
//   - the listing cache, at once;
//   - the kernel's attributes and data of every inode it knows (up to
//     healthNotifyMax), which also drops its copy of directory contents;
//   - the kernel's negative entries for names that reappeared: the kernel
//     cannot be asked which it holds, so the directories it knows (up to
//     healthRelistMax, nearest the root first) are listed again and every
//     listed name that has no inode is invalidated. Positive entries are
//     left alone: invalidating a directory's entry would unhash it under
//     processes whose working directory it is; a name that vanished fails
//     its next getattr or open instead, and its entry expires with
//     EntryTimeout.
//
// Beyond those bounds, what the kernel holds expires with its timeouts.
const (
	healthNotifyMax = 1 << 16
	healthRelistMax = 1024
	healthWorkers   = 4
)

// watchHealth follows the namespace's Health, when it has one, until the
// server stops serving.
func (f *filesys) watchHealth(srv *fuse.Server) {
	h, ok := f.ns.(remote.Health)
	if !ok {
		return
	}
	done := make(chan struct{})
	go func() {
		srv.Wait()
		close(done)
	}()
	go f.followHealth(h, done)
}

// followHealth refreshes the caches after each change; a change during a
// refresh cancels it and starts another.
func (f *filesys) followHealth(h remote.Health, done <-chan struct{}) {
	stop := func() {}
	defer func() { stop() }()
	for {
		ch := h.Changed()
		select {
		case <-ch:
		case <-done:
			return
		}
		stop()
		ctx, cancel := context.WithCancel(context.Background())
		stop = cancel
		f.log.Info("the hosts that answer changed; cached names are dropped", "up", h.Up())
		go f.refresh(ctx)
	}
}

// knownDir is a directory the kernel knows, with its path.
type knownDir struct {
	in *fs.Inode
	p  string
}

// refresh drops what the listing cache and the kernel hold (see above).
func (f *filesys) refresh(ctx context.Context) {
	inodes, dirs := f.refreshBelow(ctx, &f.root.Inode, "")
	if ctx.Err() == nil {
		f.log.Debug("caches refreshed after a change of the hosts that answer",
			"inodes", inodes, "dirs", dirs)
	}
}

// refreshBelow drops what the listing cache and the kernel hold at and
// below the directory in at path p, and returns how many inodes and
// directories it went through.
func (f *filesys) refreshBelow(ctx context.Context, in *fs.Inode, p string) (int, int) {
	f.dirs.DropTree(p)
	inodes, dirs := f.known(in, p)
	for _, in := range inodes {
		if ctx.Err() != nil {
			return 0, 0
		}
		changedOnServer(in, false)
	}
	jobs := make(chan knownDir)
	var wg sync.WaitGroup
	for range min(healthWorkers, len(dirs)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for d := range jobs {
				f.relist(ctx, d)
			}
		}()
	}
	for _, d := range dirs {
		if ctx.Err() != nil {
			break
		}
		jobs <- d
	}
	close(jobs)
	wg.Wait()
	return len(inodes), len(dirs)
}

// known returns the inodes of the tree at in (path p) breadth first, and
// its directories with their paths, each list bounded.
func (f *filesys) known(in *fs.Inode, p string) ([]*fs.Inode, []knownDir) {
	inodes := []*fs.Inode{in}
	dirs := []knownDir{{in, p}}
	for k := 0; k < len(dirs) && len(inodes) < healthNotifyMax; k++ {
		for name, ch := range dirs[k].in.Children() {
			if len(inodes) >= healthNotifyMax {
				break
			}
			inodes = append(inodes, ch)
			if ch.IsDir() && len(dirs) < healthRelistMax {
				dirs = append(dirs, knownDir{ch, join(dirs[k].p, name)})
			}
		}
	}
	return inodes, dirs
}

// relist lists d again, storing the listing, and drops the kernel's
// negative entries for the listed names it has no inode for.
func (f *filesys) relist(ctx context.Context, d knownDir) {
	ents, err := f.dirs.Fetch(ctx, d.p, f.readDir)
	if err != nil {
		f.log.Debug("listing after a change of the hosts failed", "dir", d.p, "err", err)
		return
	}
	for _, e := range ents {
		if d.in.GetChild(e.Name) == nil {
			d.in.NotifyEntry(e.Name)
		}
	}
}
