package transport

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"reflect"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/pkg/sftp"
)

// Reads and writes that fit one request are sent past pkg/sftp: the READ or
// WRITE packet is written into the session by the caller's goroutine, and
// the session's reader (wire.go) recognises the answer by its request id and
// reads the data straight into the caller's buffer. pkg/sftp would run the
// request on a worker goroutine, allocate a buffer for every answer and copy
// it once more, which at tens of thousands of small reads a second was most
// of the daemon's CPU. The request ids of these reads are kept 2^31 away from
// pkg/sftp's own, which count up by one per request: a request of either
// kind is answered (or its session recycled) long before the other kind's
// ids could reach it.

const (
	fxpRead   = 5
	fxpWrite  = 6
	fxpStatus = 101
	fxpData   = 103
)

// rawReads are the READ requests in flight past pkg/sftp on one session.
type rawReads struct {
	lastID atomic.Uint32 // the latest request id pkg/sftp sent

	// mu guards the fields below.
	mu    sync.Mutex
	count uint32
	reqs  map[uint32]*rawReq
	err   error // the session's end; no request is taken after it
}

func newRawReads() *rawReads { return &rawReads{reqs: map[uint32]*rawReq{}} }

// rawReq is one READ or WRITE. A READ's dest, and a WRITE's data, lie in
// l, which the request holds until it is answered or its session ends, so
// that a caller that gave up never sees its memory written, and a buffer
// spliced into the pipe is not reused before ssh has read it.
type rawReq struct {
	dest  []byte
	l     *lease
	write bool
	n     int
	err   error
	done  chan struct{}          // closed when answered; nil when cb is set
	cb    func(n int, err error) // instead of done: called when answered
	sent  time.Time              // for the channel's watchdog (watchRaw)
}

// add registers a request and returns its id.
func (r *rawReads) add(q *rawReq) (uint32, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.err != nil {
		return 0, r.err
	}
	for {
		r.count++
		id := r.lastID.Load() + 1<<31 + r.count&(1<<30-1)
		if _, busy := r.reqs[id]; !busy {
			if q.sent.IsZero() {
				q.sent = time.Now()
			}
			r.reqs[id] = q
			return id, nil
		}
	}
}

// take removes and returns the request of id, nil if it is not ours.
func (r *rawReads) take(id uint32) *rawReq {
	r.mu.Lock()
	defer r.mu.Unlock()
	q := r.reqs[id]
	delete(r.reqs, id)
	return q
}

// has reports whether id is a request of ours.
func (r *rawReads) has(id uint32) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.reqs[id] != nil
}

// oldest returns when the longest-waiting request was sent.
func (r *rawReads) oldest() (time.Time, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	var t time.Time
	for _, q := range r.reqs {
		if t.IsZero() || q.sent.Before(t) {
			t = q.sent
		}
	}
	return t, !t.IsZero()
}

// fail ends every request with err, and taken, requests already taken out
// of the session by an answer that turned out malformed; later ones fail at
// once.
func (r *rawReads) fail(err error, taken ...*rawReq) {
	r.mu.Lock()
	if r.err == nil {
		// Not %w: a session that ended with io.EOF must not read as the
		// server's end-of-file answer to the reads in flight.
		r.err = fmt.Errorf("sftp session ended (%v): %w", err, syscall.ENOTCONN)
	}
	reqs := r.reqs
	r.reqs = map[uint32]*rawReq{}
	r.mu.Unlock()
	for _, q := range reqs {
		q.finish(0, r.err)
	}
	for _, q := range taken {
		q.finish(0, r.err)
	}
}

func (q *rawReq) finish(n int, err error) {
	q.n, q.err = n, err
	if q.l != nil {
		q.l.release()
	}
	if q.cb != nil {
		q.cb(n, err)
		return
	}
	close(q.done)
}

