package contentcache

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

// Options configure a Cache.
type Options struct {
	Dir       string       // the cache directory; content lives in Dir/content (created 0700)
	MaxSize   int64        // bytes of content kept; least recently used entries are evicted beyond it; 0: no limit but MinFree
	MinFree   int64        // bytes left free on Dir's filesystem; 0 = 5% of it, at most 10 GiB
	BlockSize int64        // unit of partial files; 0 = 1 MiB. Power of two.
	Logger    *slog.Logger // nil = discard

	// For tests.
	boot       [16]byte                                         // zero: the machine's boot id
	statfs     func(dir string) (avail, total int64, err error) // nil: statfs(2)
	now        func() time.Time                                 // last-use times; nil: time.Now
	touchEvery time.Duration                                    // 0: a minute
}

// Stats are the counters `sshfsm status` shows.
type Stats struct {
	Bytes        int64 // stored (data, records), as last counted plus fills since
	Entries      int64 // Keys stored, as last counted plus those made since
	HitBytes     int64 // read from the cache
	HitBlocks    int64
	MissBytes    int64 // asked for and not (wholly) present
	MissBlocks   int64 // blocks absent in those reads
	FillBytes    int64 // stored by Fill
	Evictions    int64 // entries removed to respect MaxSize or MinFree
	EvictedBytes int64
	Dropped      int64 // blocks that failed their check and were dropped
	Shared       int64 // entries linked to another's copy of the same content
	Loads        int64 // entries read from disk by an Entry call while none of the same Key was held
}

const (
	defaultBlockSize = 1 << 20
	maxMinFree       = 10 << 30
	scanEvery        = 5 * time.Minute
	jobQueue         = 256
)

// Cache is the content store in one directory. Several Caches, in this
// process or others, may use the same directory at once.
type Cache struct {
	root       string // Dir/content
	bs         int64
	maxSize    int64
	minFree    int64
	log        *slog.Logger
	boot       [16]byte
	statfs     func(string) (int64, int64, error)
	now        func() time.Time
	touchEvery time.Duration

	// Lock order: storing, state.fillMu, evictMu, mu, state.mu; sizesMu is taken
	// alone.
	mu     sync.Mutex        // guards states, closed and each state's refs and queued; never held across I/O
	states map[string]*state // entries some Entry holds, by id
	closed bool

	// storing is held shared by every Fill and exclusively by Close,
	// so that nothing is written once Close has returned.
	storing sync.RWMutex
	stopped bool // storing: Close has begun; Fill stores nothing

	// fillers are the fills under way on goroutines of FillAsync; Close
	// waits for them. Added to under mu while !closed.
	fillers sync.WaitGroup
	pending chan struct{} // bounds those fills

	sizesMu sync.Mutex          // guards sizes
	sizes   map[storedSize]bool // sizes of the stored copies larger than a block, by owner (MayHold)

	evictMu    sync.Mutex // serialises scans and evictions (held across their I/O)
	futileTill time.Time  // evictMu: an eviction just found nothing to remove; refuse without rescanning until then
	total      atomic.Int64
	entries    atomic.Int64
	stats      counters

	ctx      context.Context
	cancel   context.CancelFunc
	wg       sync.WaitGroup // the scan and digest goroutines
	jobs     chan *state    // entries to hash; each holds a reference
	jobsLeft atomic.Int64   // jobs queued or running
	scanned  chan struct{}  // closed after the first scan
	kick     chan struct{}  // asks scanLoop to scan (and evict) now
}

type counters struct {
	hitBytes, hitBlocks, missBytes, missBlocks, fillBytes atomic.Int64
	evictions, evictedBytes, dropped, shared, loads       atomic.Int64
}

