package journal

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// Defaults of Options.
const (
	DefaultSegmentSize = 16 << 20
	DefaultSpillSize   = 64 << 10
)

const (
	spillDirName = "spill"
	lockName     = "lock"
	segSuffix    = ".wj"
	maxTake      = 8 << 20 // bytes of records one batch takes from the queue
	maxDoneBatch = maxInline / 8
)

var (
	// ErrBusy: another process has the journal open.
	ErrBusy = errors.New("journal in use by another process")
	// ErrClosed: the journal was closed.
	ErrClosed = errors.New("journal closed")
)

// Options of a journal.
type Options struct {
	// Dir holds the journal: one per mount, under cache_dir, made 0700
	// when missing.
	Dir string
	// MaxEntries and MaxBytes bound the changes appended and not yet
	// done (writeback_max=): past either, Append waits for Done. Bytes
	// count records and spilled data. Zero: unbounded. A change larger
	// than MaxBytes alone is taken when nothing else is pending.
	MaxEntries int
	MaxBytes   int64
	// SegmentSize: a batch that would take a segment past it starts a
	// new one. Default DefaultSegmentSize.
	SegmentSize int64
	// SpillSize: the bytes of a Write past it go to a spill file of their
	// own rather than into the record. Default DefaultSpillSize, at most
	// 1 MiB.
	SpillSize int

	onCommit func(records int) // tests: called before each batch is written
	onRemove func(seg uint64)  // tests: called before a drained segment is removed
}

// Journal is the durable list of the changes a mount made that the
// server does not have yet. Its methods may be called concurrently.
type Journal struct {
	o        Options
	dir      string
	spillDir string
	lock     *os.File

	// mu guards everything below it. Lock order: mu only; no I/O under
	// it but encoding.
	mu       sync.Mutex
	wake     *sync.Cond // the committer waits on it for work or closing
	queue    []*request
	closing  bool
	err      error // sticky: a write or sync failed; nothing more is taken
	nextSeq  uint64
	pending  map[uint64]*entry
	bytes    int64            // of pending and reserved
	reserved int              // Appends past the bounds' wait, not yet queued
	waiting  int              // Appends waiting for room
	space    chan struct{}    // closed, and replaced, whenever pending shrinks
	undone   map[uint64]int   // per segment: the pending changes whose record (newest copy) is in it
	sizes    map[uint64]int64 // per segment but the active one: its bytes
	oldest   uint64           // the oldest segment on disk

	// The active segment: the committer's alone once Open returned (it
	// reads them under mu too, which only orders, never guards).
	seg     *os.File
	segNum  uint64
	segSize int64
	salt    [8]byte

	stopped chan struct{} // the committer returned
}

// entry is a change appended and not done.
type entry struct {
	seg        uint64 // the segment its record is in, once committed
	at         int64
	bytes      int64 // what it counts against MaxBytes
	size       int64 // its record's bytes in a segment
	spill      string
	committed  bool
	doneQueued bool
}

// request is one record waiting for the committer.
type request struct {
	payload []byte
	seq     uint64
	change  bool     // a change (else a done record)
	spill   bool     // its data is in a spill file, which must be durable first
	done    []uint64 // a done record's sequence numbers
	drop    []string // spill files of those, to remove once it is on disk
	ch      chan struct{}
	err     error
}

// Stats is what a journal holds.
type Stats struct {
	Entries int   // changes appended and not done
	Bytes   int64 // their bytes, as MaxBytes counts them
	Oldest  int64 // At of the oldest, 0 when none
	Waiting int   // Appends waiting for room under the bounds
}

