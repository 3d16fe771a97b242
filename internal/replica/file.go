package replica

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"sshfsm/internal/remote"
)

// reopenMask are the open flags a re-open on another member leaves out.
const reopenMask = os.O_CREATE | os.O_EXCL | os.O_TRUNC

// errChanged fails a handle whose file is not the one it was reading.
var errChanged = fmt.Errorf("file changed on the replicas while moving to another one: %w", syscall.EIO)

// file is an open file of the set: a handle on one member, moved to another
// member (re-opened by path) when that one is taken out. See doc.go.
type file struct {
	s     *Set
	path  string
	flags int  // open flags for re-opening: without reopenMask
	write bool // opened for writing: lives on the primary

	sem     chan struct{} // capacity 1: serialises moves; taken before mu
	learned chan struct{} // closed once the first handle's attributes are settled
	served  atomic.Bool   // data was returned to a reader

	// mu guards the fields below.
	mu      sync.Mutex
	m       *member     // member of the current handle; nil while none
	rf      remote.File // current handle; nil while none
	gen     uint64      // bumped at each move
	known   remote.Attr // attributes of the version being read
	knownOK bool
	wrote   bool          // the handle has writes or truncates of its own
	j       journal       // acknowledged changes not yet synced
	syncing chan struct{} // non-nil while makeRoom syncs; closed when done
	broken  error         // permanent failure
	closing bool
	closed  bool
}

var _ remote.File = (*file)(nil)

// Open opens for reading on the least busy member, for writing (or with
// O_CREATE, O_TRUNC, O_EXCL) on the primary.
func (s *Set) Open(ctx context.Context, p string, flags int, perm uint32) (remote.File, error) {
	f := &file{s: s, path: p, flags: flags &^ reopenMask,
		write: flags&(os.O_WRONLY|os.O_RDWR) != 0, sem: make(chan struct{}, 1),
		learned: make(chan struct{})}
	var m *member
	var rf remote.File
	var err error
	if f.write || flags&reopenMask != 0 {
		err = s.write(ctx, "open", p, func(ctx context.Context, mm *member, resent bool) (err error) {
			m = mm
			if rf, err = s.openOn(ctx, mm, p, flags, perm, resent); err == nil {
				mm.handles.Add(1) // before the open stops counting as work
			}
			return err
		})
	} else {
		err = s.read(ctx, "open", p, func(ctx context.Context, mm *member) (err error) {
			m = mm
			if rf, err = mm.r.Open(ctx, p, flags, perm); err == nil {
				mm.handles.Add(1)
			}
			return err
		})
	}
	if err != nil {
		return nil, err
	}
	f.m, f.rf = m, rf
	go f.learn(rf)
	return f, nil
}

// openOn opens p on m. An exclusive create re-sent after a lost first
// attempt that finds the file existing takes it if it is an empty regular
// file: most likely the one the first attempt created.
func (s *Set) openOn(ctx context.Context, m *member, p string, flags int, perm uint32, resent bool) (remote.File, error) {
	rf, err := m.r.Open(ctx, p, flags, perm)
	if !resent || flags&os.O_EXCL == 0 || !errors.Is(err, fs.ErrExist) {
		return rf, err
	}
	rf2, err2 := m.r.Open(ctx, p, flags&^reopenMask, perm)
	if err2 != nil {
		return nil, err
	}
	a, err2 := rf2.Stat(ctx)
	if err2 != nil || a.Size != 0 || a.Mode&syscall.S_IFMT != syscall.S_IFREG {
		s.closeQuietly(rf2)
		return nil, err
	}
	return rf2, nil
}

// learn settles the attributes a re-open is checked against, from the
// first handle, without adding a round trip to Open.
func (f *file) learn(rf remote.File) {
	defer close(f.learned)
	ctx, cancel := context.WithTimeout(f.s.ctx, f.s.o.ProbeTimeout)
	defer cancel()
	a, err := rf.Stat(ctx)
	f.mu.Lock()
	defer f.mu.Unlock()
	if err == nil && !f.knownOK {
		f.known, f.knownOK = a, true
	}
}

