package fusefs

import (
	"context"
	"errors"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/hanwen/go-fuse/v2/fuse"

	"sshfsm/internal/contentcache"
	"sshfsm/internal/namespace"
	"sshfsm/internal/remote"
)

// Reading the small files of a directory one after another (grep -r, a
// build reading its sources, cat *.h) costs, for each file the disk cache
// lacks, a round trip to open it and one to read it, in turn. Once a reader
// has read from the server two small files of one directory, or one of a
// directory a reader listed (grep -r, tar, cp -r list each directory
// whose files they read) or of one right below a directory whose files
// were fetched so, the directory's other small files are fetched into the
// disk cache in the background, siblingSlots at a time, in the order of
// its listing (the order readers get it in). The reader's next opens then
// find them whole there, or being fetched (fillsWhole), and ask the server
// nothing (openCached). As the kernel's
// readahead does for pages, the fetch keeps at most siblingWindow files
// ahead of the files readers opened in the directory since it began, and
// ends once readers open none for siblingIdle: two files read in a large
// directory cost at most a window of fetches. Once a directory a reader is
// in has all its files under way, the first siblingAheadDirs of its
// subdirectories whose listings are cached (a walk lists them ahead) are
// fetched the same way, and theirs once the reader opens a file there: a
// walk reading one small directory after another (most of a source tree)
// then finds each one's files under way before it gets there.
//
// Only files the cached listing shows as regular, of at most siblingMax
// bytes, not modified within racyWindow and readable by their mode bits
// are fetched, each under the version (size, mtime) the listing gives, as
// an open would; one whose length is not the listing's is not stored.

const (
	siblingMax = 256 << 10 // largest file fetched with its siblings
	// siblingSlots: such fetches in flight, mount-wide. At 4 ms RTT, 8
	// kept a walker waiting for most directories.
	siblingSlots  = 32
	siblingWindow = 32 // files fetched ahead of the directory's opens
	// siblingAheadDirs bounds the subdirectories fetched ahead of a
	// reader, per directory it is in.
	siblingAheadDirs = 16
	siblingIdle      = 10 * time.Second
	// siblingAgain: a directory's siblings are fetched again after this
	// long, when readers read it from the server again.
	siblingAgain = time.Minute
	// siblingDirs bounds the directories remembered.
	siblingDirs = 4096
)

// errSiblingChanged: the file's length is not the listing's; readers
// waiting for the fetch read the file themselves.
var errSiblingChanged = errors.New("file changed since it was listed")

type siblings struct {
	f     *filesys
	slots chan struct{}
	ctx   context.Context // ends at unmount
	stop  context.CancelFunc

	mu sync.Mutex
	// reads holds, per directory, the small files readers read from
	// the server; fetched holds when a directory's siblings began to be
	// fetched; active the directories being fetched; waiting those
	// fetched ahead of a reader, whose subdirectories are fetched once
	// it opens a file there.
	reads   map[string][]string
	fetched map[string]time.Time
	active  map[string]*siblingDir
	waiting map[string]bool
	tracked atomic.Int64 // len(active) + len(waiting), read without mu
}

// siblingDir is a directory whose files are being fetched.
type siblingDir struct {
	opened atomic.Int64  // files of it readers opened since
	wake   chan struct{} // signalled at each
}

func newSiblings(f *filesys) *siblings {
	s := &siblings{f: f, slots: make(chan struct{}, siblingSlots),
		reads: map[string][]string{}, fetched: map[string]time.Time{}, active: map[string]*siblingDir{},
		waiting: map[string]bool{}}
	s.ctx, s.stop = context.WithCancel(context.Background())
	return s
}

// stopAtUnmount ends the fetches when srv ends.
func (s *siblings) stopAtUnmount(srv *fuse.Server) {
	go func() {
		srv.Wait()
		s.stop()
	}()
}

// opened notes a reader's open of the file p, which moves the window of a
// fetch of its directory.
func (s *siblings) opened(p string) {
	if s.tracked.Load() == 0 { // every open comes here: no lock while idle
		return
	}
	dir, _ := split(p)
	s.mu.Lock()
	d := s.active[dir]
	arrived := s.waiting[dir]
	delete(s.waiting, dir)
	s.track()
	s.mu.Unlock()
	if d != nil {
		d.opened.Add(1)
		select {
		case d.wake <- struct{}{}:
		default:
		}
	}
	if arrived {
		s.ahead(dir)
	}
}

// readFromServer notes that a reader read the small file p from the
// server, and starts fetching its siblings when that makes a pattern.
func (s *siblings) readFromServer(p string) {
	dir, name := split(p)
	parent, _ := split(dir)
	listed := s.f.pre.wasRead(dir)
	now := time.Now()
	s.mu.Lock()
	if s.recent(dir, now) || s.active[dir] != nil {
		s.mu.Unlock()
		return
	}
	read := append(s.reads[dir], name)
	s.reads[dir] = read
	below := dir != "" && s.recent(parent, now)
	var d *siblingDir
	if len(read) >= 2 || listed || below {
		delete(s.reads, dir)
		d = s.begin(dir, now)
	} else if len(s.reads) > siblingDirs {
		clear(s.reads)
	}
	s.mu.Unlock()
	if d != nil {
		go s.fetchDir(dir, d, read, true)
	}
}