// Open opens the journal in o.Dir, or makes it, and returns the changes
// appended and not done, in order. What a crash left half-written is
// dropped; acknowledged records that cannot be read back fail the open
// with an error wrapping ErrCorrupt, which names the place.
func Open(o Options) (*Journal, []Change, error) {
	if o.SegmentSize <= 0 {
		o.SegmentSize = DefaultSegmentSize
	}
	if o.SpillSize <= 0 {
		o.SpillSize = DefaultSpillSize
	}
	o.SpillSize = min(o.SpillSize, maxInline)
	j := &Journal{
		o: o, dir: o.Dir, spillDir: filepath.Join(o.Dir, spillDirName),
		pending: map[uint64]*entry{}, undone: map[uint64]int{}, sizes: map[uint64]int64{},
		space: make(chan struct{}), stopped: make(chan struct{}),
	}
	j.wake = sync.NewCond(&j.mu)
	if err := makeDirs(j.spillDir); err != nil {
		return nil, nil, fmt.Errorf("journal: %w", err)
	}
	lock, err := os.OpenFile(filepath.Join(j.dir, lockName), os.O_CREATE|os.O_RDWR|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return nil, nil, fmt.Errorf("journal: %w", err)
	}
	if err := unix.Flock(int(lock.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		_ = lock.Close()
		if errors.Is(err, unix.EWOULDBLOCK) {
			return nil, nil, fmt.Errorf("journal %s: %w", j.dir, ErrBusy)
		}
		return nil, nil, fmt.Errorf("journal %s: lock: %w", j.dir, err)
	}
	j.lock = lock
	changes, err := j.load()
	if err != nil {
		_ = lock.Close()
		return nil, nil, err
	}
	go j.commitLoop()
	return j, changes, nil
}

// segName is the file name of segment n.
func segName(n uint64) string { return fmt.Sprintf("%016x%s", n, segSuffix) }

// segments lists the segment numbers in the journal, in order.
func (j *Journal) segments() ([]uint64, error) {
	ents, err := os.ReadDir(j.dir)
	if err != nil {
		return nil, fmt.Errorf("journal: %w", err)
	}
	var nums []uint64
	for _, e := range ents {
		name, ok := strings.CutSuffix(e.Name(), segSuffix)
		if !ok || len(name) != 16 {
			continue
		}
		n, err := strconv.ParseUint(name, 16, 64)
		if err != nil {
			continue
		}
		nums = append(nums, n)
	}
	sort.Slice(nums, func(a, b int) bool { return nums[a] < nums[b] })
	return nums, nil
}

// load reads every segment, seals the one a crash left open, starts a new
// one and returns the changes not done.
func (j *Journal) load() ([]Change, error) {
	nums, err := j.segments()
	if err != nil {
		return nil, err
	}
	corrupt := func(format string, args ...any) error {
		return fmt.Errorf("journal %s: %w: %s", j.dir, ErrCorrupt, fmt.Sprintf(format, args...))
	}
	type loaded struct {
		c   Change
		seg uint64 // the segment of its newest copy
	}
	var (
		recs = map[uint64]*loaded{}
		done = map[uint64]bool{}
		next uint64
		last *segScan
	)
	for i, n := range nums {
		if i > 0 && n != nums[i-1]+1 {
			return nil, corrupt("segment %d missing", nums[i-1]+1)
		}
		path := filepath.Join(j.dir, segName(n))
		data, err := os.ReadFile(path)
		if err != nil {
			return nil, fmt.Errorf("journal: %w", err)
		}
		s, err := scanSegment(data)
		if err != nil && i == len(nums)-1 && len(data) <= blockSize {
			// Made by a process killed before it wrote its header whole:
			// it never held a record.
			if err := os.Remove(path); err != nil {
				return nil, fmt.Errorf("journal: %w", err)
			}
			nums = nums[:i]
			break
		}
		if err != nil {
			return nil, fmt.Errorf("journal %s: segment %d: %w", j.dir, n, err)
		}
		if s.hdr.num != n {
			return nil, corrupt("segment file %d holds segment %d", n, s.hdr.num)
		}
		if i < len(nums)-1 && !s.sealed {
			return nil, corrupt("segment %d ends without its end batch", n)
		}
		if i == 0 {
			next = s.hdr.firstSeq
		} else if s.hdr.firstSeq != next {
			return nil, corrupt("segment %d starts at record %d, not %d", n, s.hdr.firstSeq, next)
		}
		j.sizes[n] = int64(len(data))
		// Copies of changes still pending when the segment was begun,
		// whose first records may be gone with older segments.
		for k, c := range s.carried {
			if c.Op == opDone || c.Seq >= s.hdr.firstSeq || k > 0 && c.Seq <= s.carried[k-1].Seq {
				return nil, corrupt("segment %d: carried record %d", n, c.Seq)
			}
			recs[c.Seq] = &loaded{c, n}
		}
		for _, c := range s.records {
			if c.Seq != next {
				return nil, corrupt("segment %d: record %d where %d was due", n, c.Seq, next)
			}
			next++
			if c.Op != opDone {
				recs[c.Seq] = &loaded{c, n}
				continue
			}
			for _, d := range doneSeqs(&c) {
				if d >= c.Seq {
					return nil, corrupt("record %d marks later record %d done", c.Seq, d)
				}
				done[d] = true
			}
		}
		last = &s
		j.segNum = n
	}
	if len(nums) == 0 {
		next, j.segNum = 1, 0
	}
	j.nextSeq = next
	j.oldest = j.segNum + 1
	if len(nums) > 0 {
		j.oldest = nums[0]
	}

	var changes []Change
	for seq, l := range recs {
		if done[seq] {
			continue
		}
		c := &l.c
		changes = append(changes, *c)
		j.pending[seq] = &entry{seg: l.seg, at: c.At, bytes: cost(c), size: recordSize(c), spill: c.Spill, committed: true}
		j.bytes += cost(c)
		j.undone[l.seg]++
	}
	sort.Slice(changes, func(a, b int) bool { return changes[a].Seq < changes[b].Seq })
	if err := j.checkSpills(changes); err != nil {
		return nil, err
	}
	if last != nil && !last.sealed {
		if err := j.seal(last); err != nil {
			return nil, err
		}
		j.sizes[last.hdr.num] = last.end + blockSize
	}
	if err := j.newSegment(j.segNum+1, j.nextSeq); err != nil {
		return nil, err
	}
	if err := j.removeDrained(); err != nil {
		return nil, err
	}
	return changes, nil
}

// recordSize is the bytes of c's record in a batch.
func recordSize(c *Change) int64 { return int64(c.payloadLen() + frameLen) }

// cost is what a change counts against MaxBytes.
func cost(c *Change) int64 {
	n := int64(c.payloadLen() + frameLen)
	if c.Spill != "" {
		n += c.Len
	}
	return n
}

// checkSpills checks that the spill file of every change not done is
// there, of its length, and removes the others: left by a crash between
// writing a spill file and committing its record, or between a done
// record and the removal.
func (j *Journal) checkSpills(changes []Change) error {
	want := map[string]int64{}
	for i := range changes {
		if c := &changes[i]; c.Spill != "" {
			want[c.Spill] = c.Len
		}
	}
	ents, err := os.ReadDir(j.spillDir)
	if err != nil {
		return fmt.Errorf("journal: %w", err)
	}
	for _, e := range ents {
		if _, ok := want[e.Name()]; ok {
			continue
		}
		if err := os.Remove(filepath.Join(j.spillDir, e.Name())); err != nil {
			return fmt.Errorf("journal: %w", err)
		}
	}
	for name, n := range want {
		st, err := os.Stat(filepath.Join(j.spillDir, name))
		if err != nil || st.Size() != n {
			return fmt.Errorf("journal %s: %w: spill file %s of %d bytes lost", j.dir, ErrCorrupt, name, n)
		}
	}
	return nil
}

// seal ends the segment a crash left open: what follows its good
// batches goes, and an end batch takes its place.
func (j *Journal) seal(s *segScan) error {
	f, err := os.OpenFile(filepath.Join(j.dir, segName(s.hdr.num)), os.O_RDWR|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("journal: %w", err)
	}
	defer f.Close()
	if err := f.Truncate(s.end); err != nil {
		return fmt.Errorf("journal: %w", err)
	}
	if _, err := f.WriteAt(newBatch().seal(s.hdr.salt, flagEnd), s.end); err != nil {
		return fmt.Errorf("journal: %w", err)
	}
	if err := unix.Fdatasync(int(f.Fd())); err != nil {
		return fmt.Errorf("journal: sync: %w", err)
	}
	return nil
}

// newSegment makes segment n, whose first record will be first, and
// makes it the active one. The old one, if any, must be sealed.
func (j *Journal) newSegment(n, first uint64) error {
	h := segHeader{num: n, firstSeq: first}
	if _, err := rand.Read(h.salt[:]); err != nil {
		return fmt.Errorf("journal: %w", err)
	}
	f, err := os.OpenFile(filepath.Join(j.dir, segName(n)), os.O_CREATE|os.O_EXCL|os.O_RDWR|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return fmt.Errorf("journal: %w", err)
	}
	if _, err = f.WriteAt(h.encode(), 0); err == nil {
		err = unix.Fdatasync(int(f.Fd()))
	}
	if err == nil {
		err = syncDir(j.dir)
	}
	if err != nil {
		_ = f.Close()
		return fmt.Errorf("journal: new segment: %w", err)
	}
	if j.seg != nil {
		_ = j.seg.Close()
	}
	j.seg, j.segNum, j.segSize, j.salt = f, n, blockSize, h.salt
	return nil
}

// removeDrained removes the oldest segments while none of their changes
// is pending, one at a time, oldest first, each removal made durable
// before the next: a done record may sit in a later segment than its
// change, so a later segment must never go while an earlier one stays.
func (j *Journal) removeDrained() error {
	for {
		j.mu.Lock()
		n, active := j.oldest, j.segNum
		drained := n < active && j.undone[n] == 0
		j.mu.Unlock()
		if !drained {
			return nil
		}
		if j.o.onRemove != nil {
			j.o.onRemove(n)
		}
		if err := os.Remove(filepath.Join(j.dir, segName(n))); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("journal: %w", err)
		}
		if err := syncDir(j.dir); err != nil {
			return fmt.Errorf("journal: %w", err)
		}
		j.mu.Lock()
		delete(j.undone, n)
		delete(j.sizes, n)
		j.oldest = n + 1
		j.mu.Unlock()
	}
}

