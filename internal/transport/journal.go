package transport

import (
	"context"
	"fmt"
	"sync"

	"github.com/pkg/sftp"
)

// DefaultReplayLimit bounds the bytes of acknowledged writes one file
// keeps for replay (Options.ReplayLimit).
const DefaultReplayLimit = 64 << 20

// fileLog is what this host's writable handles of one file have changed on
// the server since the last successful fsync, shared by every such handle
// of the file so that all of them agree on the size the server must show
// and on the order of the changes.
//
// A handle whose channel died re-opens the file and, before anything else
// is sent on the new handle, checks the server's size against what the
// log expects and makes the logged changes again, in order: an
// acknowledged write is never lost with a connection, whatever the server
// end did with the data it had not yet written out. The log keeps at most
// ReplayLimit bytes: past that the writer that crossed it syncs the file,
// which empties the log.
type fileLog struct {
	// gate is held shared by every change in flight and exclusively by a
	// re-open that checks and replays: a replay never races with a newer
	// change to the same file, which would overwrite it with older data.
	gate sync.RWMutex

	mu      sync.Mutex
	refs    int     // writable handles of the file (guarded by Host.logsMu)
	sizeOK  bool    // size was learned or set
	size    int64   // size the server must have after every acknowledged change
	sentEnd int64   // end of the furthest write sent (it may have landed)
	entries []entry // acknowledged changes since the last successful fsync
	base    uint64  // entries dropped so far (sequence number of entries[0])
	bytes   int64
	syncing chan struct{} // non-nil while a sync to trim the log runs
}

// entry is one acknowledged write, or a truncate to off when trunc (from
// prev, the size expected before it).
type entry struct {
	off   int64
	data  []byte
	trunc bool
	prev  int64
}

// logOf returns the log of abs, shared by every writable handle of it,
// counting one more user.
func (h *Host) logOf(abs string) *fileLog {
	h.logsMu.Lock()
	defer h.logsMu.Unlock()
	if h.logs == nil {
		h.logs = map[string]*fileLog{}
	}
	l := h.logs[abs]
	if l == nil {
		l = &fileLog{}
		h.logs[abs] = l
	}
	l.refs++
	return l
}

// openLog returns the log of abs, counting one more user, if a writable
// handle of it is open here; nil otherwise.
func (h *Host) openLog(abs string) *fileLog {
	h.logsMu.Lock()
	defer h.logsMu.Unlock()
	l := h.logs[abs]
	if l != nil {
		l.refs++
	}
	return l
}

// releaseLog counts one user less; the last one forgets the log: its
// changes were acknowledged on a handle closed since.
func (h *Host) releaseLog(abs string, l *fileLog) {
	h.logsMu.Lock()
	defer h.logsMu.Unlock()
	l.refs--
	if l.refs == 0 && h.logs[abs] == l {
		delete(h.logs, abs)
	}
}

// releaseLogIf is releaseLog for a log that may be nil (a read-only file).
func (h *Host) releaseLogIf(abs string, l *fileLog) {
	if l != nil {
		h.releaseLog(abs, l)
	}
}

// holdGate holds the gate shared for a change in flight (an open that
// truncates or creates); nothing on a nil log.
func (l *fileLog) holdGate() {
	if l != nil {
		l.gate.RLock()
	}
}

func (l *fileLog) releaseGate() {
	if l != nil {
		l.gate.RUnlock()
	}
}

// learnSize settles the expected size from the server's answer at open,
// unless a change of ours set it meanwhile.
func (l *fileLog) learnSize(size int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.sizeOK {
		l.size, l.sizeOK = size, true
	}
	l.sentEnd = max(l.sentEnd, l.size)
}

// truncated records that the file was emptied by the open itself; nothing
// on a nil log.
func (l *fileLog) truncated() {
	if l == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.addLocked(entry{off: 0, trunc: true, prev: 0})
	l.size, l.sizeOK = 0, true
}

// sending records a write about to be sent up to end.
func (l *fileLog) sending(end int64) {
	l.mu.Lock()
	l.sentEnd = max(l.sentEnd, end)
	l.mu.Unlock()
}

// wrote records an acknowledged write; it keeps a copy of data.
func (l *fileLog) wrote(data []byte, off int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.addLocked(entry{off: off, data: append([]byte(nil), data...)})
	end := off + int64(len(data))
	l.size = max(l.size, end)
	l.sentEnd = max(l.sentEnd, end)
}

// truncateSent records a truncate about to be sent: the size may now be
// anywhere between the smaller and the larger of the two.
func (l *fileLog) truncateSent(size int64) {
	l.mu.Lock()
	l.size = min(l.size, size)
	l.sentEnd = max(l.sentEnd, size)
	l.mu.Unlock()
}

// truncateDone records an acknowledged truncate.
func (l *fileLog) truncateDone(size int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.addLocked(entry{off: size, trunc: true, prev: l.sizeBefore(size)})
	l.size, l.sizeOK = size, true
}

// sizeBefore is the size the file had before an acknowledged truncate to
// size: truncateSent lowered l.size to at most size, so the size before
// is only known when it was not larger.
func (l *fileLog) sizeBefore(size int64) int64 {
	return min(l.size, size)
}

func (l *fileLog) addLocked(e entry) {
	l.entries = append(l.entries, e)
	l.bytes += int64(len(e.data))
}

// expected returns the size the server must have and the end of the
// furthest write sent.
func (l *fileLog) expected() (size, sentEnd int64, ok bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.size, l.sentEnd, l.sizeOK
}