// Open opens (creating it if needed) the content store in o.Dir. It reads
// no entry: the existing ones are counted in the background.
func Open(o Options) (*Cache, error) {
	bs := o.BlockSize
	if bs == 0 {
		bs = defaultBlockSize
	}
	if bs < 512 || bs > 1<<30 || bs&(bs-1) != 0 {
		return nil, fmt.Errorf("content cache: block size %d is not a power of two between 512 and 1 GiB", bs)
	}
	if o.Dir == "" {
		return nil, errors.New("content cache: no directory")
	}
	c := &Cache{
		root: filepath.Join(o.Dir, "content"), bs: bs, maxSize: o.MaxSize, minFree: o.MinFree,
		log: o.Logger, boot: o.boot, statfs: o.statfs, now: o.now, touchEvery: o.touchEvery,
		states: map[string]*state{}, jobs: make(chan *state, jobQueue), scanned: make(chan struct{}), kick: make(chan struct{}, 1),
		pending: make(chan struct{}, maxPendingFills),
	}
	if c.log == nil {
		c.log = slog.New(slog.DiscardHandler)
	}
	if c.statfs == nil {
		c.statfs = statfs
	}
	if c.now == nil {
		c.now = time.Now
	}
	if c.touchEvery == 0 {
		c.touchEvery = time.Minute
	}
	for _, d := range []string{"", entriesDir, objectsDir, smallDir, tmpDir, trashDir} {
		if err := os.MkdirAll(filepath.Join(c.root, d), 0o700); err != nil {
			return nil, fmt.Errorf("content cache: %w", err)
		}
	}
	if c.boot == ([16]byte{}) {
		c.boot = c.readBootID()
	}
	if c.minFree == 0 {
		_, fsTotal, err := c.statfs(c.root)
		if err != nil {
			return nil, fmt.Errorf("content cache: %w", err)
		}
		c.minFree = min(fsTotal/20, maxMinFree)
	}
	c.ctx, c.cancel = context.WithCancel(context.Background())
	c.wg.Add(2)
	go c.scanLoop()
	go c.hashLoop()
	return c, nil
}

// Close stops the background work. Entries still held stay usable until
// released; Entry fails afterwards.
func (c *Cache) Close() error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil
	}
	c.closed = true
	c.mu.Unlock()
	c.fillers.Wait()
	c.storing.Lock()
	c.stopped = true
	c.storing.Unlock()
	c.cancel()
	c.wg.Wait()
	return nil
}

// Entry is one file version, for reading what is present and filling
// what is not. Entries of the same Key obtained concurrently (in this
// process) share state. Release when done; an Entry is not used after.
type Entry struct {
	s        *state
	released atomic.Bool
}

// MaxFileSize is the largest file the cache stores: 16 TiB, the largest
// file ext4 holds (the data file is as large as the remote one). It keeps
// every offset and block count computed from a size that a server chose
// far from overflowing.
const MaxFileSize = 1 << 44

// ErrTooLarge: the file's size is one the cache does not store (more than
// MaxFileSize, or negative). The file is read from the server uncached.
var ErrTooLarge = errors.New("size out of the disk cache's range")

// blockCount is how many blocks of bs bytes hold size bytes (size at most
// MaxFileSize).
func blockCount(size, bs int64) int64 { return size/bs + min(size%bs, 1) }

// Entry returns the entry of k, reading what the disk holds of it.
func (c *Cache) Entry(k Key) (*Entry, error) {
	if k.Size < 0 || k.Size > MaxFileSize {
		return nil, fmt.Errorf("content cache, %d bytes: %w", k.Size, ErrTooLarge)
	}
	s, loaded, err := c.hold(entryID(k, c.bs), k)
	if err != nil {
		return nil, err
	}
	if !loaded {
		c.stats.loads.Add(1)
		s.loadOnce()
	}
	<-s.ready
	if s.loadErr != nil {
		c.release(s)
		return nil, fmt.Errorf("content cache %s:%s: %w", k.Host, k.Path, s.loadErr)
	}
	if !loaded {
		c.queueHash(s)
	}
	return &Entry{s: s}, nil
}