// makeDirs makes dir and what is missing above it, 0700, each made
// durable in its parent: the journal must not lose its own directory in
// a power cut.
func makeDirs(dir string) error {
	if _, err := os.Stat(dir); err == nil {
		return nil
	}
	parent := filepath.Dir(dir)
	if parent != dir {
		if err := makeDirs(parent); err != nil {
			return err
		}
	}
	if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, os.ErrExist) {
		return err
	}
	return syncDir(parent)
}

func syncDir(dir string) error {
	f, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer f.Close()
	return f.Sync()
}

// Append records c and returns its sequence number once the record is on
// disk: from then on it survives a crash, until Done. It waits first
// while the bounds are reached, as long as ctx allows. Seq and At are
// set here; so is a Write's Len, the length of its Data, which goes to a
// spill file past the spill size. Only a Write has Data.
func (j *Journal) Append(ctx context.Context, c Change) (uint64, error) {
	if c.Op < Create || c.Op > lastChange {
		return 0, fmt.Errorf("journal: append of %s", c.Op)
	}
	if c.Op != Write && len(c.Data) > 0 {
		return 0, fmt.Errorf("journal: %s with data", c.Op)
	}
	c.Len, c.Spill, c.SpillCRC = int64(len(c.Data)), "", 0
	var spilled []byte
	if len(c.Data) > j.o.SpillSize {
		// Named once there is room: the name has a fixed length, so the
		// record's cost is known now.
		spilled, c.Data, c.Spill = c.Data, nil, spillPlaceholder
	}
	if err := c.check(); err != nil {
		return 0, err
	}
	n := cost(&c)

	// Room is taken before the spill file is written, so that the
	// bounds hold for the disk too.
	j.mu.Lock()
	for j.err == nil && !j.closing && j.full(n) {
		space := j.space
		j.waiting++
		j.mu.Unlock()
		select {
		case <-space:
		case <-ctx.Done():
			j.mu.Lock()
			j.waiting--
			j.mu.Unlock()
			return 0, ctx.Err()
		}
		j.mu.Lock()
		j.waiting--
	}
	if err := j.usable(); err != nil {
		j.mu.Unlock()
		return 0, err
	}
	j.reserved++
	j.bytes += n
	j.mu.Unlock()

	if spilled != nil {
		name, err := j.writeSpill(spilled)
		if err != nil {
			j.mu.Lock()
			j.release(n)
			j.mu.Unlock()
			return 0, err
		}
		c.Spill, c.SpillCRC = name, checksum(spilled)
	}
	c.At = time.Now().UnixNano()
	payload := encodePayload(make([]byte, 0, c.payloadLen()), &c)

	j.mu.Lock()
	if err := j.usable(); err != nil {
		j.release(n)
		j.mu.Unlock()
		j.dropSpill(c.Spill)
		return 0, err
	}
	j.reserved--
	seq := j.nextSeq
	j.nextSeq++
	putSeq(payload, seq)
	j.pending[seq] = &entry{at: c.At, bytes: n, size: recordSize(&c), spill: c.Spill}
	r := &request{payload: payload, seq: seq, change: true, spill: c.Spill != "", ch: make(chan struct{})}
	j.enqueue(r)
	j.mu.Unlock()
	<-r.ch
	return seq, r.err
}