// mark is the sequence number after the last entry.
func (l *fileLog) mark() uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.base + uint64(len(l.entries))
}

// synced forgets the entries before mark, made durable by an fsync sent
// after they were acknowledged.
func (l *fileLog) synced(mark uint64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if mark <= l.base {
		return
	}
	n := int(mark - l.base)
	for _, e := range l.entries[:n] {
		l.bytes -= int64(len(e.data))
	}
	l.entries = append([]entry(nil), l.entries[n:]...)
	l.base = mark
}

// full reports whether the log holds more than limit bytes.
func (l *fileLog) full(limit int64) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.bytes > limit
}

// pending reports whether the log holds changes not known to be synced.
func (l *fileLog) pending() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.entries) > 0
}

// replay makes the logged changes again on sf; the caller holds the gate
// exclusively. It writes the net effect of the log rather than each
// change in turn: the final bytes of every range written (and the zeros
// a truncate that grew the file left), then the final size. A server that
// still holds every change sees each byte rewritten with its own value
// and the size it has, so a reader of the file never sees an older
// version while the replay runs.
func (l *fileLog) replay(sf *sftp.File) (int, error) {
	l.mu.Lock()
	es := l.entries
	l.mu.Unlock()
	segs, size, sized := netEffect(es)
	for _, sg := range segs {
		if err := writeSeg(sf, sg); err != nil {
			return 0, fmt.Errorf("replaying acknowledged writes: %w", err)
		}
	}
	if sized {
		fi, err := sf.Stat()
		if err == nil && fi.Size() != size {
			err = sf.Truncate(size)
		}
		if err != nil {
			return 0, fmt.Errorf("replaying acknowledged truncate: %w", err)
		}
	}
	return len(es), nil
}

// seg is a range of the file with its final contents: data, or n zero
// bytes when data is nil.
type seg struct {
	off  int64
	n    int64
	data []byte
}

func (sg seg) end() int64 { return sg.off + sg.n }

// netEffect folds changes, in order, into the final contents of the
// ranges they wrote, sorted and disjoint, and the final size when a
// truncate fixed it (sized).
func netEffect(es []entry) (segs []seg, size int64, sized bool) {
	for _, e := range es {
		if !e.trunc {
			if sized && e.off > size { // a hole past the end: zeros
				segs = overlay(segs, seg{off: size, n: e.off - size})
			}
			segs = overlay(segs, seg{off: e.off, n: int64(len(e.data)), data: e.data})
			if sized {
				size = max(size, e.off+int64(len(e.data)))
			}
			continue
		}
		segs = cut(segs, e.off)
		if e.off > e.prev {
			segs = overlay(segs, seg{off: e.prev, n: e.off - e.prev})
		}
		size, sized = e.off, true
	}
	return segs, size, sized
}

// overlay puts s over segs: what segs held in s's range is replaced.
func overlay(segs []seg, s seg) []seg {
	out := make([]seg, 0, len(segs)+2)
	placed := false
	for _, g := range segs {
		if g.end() <= s.off || g.off >= s.end() {
			if !placed && g.off >= s.end() {
				out = append(out, s)
				placed = true
			}
			out = append(out, g)
			continue
		}
		if g.off < s.off {
			out = append(out, clip(g, g.off, s.off))
		}
		if !placed {
			out = append(out, s)
			placed = true
		}
		if g.end() > s.end() {
			out = append(out, clip(g, s.end(), g.end()))
		}
	}
	if !placed {
		out = append(out, s)
	}
	return out
}

// cut drops what segs hold at or past size.
func cut(segs []seg, size int64) []seg {
	out := segs[:0:0]
	for _, g := range segs {
		switch {
		case g.end() <= size:
			out = append(out, g)
		case g.off < size:
			out = append(out, clip(g, g.off, size))
		}
	}
	return out
}

// clip is the part [from, to) of g.
func clip(g seg, from, to int64) seg {
	c := seg{off: from, n: to - from}
	if g.data != nil {
		c.data = g.data[from-g.off : to-g.off]
	}
	return c
}

// zeros is written for the zero runs of a replay.
var zeros [64 << 10]byte

func writeSeg(sf *sftp.File, sg seg) error {
	if sg.data != nil {
		_, err := sf.WriteAt(sg.data, sg.off)
		return err
	}
	for off := sg.off; off < sg.end(); off += int64(len(zeros)) {
		n := min(int64(len(zeros)), sg.end()-off)
		if _, err := sf.WriteAt(zeros[:n], off); err != nil {
			return err
		}
	}
	return nil
}

// makeRoom syncs f when its log holds more than the replay limit, so that
// the memory kept for replay stays bounded. One sync runs at a time;
// other writers go on until the log holds twice the limit, then wait.
func (f *file) makeRoom(ctx context.Context) error {
	l := f.log
	limit := f.h.o.ReplayLimit
	l.mu.Lock()
	for l.bytes > limit {
		if l.syncing == nil {
			done := make(chan struct{})
			l.syncing = done
			l.mu.Unlock()
			err := f.Sync(ctx)
			l.mu.Lock()
			l.syncing = nil
			close(done)
			if err != nil {
				l.mu.Unlock()
				return fmt.Errorf("sync to release acknowledged writes: %w", err)
			}
			continue
		}
		if l.bytes <= 2*limit {
			break
		}
		wait := l.syncing
		l.mu.Unlock()
		select {
		case <-wait:
		case <-ctx.Done():
			return ctx.Err()
		}
		l.mu.Lock()
	}
	l.mu.Unlock()
	return nil
}
