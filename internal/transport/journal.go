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

// entry is one acknowledged write, or a truncate to off when trunc.
type entry struct {
	off   int64
	data  []byte
	trunc bool
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

// truncated records that the file was emptied by the open itself.
func (l *fileLog) truncated() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.addLocked(entry{off: 0, trunc: true})
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
	l.addLocked(entry{off: size, trunc: true})
	l.size, l.sizeOK = size, true
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

// replay makes the logged changes again on sf, in order; the caller holds
// the gate exclusively.
func (l *fileLog) replay(sf *sftp.File) (int, error) {
	l.mu.Lock()
	es := l.entries
	l.mu.Unlock()
	for _, e := range es {
		var err error
		if e.trunc {
			err = sf.Truncate(e.off)
		} else {
			_, err = sf.WriteAt(e.data, e.off)
		}
		if err != nil {
			return 0, fmt.Errorf("replaying acknowledged writes: %w", err)
		}
	}
	return len(es), nil
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