// full tells whether a change of n bytes must wait (mu held).
func (j *Journal) full(n int64) bool {
	held := len(j.pending) + j.reserved
	if held == 0 {
		return false
	}
	return j.o.MaxEntries > 0 && held >= j.o.MaxEntries ||
		j.o.MaxBytes > 0 && j.bytes+n > j.o.MaxBytes
}

// release gives back the room an Append took and did not use (mu held).
func (j *Journal) release(n int64) {
	j.reserved--
	j.bytes -= n
	close(j.space)
	j.space = make(chan struct{})
}

// usable is the error that stops new records (mu held).
func (j *Journal) usable() error {
	if j.err != nil {
		return j.err
	}
	if j.closing {
		return ErrClosed
	}
	return nil
}

func (j *Journal) enqueue(r *request) {
	j.queue = append(j.queue, r)
	j.wake.Signal()
}

func putSeq(payload []byte, seq uint64) {
	for i := range 8 {
		payload[i] = byte(seq >> (8 * i))
	}
}

// spillPlaceholder stands for a spill file's name while its length is
// all that matters: "w-" and 16 hex digits, as writeSpill names them.
const spillPlaceholder = "w-0000000000000000"

// writeSpill writes data to a new spill file and syncs it; the committer
// syncs the directory before the record naming it is written.
func (j *Journal) writeSpill(data []byte) (string, error) {
	var f *os.File
	var name string
	for {
		var r [8]byte
		if _, err := rand.Read(r[:]); err != nil {
			return "", fmt.Errorf("journal: %w", err)
		}
		name = fmt.Sprintf("w-%016x", r)
		var err error
		f, err = os.OpenFile(filepath.Join(j.spillDir, name), os.O_CREATE|os.O_EXCL|os.O_WRONLY|unix.O_CLOEXEC, 0o600)
		if err == nil {
			break
		}
		if !errors.Is(err, os.ErrExist) {
			return "", fmt.Errorf("journal: spill: %w", err)
		}
	}
	_, err := f.Write(data)
	if err == nil {
		err = unix.Fdatasync(int(f.Fd()))
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		j.dropSpill(name)
		return "", fmt.Errorf("journal: spill: %w", err)
	}
	return name, nil
}