// rawRead reads up to len(dest) bytes at off of the file whose handle is
// handle, with one READ request; dest lies in l. The request is counted on
// c (begun by the caller, ended here). A short read is not an error; the
// end of the file is io.EOF.
func (h *Host) rawRead(ctx context.Context, deadline time.Time, c *channel, handle string, l *lease, dest []byte, off int64) (int, error) {
	start := time.Now()
	n, err := h.rawReadOn(ctx, deadline, c, handle, l, dest, off, start)
	endRead(c, start, n, err)
	return n, err
}

// endRead ends the count on c of a read of n bytes begun at start.
func endRead(c *channel, start time.Time, n int, err error) {
	if gaveUp(err) {
		c.end(start, nil) // not the session's failure
	} else {
		c.end(start, err)
	}
	c.stats.bytesRead.Add(uint64(n))
}

func (h *Host) rawReadOn(ctx context.Context, deadline time.Time, c *channel, handle string, l *lease, dest []byte, off int64, start time.Time) (int, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	q, err := sendRead(c, handle, l, dest, off)
	if err != nil {
		return 0, err
	}
	return h.rawWait(ctx, deadline, c, q, start)
}

// rawReadAll reads dest at off like rawRead, with one READ request per
// packet, all sent before the first answer is awaited. It returns the bytes
// up to the first short answer (n < len(dest) without error: the caller
// reads the rest), or io.EOF after them when the file ended there.
func (h *Host) rawReadAll(ctx context.Context, deadline time.Time, c *channel, handle string, l *lease, dest []byte, off int64) (int, error) {
	start := time.Now()
	n, err := h.rawReadAllOn(ctx, deadline, c, handle, l, dest, off, start)
	endRead(c, start, n, err)
	return n, err
}

func (h *Host) rawReadAllOn(ctx context.Context, deadline time.Time, c *channel, handle string, l *lease, dest []byte, off int64, start time.Time) (int, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	mp := c.maxPacket
	qs := make([]*rawReq, 0, (len(dest)+mp-1)/mp)
	var sendErr error
	for lo := 0; lo < len(dest); lo += mp {
		q, err := sendRead(c, handle, l, dest[lo:min(lo+mp, len(dest))], off+int64(lo))
		if err != nil {
			sendErr = err
			break
		}
		qs = append(qs, q)
	}
	// Every answer is awaited before returning, so that none lands in
	// dest after the caller reads into it again.
	n, whole := 0, true
	var err error
	for _, q := range qs {
		k, e := h.rawWait(ctx, deadline, c, q, start)
		if gaveUp(e) {
			return 0, e // the rest hold l until answered or ended
		}
		if !whole {
			continue
		}
		n += k
		if e != nil || k < len(q.dest) {
			whole, err = false, e
		}
	}
	if whole && sendErr != nil {
		return n, sendErr
	}
	return n, err
}

// sendRead queues a READ of len(dest) bytes at off into dest, which lies
// in l; the request holds l until it is finished.
func sendRead(c *channel, handle string, l *lease, dest []byte, off int64) (*rawReq, error) {
	q := &rawReq{dest: dest, l: l, done: make(chan struct{})}
	l.hold()
	id, err := c.raw.add(q)
	if err != nil {
		l.release()
		return nil, err
	}
	var buf [64]byte
	pkt := readPacket(buf[:0], id, handle, off, len(dest))
	if err := c.wire.inject(pkt, nil); err != nil {
		if c.raw.take(id) != nil {
			q.finish(0, err)
		}
		return nil, err
	}
	return q, nil
}

// rawWrite writes data at off of the file whose handle is handle with one
// WRITE request, counted on c (begun by the caller, ended here). data lies
// in l, which the request holds until it is answered or its session ends:
// the pipe to ssh may refer to data's pages instead of a copy of them.
func (h *Host) rawWrite(ctx context.Context, deadline time.Time, c *channel, handle string, l *lease, data []byte, off int64) error {
	start := time.Now()
	err := h.rawWriteOn(ctx, deadline, c, handle, l, data, off, start)
	endWrite(c, start, len(data), err)
	return err
}