// closeQuietly closes a handle nobody waits for (one left behind on a
// member taken out, or a spare), within ProbeTimeout.
func (s *Set) closeQuietly(rf remote.File) {
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), s.o.ProbeTimeout)
		defer cancel()
		rf.Close(ctx)
	}()
}

// attempts bounds the moves one call may make.
func (f *file) attempts() int { return 2*len(f.s.members) + 2 }

// acquire returns the current handle, moving the file first when its
// member is out of service.
func (f *file) acquire(ctx context.Context) (*member, remote.File, uint64, error) {
	for range f.attempts() {
		f.mu.Lock()
		m, rf, gen, broken, closed := f.m, f.rf, f.gen, f.broken, f.closed
		f.mu.Unlock()
		switch {
		case closed:
			return nil, nil, 0, fmt.Errorf("%s: %w", f.path, syscall.EBADF)
		case broken != nil:
			return nil, nil, 0, broken
		case rf != nil && m.usable():
			return m, rf, gen, nil
		}
		if err := f.move(ctx, gen, nil, nil); err != nil {
			return nil, nil, 0, err
		}
	}
	return nil, nil, 0, f.s.noMember(ctx, "open", f.path, nil)
}

// move takes the handle of generation gen off its member (taking failed
// out after cause, when set) and re-opens the file on another member. A
// move already made by a concurrent call is not repeated.
func (f *file) move(ctx context.Context, gen uint64, failed *member, cause error) error {
	if failed != nil {
		f.s.takeOut(failed, cause)
	}
	select {
	case f.sem <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	}
	defer func() { <-f.sem }()
	f.mu.Lock()
	// Done meanwhile: by a concurrent move (failed != nil: a newer handle),
	// or by the move that acquire found under way (failed == nil).
	done := f.rf != nil && f.m.usable() && (f.gen != gen || failed == nil)
	if f.broken != nil || done {
		defer f.mu.Unlock()
		return f.broken
	}
	old, oldrf := f.m, f.rf
	f.gen++
	f.m, f.rf = nil, nil
	f.mu.Unlock()
	if oldrf != nil {
		old.handles.Add(-1)
		f.s.closeQuietly(oldrf)
	}
	m, rf, err := f.reopen(ctx)
	f.mu.Lock()
	defer f.mu.Unlock()
	if err != nil {
		if !errors.Is(err, ErrNoMember) && ctx.Err() == nil {
			f.broken = err
		}
		return err
	}
	f.m, f.rf = m, rf
	f.s.log.Info("replica handle moved", "path", f.path, "member", m.name)
	return nil
}

// reopen opens the file on the best member that answers: by load for a
// reader, the primary for a writer.
func (f *file) reopen(ctx context.Context) (*member, remote.File, error) {
	// What the re-open is checked against comes first, outside any
	// member's attempt, so that waiting for it never counts against the
	// member: for as long as an attempt may take. Past that (the member
	// that was asked hung), the handle goes on without it, as check says.
	wait := f.s.o.Timeout
	if wait <= 0 {
		wait = f.s.o.ProbeTimeout
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-f.learned:
	case <-t.C:
	case <-ctx.Done():
		return nil, nil, ctx.Err()
	}
	var tried uint64
	var last error
	for {
		pick := f.s.pickRead
		if f.write {
			pick = f.s.pickPrimary
		}
		m := pick(tried)
		if m == nil {
			return nil, nil, f.s.noMember(ctx, "reopen", f.path, last)
		}
		tried |= 1 << m.idx
		var rf remote.File
		err := f.s.call(ctx, m, idempotent, func(ctx context.Context) (err error) {
			if rf, err = f.reopenOn(ctx, m); err == nil {
				m.handles.Add(1)
			}
			return err
		})
		if !connLevel(ctx, err) {
			return m, rf, err
		}
		f.s.takeOut(m, err)
		last = err
	}
}