// recent (mu held) reports whether the fetch of dir began within
// siblingAgain of now.
func (s *siblings) recent(dir string, now time.Time) bool {
	at, ok := s.fetched[dir]
	return ok && now.Sub(at) < siblingAgain
}

// begin (mu held) records that the fetch of dir begins.
func (s *siblings) begin(dir string, now time.Time) *siblingDir {
	if len(s.fetched) >= siblingDirs {
		clear(s.fetched)
	}
	s.fetched[dir] = now
	d := &siblingDir{wake: make(chan struct{}, 1)}
	s.active[dir] = d
	s.track()
	return d
}

// track (mu held) publishes how many directories opens must be noted for.
func (s *siblings) track() {
	s.tracked.Store(int64(len(s.active) + len(s.waiting)))
}

// ahead starts fetching the files of the first subdirectories of dir, a
// directory a reader is in, whose listings are cached.
func (s *siblings) ahead(dir string) {
	ents, ok := s.f.dirs.List(dir)
	if !ok {
		return
	}
	started := 0
	for _, e := range ents {
		if started >= siblingAheadDirs {
			return
		}
		if fileType(e.Attr) != syscall.S_IFDIR || e.Name == "." || e.Name == ".." {
			continue
		}
		sub := join(dir, e.Name)
		if _, ok := s.f.dirs.List(sub); !ok {
			continue
		}
		now := time.Now()
		s.mu.Lock()
		var d *siblingDir
		if !s.recent(sub, now) && s.active[sub] == nil {
			d = s.begin(sub, now)
		}
		s.mu.Unlock()
		if d != nil {
			started++
			go s.fetchDir(sub, d, nil, false)
		}
	}
}

// fetchDir fetches the small files of dir the disk cache lacks, but those
// readers read (read), keeping within the window of d's opens. Once all
// are under way, the subdirectories come next: now if a reader is in dir
// (in), otherwise once one opens a file there.
func (s *siblings) fetchDir(dir string, d *siblingDir, read []string, in bool) {
	whole := false
	defer func() {
		s.mu.Lock()
		delete(s.active, dir)
		in = in || d.opened.Load() > 0
		if whole && !in {
			if len(s.waiting) >= siblingDirs {
				clear(s.waiting)
			}
			s.waiting[dir] = true
		}
		s.track()
		s.mu.Unlock()
		if whole && in {
			s.ahead(dir)
		}
	}()
	ents, ok := s.f.dirs.List(dir)
	if !ok {
		return
	}
	started := int64(0)
	for _, e := range ents {
		a := e.Attr
		if fileType(a) != syscall.S_IFREG || a.Size == 0 || a.Size > siblingMax ||
			time.Since(a.Mtime) < racyWindow || !s.f.mayRead(a) || slices.Contains(read, e.Name) {
			continue
		}
		if !s.waitWindow(d, started) {
			return
		}
		p := join(dir, e.Name)
		v, err := s.f.version(s.ctx, p, a)
		if err != nil {
			continue
		}
		ce := s.f.contentEntry(p, v)
		if ce == nil {
			continue
		}
		if ce.Complete() {
			ce.Release()
			continue
		}
		k := fillKey{p, v, 0}
		fl, first := s.f.fills.start(k)
		if !first { // a reader fetches it
			ce.Release()
			continue
		}
		select {
		case s.slots <- struct{}{}:
		case <-s.ctx.Done():
			s.f.fills.end(k, fl, s.ctx.Err())
			ce.Release()
			return
		}
		started++
		go func() {
			err := s.fetchFile(p, a, v.branch, ce)
			s.f.fills.end(k, fl, err)
			ce.Release()
			<-s.slots
		}()
	}
	whole = true
}

// waitWindow waits until a fetch of one more file keeps within
// siblingWindow of d's opens; false when readers stopped opening files of
// the directory or the mount ends.
func (s *siblings) waitWindow(d *siblingDir, started int64) bool {
	for started >= d.opened.Load()+siblingWindow {
		idle := time.NewTimer(siblingIdle)
		select {
		case <-d.wake:
			idle.Stop()
		case <-idle.C:
			return false
		case <-s.ctx.Done():
			idle.Stop()
			return false
		}
	}
	return s.ctx.Err() == nil
}

// fetchFile reads the file p, listed with attributes a, and stores it in
// ce, the entry of that version in branch: a file opened from another
// branch (the union failed over meanwhile) is not stored.
func (s *siblings) fetchFile(p string, a remote.Attr, branch string, ce *contentcache.Entry) error {
	f, from, err := namespace.OpenFrom(s.ctx, s.f.ns, p, os.O_RDONLY, 0)
	if err != nil {
		return err
	}
	defer f.Close(context.Background())
	if from != branch {
		return errSiblingChanged
	}
	buf := make([]byte, a.Size+1) // the extra byte shows a file grown
	got, err := readFull(s.ctx, f, buf, 0)
	if err != nil {
		return err
	}
	if got != int(a.Size) {
		return errSiblingChanged
	}
	err = ce.Fill(buf[:got], 0)
	s.f.logFill(err)
	return err
}

// readSmall notes that the handle read its small file from the server.
func (h *handle) readSmall() {
	if p, ok := h.n.path(); ok {
		h.n.fsys.sib.readFromServer(p)
	}
}