func (h *Host) rawWriteOn(ctx context.Context, deadline time.Time, c *channel, handle string, l *lease, data []byte, off int64, start time.Time) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	q := &rawReq{l: l, write: true, done: make(chan struct{})}
	if err := sendWrite(c, q, handle, data, off); err != nil {
		return err
	}
	_, err := h.rawWait(ctx, deadline, c, q, start)
	return err
}

// rawWriteAsync sends one WRITE like rawWrite, without waiting: cb gets
// the outcome. It runs on the session's reader for an answer (so it must
// be quick and must neither send nor wait on requests), on whichever
// goroutine ends the session's requests when the session breaks, and on
// the caller's when the request could not be queued.
func (h *Host) rawWriteAsync(c *channel, handle string, l *lease, data []byte, off int64, cb func(error)) {
	start := time.Now()
	q := &rawReq{l: l, write: true, cb: func(_ int, err error) {
		endWrite(c, start, len(data), err)
		cb(err)
	}}
	sendWrite(c, q, handle, data, off) // a failure reaches cb
}

// sendWrite queues q's WRITE of data at off; q holds its lease until it
// is finished. An error means it was not sent, and q is finished with it
// (unless the session's end finished it first).
func sendWrite(c *channel, q *rawReq, handle string, data []byte, off int64) error {
	q.l.hold()
	id, err := c.raw.add(q)
	if err != nil {
		q.finish(0, err)
		return err
	}
	var buf [64]byte
	hdr := writeHeader(buf[:0], id, handle, off, len(data))
	if err := c.wire.inject(hdr, data); err != nil {
		if c.raw.take(id) != nil {
			q.finish(0, err)
		}
		return err
	}
	return nil
}

// endWrite ends the count on c of a WRITE of n bytes begun at start.
func endWrite(c *channel, start time.Time, n int, err error) {
	if gaveUp(err) {
		c.end(start, nil) // not the session's failure
	} else {
		c.end(start, err)
	}
	if err == nil {
		c.stats.bytesWrite.Add(uint64(n))
	}
}

// rawWait waits for q's answer, for ctx or for deadline. With the full
// Options.Timeout ahead (the usual case) it sets no timer of its own: the
// channel's watchdog (watchRaw) ends every request unanswered for Timeout,
// and the caller finds its deadline passed when it tries again.
func (h *Host) rawWait(ctx context.Context, deadline time.Time, c *channel, q *rawReq, start time.Time) (int, error) {
	if deadline.Sub(start) >= h.o.Timeout-h.o.Timeout/10 {
		if err := await(ctx, q.done); err != nil {
			// Given up: the request keeps its hold on its buffer until
			// answered or ended by the watchdog.
			return 0, err
		}
		return q.n, q.err
	}
	t := time.NewTimer(time.Until(deadline))
	defer t.Stop()
	var err error
	select {
	case <-q.done:
		return q.n, q.err
	case <-ctx.Done():
		err = ctx.Err()
	case <-t.C:
		err = context.DeadlineExceeded
	}
	return 0, err
}

// awaiter is a context that waits for a channel more cheaply than a
// select on its Done would (a filtered FUSE request, interrupt.Request).
type awaiter interface {
	Await(ch <-chan struct{}) error
}