// hold takes a reference on the state of entry id, making it if no Entry
// holds one (loaded false: the caller loads it). c.mu is released however
// it returns: a lock left held would stop every later open.
func (c *Cache) hold(id string, k Key) (s *state, loaded bool, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil, false, errors.New("content cache: closed")
	}
	s, loaded = c.states[id]
	if !loaded {
		s = c.newState(id, k.owner(), k.Size)
		c.states[id] = s
	}
	s.refs++
	return s, loaded, nil
}

// BlockSize is the unit in which large files are fetched and stored.
func (c *Cache) BlockSize() int64 { return c.bs }

// Another returns another use of the same entry, released on its own: for
// work that may outlive the caller's use.
func (e *Entry) Another() *Entry {
	c := e.s.c
	c.mu.Lock()
	e.s.refs++
	c.mu.Unlock()
	return &Entry{s: e.s}
}

// Release ends this use of the entry; its files are closed with the last.
func (e *Entry) Release() {
	if e.released.CompareAndSwap(false, true) {
		e.s.c.release(e.s)
	}
}

func (c *Cache) release(s *state) {
	c.mu.Lock()
	s.refs--
	last := s.refs == 0
	if last && c.states[s.id] == s {
		delete(c.states, s.id)
	}
	c.mu.Unlock()
	if last {
		s.closeFiles()
	}
}

// Forget drops every cached version of host:path (the mount wrote or
// removed the file). Entries of it still held miss from now on and store
// nothing; a later Entry of the same Key starts empty.
func (c *Cache) Forget(host, path string) {
	hp := hostPathID(host, path)
	var held []*state
	c.mu.Lock()
	for id, s := range c.states {
		if strings.HasPrefix(id, hp) {
			held = append(held, s)
			delete(c.states, id)
		}
	}
	c.mu.Unlock()
	for _, s := range held {
		<-s.ready
		s.fillMu.Lock()
		s.mu.Lock()
		s.dead = true
		s.mu.Unlock()
		s.fillMu.Unlock()
	}
	if err := errors.Join(c.remove(c.pathDir(hp)), c.forgetSmall(hp)); err != nil {
		c.log.Warn("content cache: forget", "host", host, "path", path, "err", err)
	}
}

// Stats returns the counters.
func (c *Cache) Stats() Stats {
	s := &c.stats
	return Stats{
		Bytes: c.total.Load(), Entries: c.entries.Load(),
		HitBytes: s.hitBytes.Load(), HitBlocks: s.hitBlocks.Load(),
		MissBytes: s.missBytes.Load(), MissBlocks: s.missBlocks.Load(),
		FillBytes: s.fillBytes.Load(), Evictions: s.evictions.Load(),
		EvictedBytes: s.evictedBytes.Load(), Dropped: s.dropped.Load(), Shared: s.shared.Load(),
		Loads: s.loads.Load(),
	}
}

// readBootID identifies this boot of the machine. Without one, every Open
// counts as a new boot: verification then never outlives the process.
func (c *Cache) readBootID() [16]byte {
	var id [16]byte
	b, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err == nil {
		s := strings.ReplaceAll(strings.TrimSpace(string(b)), "-", "")
		var n int
		if n, err = hex.Decode(id[:], []byte(s)); err == nil && n != len(id) {
			err = errors.New("short boot id")
		}
	}
	if err != nil {
		c.log.Warn("content cache: no boot id; entries are verified again by every process", "err", err)
		copy(id[:], randName())
	}
	return id
}

// logErr logs a failure of background or best-effort work. Files that
// vanished are another process's removals, which are expected.
func (c *Cache) logErr(msg string, err error) {
	level := slog.LevelWarn
	if errors.Is(err, unix.ENOENT) {
		level = slog.LevelDebug
	}
	c.log.Log(context.Background(), level, msg, "err", err)
}

func statfs(dir string) (avail, total int64, err error) {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return 0, 0, fmt.Errorf("statfs %s: %w", dir, err)
	}
	return int64(st.Bavail) * st.Bsize, int64(st.Blocks) * st.Bsize, nil
}