func (j *Journal) dropSpill(name string) {
	if name != "" {
		_ = os.Remove(filepath.Join(j.spillDir, name))
	}
}

// Data returns the bytes of a Write: its Data, or its spill file's
// content, checked against the CRC in its record.
func (j *Journal) Data(c *Change) ([]byte, error) {
	if c.Spill == "" {
		return c.Data, nil
	}
	if !validSpill(c.Spill) {
		return nil, fmt.Errorf("journal: spill file name %q", c.Spill)
	}
	b, err := os.ReadFile(filepath.Join(j.spillDir, c.Spill))
	if err != nil {
		return nil, fmt.Errorf("journal: record %d: %w", c.Seq, err)
	}
	if int64(len(b)) != c.Len || checksum(b) != c.SpillCRC {
		return nil, fmt.Errorf("journal %s: %w: spill file %s of record %d damaged", j.dir, ErrCorrupt, c.Spill, c.Seq)
	}
	return b, nil
}

// Done records that the changes seqs are on the server, and returns once
// that is on disk: they are never replayed, their spill files go, and so
// do segments with nothing left to drain. Each seq must be a change
// Append returned and not yet done.
func (j *Journal) Done(seqs ...uint64) error {
	for len(seqs) > 0 {
		n := min(len(seqs), maxDoneBatch)
		if err := j.done(seqs[:n]); err != nil {
			return err
		}
		seqs = seqs[n:]
	}
	return nil
}