// reopenOn opens the file on m, checks it is the version being read (when
// the handle has no writes of its own) and replays the acknowledged writes
// not known to be synced.
func (f *file) reopenOn(ctx context.Context, m *member) (remote.File, error) {
	rf, err := m.r.Open(ctx, f.path, f.flags, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("reopen %s on %s: %v: %w", f.path, m.name, err, syscall.ESTALE)
	}
	if err != nil {
		return nil, err
	}
	if err = f.check(ctx, rf); err == nil {
		err = f.replay(ctx, rf)
	}
	if err != nil {
		f.s.closeQuietly(rf)
		return nil, err
	}
	return rf, nil
}

// check verifies a re-opened file against the attributes the handle knew
// (reopen waited for learn, or gave up on it): size and mtime unchanged,
// else reading on would mix two versions.
func (f *file) check(ctx context.Context, rf remote.File) error {
	f.mu.Lock()
	wrote := f.wrote
	f.mu.Unlock()
	if wrote {
		return nil
	}
	a, err := rf.Stat(ctx)
	if err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	switch {
	case !f.knownOK && f.served.Load():
		return fmt.Errorf("%s: attributes unknown: %w", f.path, errChanged)
	case !f.knownOK:
		f.known, f.knownOK = a, true
	case a.Size != f.known.Size || !a.Mtime.Equal(f.known.Mtime):
		return fmt.Errorf("%s: %w", f.path, errChanged)
	}
	return nil
}

func (f *file) ReadAt(ctx context.Context, p []byte, off int64) (int, error) {
	for range f.attempts() {
		m, rf, gen, err := f.acquire(ctx)
		if err != nil {
			return 0, err
		}
		var n int
		err = f.s.do(ctx, m, idempotent, func(ctx context.Context) (err error) {
			n, err = rf.ReadAt(ctx, p, off)
			return err
		})
		if n > 0 {
			m.bytesRead.Add(uint64(n))
			f.served.Store(true)
		}
		if err == nil || err == io.EOF {
			return n, err
		}
		if again, err := f.after(ctx, gen, m, err); !again {
			return 0, err
		}
	}
	return 0, f.s.noMember(ctx, "read", f.path, nil)
}

func (f *file) Stat(ctx context.Context) (remote.Attr, error) {
	var a remote.Attr
	err := f.each(ctx, idempotent, func(ctx context.Context, rf remote.File) (err error) {
		a, err = rf.Stat(ctx)
		return err
	})
	return a, err
}

// each runs fn on the current handle, moving the file and running fn again
// after a connection-level failure; it returns the generation fn succeeded
// on.
func (f *file) each(ctx context.Context, k callKind, fn func(context.Context, remote.File) error) error {
	_, err := f.eachGen(ctx, k, fn)
	return err
}

func (f *file) eachGen(ctx context.Context, k callKind, fn func(context.Context, remote.File) error) (uint64, error) {
	for range f.attempts() {
		m, rf, gen, err := f.acquire(ctx)
		if err != nil {
			return 0, err
		}
		err = f.s.do(ctx, m, k, func(ctx context.Context) error { return fn(ctx, rf) })
		if again, err := f.after(ctx, gen, m, err); !again {
			return gen, err
		}
	}
	return 0, f.s.noMember(ctx, "file", f.path, nil)
}

// after decides what follows a call on the handle of generation gen (on m)
// that ended with err: the call is made again on the file's current handle
// after a connection-level failure (the file is moved first) or when the
// handle was moved meanwhile by another call (its error is that of a
// handle left behind, closed by the move); otherwise err is the result.
func (f *file) after(ctx context.Context, gen uint64, m *member, err error) (again bool, _ error) {
	switch {
	case err == nil || ctx.Err() != nil:
		return false, err
	case connLevel(ctx, err):
		if err := f.move(ctx, gen, m, err); err != nil {
			return false, err
		}
		return true, nil
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.gen != gen, err
}
