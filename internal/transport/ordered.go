package transport

import (
	"context"
	"sync"
	"time"

	"sshfsm/internal/remote"
)

// Attribute changes behind writes. OpenSSH's sftp-server handles the
// requests of a session one at a time, in the order they came: an
// FSETSTAT sent on the session after a file's WRITEs is applied after
// them, answered or not. So a set mtime or a chmod queued behind a new
// file's writes (fusefs) need not wait for the writes' answers before it
// is sent: the close of such a file waits one round trip, not two. This
// holds only where every write of the file still in flight went out
// before it on the same session, as a request of its own written there
// by the caller (the raw path): writes sent by a goroutine of their own,
// or on another session, may reach the server later. Other servers
// (pkg/sftp's handles writes on several workers) get the changes after
// the writes' answers, as before.

// inOrderExt is advertised by OpenSSH's sftp-server (8.7 on); no other
// server is known to handle every request in order.
const inOrderExt = "limits@openssh.com"

// writeOrder tracks a file's writes in flight, for SetAttrsBehind.
type writeOrder struct {
	mu   sync.Mutex
	slow int              // writes that may reach the server in any order
	raw  map[*channel]int // writes written into each session, unanswered
}

func (o *writeOrder) add(slow int, c *channel, raw int) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.slow += slow
	if c != nil {
		if o.raw == nil {
			o.raw = map[*channel]int{}
		}
		if o.raw[c] += raw; o.raw[c] <= 0 {
			delete(o.raw, c)
		}
	}
}

// behind reports whether every write in flight went out on c.
func (o *writeOrder) behind(c *channel) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.slow > 0 {
		return false
	}
	for ch := range o.raw {
		if ch != c {
			return false
		}
	}
	return true
}

var _ remote.OrderedAttrSetter = (*file)(nil)

// SetAttrsBehind implements remote.OrderedAttrSetter with one FSETSTAT
// (two when a set-user-ID mode follows a chown, as in SetAttrs) written
// into the session of the writes in flight.
func (f *file) SetAttrsBehind(a remote.SetAttr, done func(err error, retry bool)) bool {
	if a.Size != nil || (a.UID == nil) != (a.GID == nil) || (a.Atime == nil) != (a.Mtime == nil) {
		return false
	}
	parts := []remote.SetAttr{a}
	if a.Mode != nil && *a.Mode&setuidSetgidBits != 0 && a.UID != nil {
		first := a
		first.Mode = nil
		parts = []remote.SetAttr{first, {Mode: a.Mode}}
	}
	if a.Mode == nil && a.UID == nil && a.Atime == nil {
		return false
	}
	c, _, err := f.current() // one request counted on c
	if c == nil || err != nil {
		return false
	}
	f.mu.Lock()
	handle, ok := f.raws[c]
	f.mu.Unlock()
	if !ok || !c.ext(inOrderExt) || !f.order.behind(c) {
		c.unbegin()
		return false
	}
	for _, p := range parts {
		if _, err := fsetstatPacket(nil, 0, handle, p); err != nil {
			c.unbegin()
			return false // not representable: SetAttrs says so
		}
	}
	var mu sync.Mutex // guards left and first
	left, first := len(parts), error(nil)
	for i, p := range parts {
		if i > 0 {
			c.begin()
		}
		f.h.rawFsetstatAsync(c, handle, p, func(err error) {
			mu.Lock()
			if err != nil && first == nil {
				first = err
			}
			left--
			last, err := left == 0, first
			mu.Unlock()
			if last {
				f.behindDone(c, err, done)
			}
		})
	}
	return true
}

// behindDone passes the outcome of SetAttrsBehind on; it runs on the
// session's reader, which must not send: what needs requests (the likely
// errno of a failure, the end of a broken channel) goes on a goroutine.
func (f *file) behindDone(c *channel, err error, done func(error, bool)) {
	switch {
	case err == nil:
		done(nil, false)
	case final(err):
		go func() {
			if isFailure(err) {
				ctx, cancel := context.WithTimeout(context.Background(), f.h.o.Timeout)
				defer cancel()
				err = f.r.settle(ctx, f.name, err, probeFS)
			}
			done(f.fail("fsetstat", err), false)
		}()
	default:
		go func() {
			c.kill(err)
			f.drop(c)
			done(nil, true)
		}()
	}
}

// rawFsetstatAsync sends one FSETSTAT like rawFsetstat, without waiting:
// cb gets the outcome, as rawWriteAsync's does.
func (h *Host) rawFsetstatAsync(c *channel, handle string, a remote.SetAttr, cb func(error)) {
	start := time.Now()
	q := &rawReq{write: true, cb: func(_ int, err error) {
		endWrite(c, start, 0, err)
		cb(err)
	}}
	id, err := c.raw.add(q)
	if err != nil {
		q.finish(0, err)
		return
	}
	pkt, err := fsetstatPacket(nil, id, handle, a)
	if err == nil {
		err = c.wire.inject(pkt, nil)
	}
	if err != nil && c.raw.take(id) != nil {
		q.finish(0, err)
	}
}