func (j *Journal) done(seqs []uint64) error {
	j.mu.Lock()
	if err := j.usable(); err != nil {
		j.mu.Unlock()
		return err
	}
	for i, s := range seqs {
		e := j.pending[s]
		if e == nil || !e.committed || e.doneQueued {
			for _, u := range seqs[:i] {
				j.pending[u].doneQueued = false
			}
			j.mu.Unlock()
			return fmt.Errorf("journal: done of record %d, which is not pending", s)
		}
		e.doneQueued = true
	}
	c := Change{Op: opDone, Seq: j.nextSeq, At: time.Now().UnixNano(), Data: doneData(seqs)}
	j.nextSeq++
	r := &request{payload: encodePayload(nil, &c), seq: c.Seq, done: seqs, ch: make(chan struct{})}
	j.enqueue(r)
	j.mu.Unlock()
	<-r.ch
	// The done record is on disk: the data is not needed any more.
	for _, name := range r.drop {
		j.dropSpill(name)
	}
	return r.err
}

// Stats tells what the journal holds.
func (j *Journal) Stats() Stats {
	j.mu.Lock()
	defer j.mu.Unlock()
	s := Stats{Entries: len(j.pending), Bytes: j.bytes, Waiting: j.waiting}
	for _, e := range j.pending {
		if s.Oldest == 0 || e.at < s.Oldest {
			s.Oldest = e.at
		}
	}
	return s
}

// Close writes what is queued, ends the active segment and releases the
// journal. Changes not done stay for the next Open.
func (j *Journal) Close() error {
	j.mu.Lock()
	if j.closing {
		j.mu.Unlock()
		<-j.stopped
		return nil
	}
	j.closing = true
	close(j.space)
	j.space = make(chan struct{})
	j.wake.Signal()
	j.mu.Unlock()
	<-j.stopped

	j.mu.Lock()
	err := j.err
	j.mu.Unlock()
	if err == nil {
		_, err = j.seg.WriteAt(newBatch().seal(j.salt, flagEnd), j.segSize)
		if err == nil {
			err = unix.Fdatasync(int(j.seg.Fd()))
		}
	}
	if cerr := j.seg.Close(); err == nil {
		err = cerr
	}
	_ = j.lock.Close()
	if err != nil {
		return fmt.Errorf("journal: close: %w", err)
	}
	return nil
}

// commitLoop is the committer: it writes what is queued as one batch,
// syncs it once for all, and answers every request in it.
func (j *Journal) commitLoop() {
	defer close(j.stopped)
	for {
		j.mu.Lock()
		for len(j.queue) == 0 && !j.closing {
			j.wake.Wait()
		}
		if len(j.queue) == 0 {
			j.mu.Unlock()
			return
		}
		k, size := 0, 0
		for k < len(j.queue) && (k == 0 || size+len(j.queue[k].payload) < maxTake) {
			size += len(j.queue[k].payload)
			k++
		}
		take := j.queue[:k:k]
		j.queue = slices.Clone(j.queue[k:]) // the array taken holds no later request
		err := j.err
		j.mu.Unlock()

		if err == nil {
			if j.o.onCommit != nil {
				j.o.onCommit(len(take))
			}
			err = j.commit(take)
		}
		j.mu.Lock()
		if err != nil && j.err == nil {
			j.err = fmt.Errorf("journal %s: %w", j.dir, err)
		}
		shrunk := false
		for _, r := range take {
			if r.err = j.err; r.err != nil {
				continue
			}
			if r.change {
				e := j.pending[r.seq]
				e.seg, e.committed = j.segNum, true
				j.undone[j.segNum]++
			}
			for _, s := range r.done {
				e := j.pending[s]
				delete(j.pending, s)
				j.bytes -= e.bytes
				j.undone[e.seg]--
				if e.spill != "" {
					r.drop = append(r.drop, e.spill)
				}
				shrunk = true
			}
		}
		if shrunk {
			close(j.space)
			j.space = make(chan struct{})
		}
		j.mu.Unlock()
		if err == nil {
			if err := j.removeDrained(); err != nil {
				j.mu.Lock()
				if j.err == nil {
					j.err = err
				}
				j.mu.Unlock()
			}
		}
		for _, r := range take {
			close(r.ch)
		}
	}
}

