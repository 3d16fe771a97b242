package replica

import (
	"context"
	"fmt"
	"syscall"

	"sshfsm/internal/remote"
)

// journal holds a writable handle's changes acknowledged since its last
// successful Sync, in the order they were acknowledged, so that a move to
// another member can make them again there: a gateway that acknowledged a
// write may have held it in its own cache and died before it reached the
// shared storage.
type journal struct {
	entries []entry
	base    uint64 // entries dropped so far (sequence number of entries[0])
	bytes   int64
}

// entry is one acknowledged WriteAt, or a Truncate to off when trunc.
type entry struct {
	off   int64
	data  []byte
	trunc bool
}

func (j *journal) add(e entry) {
	j.entries = append(j.entries, e)
	j.bytes += int64(len(e.data))
}

// mark is the sequence number after the last entry.
func (j *journal) mark() uint64 { return j.base + uint64(len(j.entries)) }

// drop forgets the entries before mark (made durable by a Sync).
func (j *journal) drop(mark uint64) {
	if mark <= j.base {
		return
	}
	n := int(mark - j.base)
	for _, e := range j.entries[:n] {
		j.bytes -= int64(len(e.data))
	}
	j.entries = append([]entry(nil), j.entries[n:]...)
	j.base = mark
}

// replay makes the journal's changes on rf, in order.
func (f *file) replay(ctx context.Context, rf remote.File) error {
	f.mu.Lock()
	es := f.j.entries
	f.mu.Unlock()
	for _, e := range es {
		var err error
		if e.trunc {
			err = rf.Truncate(ctx, e.off)
		} else {
			_, err = rf.WriteAt(ctx, e.data, e.off)
		}
		if err != nil {
			return fmt.Errorf("replaying acknowledged writes of %s: %w", f.path, err)
		}
	}
	return nil
}

// WriteAt sends p on the current handle. A write acknowledged by a member
// the handle has meanwhile left is sent again: the move's replay may have
// missed it.
func (f *file) WriteAt(ctx context.Context, p []byte, off int64) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	for range f.attempts() {
		m, rf, gen, err := f.acquire(ctx)
		if err != nil {
			return 0, err
		}
		err = f.s.do(ctx, m, idempotent, func(ctx context.Context) error {
			_, err := rf.WriteAt(ctx, p, off)
			return err
		})
		if err == nil && f.record(gen, entry{off: off, data: append([]byte(nil), p...)}) {
			m.bytesWritten.Add(uint64(len(p)))
			return len(p), f.makeRoom(ctx)
		}
		if err == nil {
			continue // acknowledged by a handle left behind
		}
		if again, err := f.after(ctx, gen, m, err); !again {
			return 0, err
		}
	}
	return 0, f.s.noMember(ctx, "write", f.path, nil)
}

// record journals an acknowledged change if the handle it was made on is
// still the current one.
func (f *file) record(gen uint64, e entry) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.gen != gen {
		return false
	}
	f.wrote = true
	f.j.add(e)
	return true
}

func (f *file) Truncate(ctx context.Context, size int64) error {
	for range f.attempts() {
		gen, err := f.eachGen(ctx, mutation, func(ctx context.Context, rf remote.File) error {
			return rf.Truncate(ctx, size)
		})
		if err != nil {
			return err
		}
		if f.record(gen, entry{off: size, trunc: true}) {
			return nil
		}
	}
	return f.s.noMember(ctx, "truncate", f.path, nil)
}

// Sync makes the acknowledged writes durable and forgets them; after a
// move it syncs on the new member, where they were replayed.
func (f *file) Sync(ctx context.Context) error {
	f.mu.Lock()
	mark := f.j.mark()
	f.mu.Unlock()
	gen, err := f.eachGen(ctx, mutation, func(ctx context.Context, rf remote.File) error {
		return rf.Sync(ctx)
	})
	if err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	// Every entry before mark was acknowledged on, or replayed on, the
	// handle that synced, if that is still the current one.
	if gen == f.gen {
		f.j.drop(mark)
	}
	return nil
}

// makeRoom syncs when the journal holds more than ReplayLimit bytes;
// writers wait for that sync only past twice the limit.
func (f *file) makeRoom(ctx context.Context) error {
	limit := f.s.o.ReplayLimit
	f.mu.Lock()
	for f.j.bytes > limit {
		if f.syncing == nil {
			done := make(chan struct{})
			f.syncing = done
			f.mu.Unlock()
			err := f.Sync(ctx)
			f.mu.Lock()
			f.syncing = nil
			close(done)
			if err != nil {
				f.mu.Unlock()
				return fmt.Errorf("sync to release acknowledged writes: %w", err)
			}
			continue
		}
		if f.j.bytes <= 2*limit {
			break
		}
		wait := f.syncing
		f.mu.Unlock()
		select {
		case <-wait:
		case <-ctx.Done():
			return ctx.Err()
		}
		f.mu.Lock()
	}
	f.mu.Unlock()
	return nil
}

// Close closes the current handle. If its member fails meanwhile and
// acknowledged writes are not known to be synced, the file is moved (the
// writes replayed) and closed there; otherwise nothing is lost with the
// handle.
func (f *file) Close(ctx context.Context) error {
	f.mu.Lock()
	if f.closing {
		f.mu.Unlock()
		return fmt.Errorf("close %s: %w", f.path, syscall.EBADF)
	}
	f.closing = true
	f.mu.Unlock()
	err := f.closeHandle(ctx)
	f.mu.Lock()
	defer f.mu.Unlock()
	f.closed = true
	if f.rf != nil {
		f.m.handles.Add(-1)
		f.m, f.rf = nil, nil
	}
	if err != nil && len(f.j.entries) == 0 && connLevel(ctx, err) {
		return nil
	}
	return err
}

func (f *file) closeHandle(ctx context.Context) error {
	for range f.attempts() {
		m, rf, gen, err := f.acquire(ctx)
		if err != nil {
			return err
		}
		err = f.s.do(ctx, m, mutation, rf.Close)
		f.mu.Lock()
		pending, current := len(f.j.entries) > 0, f.gen == gen
		if err == nil && !current {
			f.mu.Unlock()
			continue // closed a handle left behind; close the current one
		}
		if current && (err == nil || !pending || !connLevel(ctx, err)) {
			f.m, f.rf = nil, nil
			f.mu.Unlock()
			m.handles.Add(-1)
			return err
		}
		f.mu.Unlock()
		if again, err := f.after(ctx, gen, m, err); !again {
			return err
		}
	}
	return f.s.noMember(ctx, "close", f.path, nil)
}

// journalBytes reports the bytes held for replay (tests, stats).
func (f *file) journalBytes() int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.j.bytes
}