// await waits until ch is closed (nil) or ctx ends (its error).
func await(ctx context.Context, ch <-chan struct{}) error {
	if a, ok := ctx.(awaiter); ok {
		return a.Await(ch)
	}
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// watchRaw kills c when a request sent past pkg/sftp has waited
// Options.Timeout for its answer: the link is presumed dead, as for
// pkg/sftp's requests (call.go's watchdog). Its requests then end with a
// lost connection, and their callers try again while their deadline allows.
func (h *Host) watchRaw(c *channel) {
	tick := time.NewTicker(min(max(h.o.Timeout/10, 10*time.Millisecond), time.Second))
	defer tick.Stop()
	for {
		select {
		case <-c.dead:
			return
		case now := <-tick.C:
			if sent, ok := c.raw.oldest(); ok && now.Sub(sent) >= h.o.Timeout {
				h.log.Warn("sftp request timed out; recycling channel", "host", h.o.Host, "slot", c.slot)
				c.kill(context.DeadlineExceeded)
				c.raw.fail(context.DeadlineExceeded)
				return
			}
		}
	}
}

// readPacket appends an SSH_FXP_READ packet to b.
func readPacket(b []byte, id uint32, handle string, off int64, n int) []byte {
	b = binary.BigEndian.AppendUint32(b, uint32(1+4+4+len(handle)+8+4))
	b = append(b, fxpRead)
	b = binary.BigEndian.AppendUint32(b, id)
	b = binary.BigEndian.AppendUint32(b, uint32(len(handle)))
	b = append(b, handle...)
	b = binary.BigEndian.AppendUint64(b, uint64(off))
	return binary.BigEndian.AppendUint32(b, uint32(n))
}

// writeHeader appends an SSH_FXP_WRITE packet up to its data to b.
func writeHeader(b []byte, id uint32, handle string, off int64, n int) []byte {
	b = binary.BigEndian.AppendUint32(b, uint32(1+4+4+len(handle)+8+4+n))
	b = append(b, fxpWrite)
	b = binary.BigEndian.AppendUint32(b, id)
	b = binary.BigEndian.AppendUint32(b, uint32(len(handle)))
	b = append(b, handle...)
	b = binary.BigEndian.AppendUint64(b, uint64(off))
	return binary.BigEndian.AppendUint32(b, uint32(n))
}

// errProtocol marks an answer that breaks the SFTP protocol.
var errProtocol = errors.New("malformed sftp answer")

// deliver reads the rest of an answer to request q (rest bytes after its
// id) from r: data straight into q.dest, or a status. On an error q is
// left unfinished.
func deliver(r io.Reader, q *rawReq, typ byte, rest int) error {
	var small [4]byte
	switch typ {
	case fxpData:
		if q.write || rest < 4 {
			return errProtocol
		}
		if _, err := io.ReadFull(r, small[:]); err != nil {
			return err
		}
		n := int(binary.BigEndian.Uint32(small[:]))
		if n > len(q.dest) || n != rest-4 {
			return fmt.Errorf("%w: %d bytes of data for a read of %d", errProtocol, n, len(q.dest))
		}
		if _, err := io.ReadFull(r, q.dest[:n]); err != nil {
			return err
		}
		q.finish(n, nil)
		return nil
	case fxpStatus:
		if rest < 4 {
			return errProtocol
		}
		if _, err := io.ReadFull(r, small[:]); err != nil {
			return err
		}
		if err := discard(r, rest-4); err != nil {
			return err
		}
		q.finish(0, statusError(binary.BigEndian.Uint32(small[:])))
		return nil
	}
	return fmt.Errorf("%w: packet type %d for a read", errProtocol, typ)
}

func discard(r io.Reader, n int) error {
	_, err := io.CopyN(io.Discard, r, int64(n))
	return err
}

// statusError is the error pkg/sftp would return for a status code.
func statusError(code uint32) error {
	switch code {
	case 0:
		return nil
	case fxEOF:
		return io.EOF
	case fxNoSuchFile:
		return os.ErrNotExist
	case fxPermission:
		return os.ErrPermission
	}
	return &sftp.StatusError{Code: code}
}

// handleField is the index of pkg/sftp's unexported File.handle, the
// handle string the server gave at open: a read sent past pkg/sftp names it.
var handleField = sync.OnceValue(func() int {
	f, ok := reflect.TypeOf(sftp.File{}).FieldByName("handle")
	if !ok || f.Type.Kind() != reflect.String {
		return -1
	}
	return f.Index[0]
})

// handleOf returns sf's handle; ok is false if pkg/sftp keeps it elsewhere
// than this code knows. sf must be open and not being closed.
func handleOf(sf *sftp.File) (string, bool) {
	i := handleField()
	if i < 0 || sf == nil {
		return "", false
	}
	h := reflect.ValueOf(sf).Elem().Field(i).String()
	return h, h != ""
}