// commit writes reqs as one batch and syncs it (committer only).
func (j *Journal) commit(reqs []*request) error {
	t := newBatch()
	spill := false
	for _, r := range reqs {
		t.add(r.payload)
		spill = spill || r.spill
	}
	if spill {
		if err := syncDir(j.spillDir); err != nil {
			return fmt.Errorf("sync spill directory: %w", err)
		}
	}
	if j.segSize > blockSize && j.segSize+int64(batchHeaderLen+t.bodyLen()) > j.o.SegmentSize {
		if err := j.rotate(reqs[0].seq); err != nil {
			return err
		}
	}
	b := t.seal(j.salt, 0)
	if _, err := j.seg.WriteAt(b, j.segSize); err != nil {
		return fmt.Errorf("write: %w", err)
	}
	if err := unix.Fdatasync(int(j.seg.Fd())); err != nil {
		return fmt.Errorf("sync: %w", err)
	}
	j.segSize += int64(len(b))
	return nil
}

// rotate ends the active segment and starts the next, whose first record
// is first.
func (j *Journal) rotate(first uint64) error {
	if _, err := j.seg.WriteAt(newBatch().seal(j.salt, flagEnd), j.segSize); err != nil {
		return fmt.Errorf("write: %w", err)
	}
	if err := unix.Fdatasync(int(j.seg.Fd())); err != nil {
		return fmt.Errorf("sync: %w", err)
	}
	old := j.segNum
	j.mu.Lock()
	j.sizes[old] = j.segSize + blockSize
	j.mu.Unlock()
	if err := j.newSegment(old+1, first); err != nil {
		return err
	}
	return j.carry()
}

// carryRatio: changes still pending in older segments are copied into a
// new one when they take at most 1/carryRatio of those segments' bytes,
// so that a change the drain cannot send keeps no more than that many
// times its size on disk, and copying costs at most that share of what
// is written.
const carryRatio = 4

// carry copies the changes pending in older segments into the active
// one, as its first batches, when they are few enough; the older
// segments can then go. Committer only, right after newSegment.
func (j *Journal) carry() error {
	j.mu.Lock()
	var live, total int64
	want := map[uint64]bool{}
	from := map[uint64]bool{}
	for seq, e := range j.pending {
		if e.committed && e.seg < j.segNum {
			live += e.size
			want[seq] = true
			from[e.seg] = true
		}
	}
	for n := j.oldest; n < j.segNum; n++ {
		total += j.sizes[n]
	}
	j.mu.Unlock()
	if live == 0 || live*carryRatio > total {
		return nil
	}
	var seqs []uint64
	payloads := map[uint64][]byte{}
	for n := range from {
		data, err := os.ReadFile(filepath.Join(j.dir, segName(n)))
		if err != nil {
			return fmt.Errorf("carry: %w", err)
		}
		s, err := scanSegment(data)
		if err != nil {
			return fmt.Errorf("carry: %w", err)
		}
		for _, c := range append(s.carried, s.records...) {
			if want[c.Seq] && payloads[c.Seq] == nil {
				payloads[c.Seq] = encodePayload(nil, &c)
				seqs = append(seqs, c.Seq)
			}
		}
	}
	if len(seqs) != len(want) {
		return fmt.Errorf("carry: %w: %d pending records found of %d", ErrCorrupt, len(seqs), len(want))
	}
	slices.Sort(seqs)
	// One batch synced at a time, as always: a crash tears the last only.
	for len(seqs) > 0 {
		t := newBatch()
		for len(seqs) > 0 && (t.count == 0 || t.bodyLen()+frameLen+len(payloads[seqs[0]]) <= maxTake) {
			t.add(payloads[seqs[0]])
			seqs = seqs[1:]
		}
		b := t.seal(j.salt, flagCarry)
		if _, err := j.seg.WriteAt(b, j.segSize); err != nil {
			return fmt.Errorf("carry: write: %w", err)
		}
		if err := unix.Fdatasync(int(j.seg.Fd())); err != nil {
			return fmt.Errorf("carry: sync: %w", err)
		}
		j.segSize += int64(len(b))
	}
	j.mu.Lock()
	for seq := range want {
		if e := j.pending[seq]; e != nil {
			j.undone[e.seg]--
			e.seg = j.segNum
			j.undone[e.seg]++
		}
	}
	j.mu.Unlock()
	return nil
}
