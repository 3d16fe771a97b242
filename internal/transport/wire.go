package transport

import (
	"bufio"
	"encoding/binary"
	"io"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
)

// pkg/sftp reads each reply with two reads (its length, then its body) and
// sends a packet that carries data (WRITE) with two writes (header, then
// data). On a pipe to ssh each is a system call, and each write becomes an
// SSH packet of its own. wireReader and wireWriter turn that into about one
// system call per batch of replies and at most one per request.

// wireBuffer is the receive buffer of one session: at queue depth 32 it
// holds a batch of small replies, and large replies bypass it (bufio reads
// directly into a destination at least as large as its buffer).
const wireBuffer = 64 << 10

// wireReader counts the bytes received on a session and buffers them. It
// takes the answers to the reads sent past pkg/sftp (rawread.go) out of the
// stream and passes every other packet on to pkg/sftp, which is its only
// caller.
type wireReader struct {
	br   *bufio.Reader
	raw  *rawReads
	pass int // bytes of the current packet still to pass on
}

func newWireReader(r io.Reader, h *Host, raw *rawReads) *wireReader {
	return &wireReader{br: bufio.NewReaderSize(countingReader{r, h}, wireBuffer), raw: raw}
}

func (w *wireReader) Read(p []byte) (int, error) {
	for w.pass == 0 {
		// Every packet from the server has a length, a type and an id (or
		// a version) before anything else.
		hdr, err := w.br.Peek(9)
		if err != nil {
			w.raw.fail(err)
			return 0, err
		}
		length := int(binary.BigEndian.Uint32(hdr))
		typ, id := hdr[4], binary.BigEndian.Uint32(hdr[5:])
		if length < 5 || !w.raw.has(id) {
			w.pass = 4 + length
			break
		}
		w.br.Discard(9)
		q := w.raw.take(id)
		if err := deliver(w.br, q, typ, length-5); err != nil {
			// q is no longer among the requests in flight: it is ended
			// here, or its caller would wait for it forever.
			w.raw.fail(err, q)
			return 0, err
		}
	}
	n, err := w.br.Read(p[:min(len(p), w.pass)])
	w.pass -= n
	if err != nil {
		w.raw.fail(err)
	}
	return n, err
}

type countingReader struct {
	r io.Reader
	h *Host
}

func (c countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.h.wireIn.Add(uint64(n))
	return n, err
}

// wireWriter sends each SFTP packet whole and counts the bytes and the
// requests by type. pkg/sftp writes one packet at a time, under its own
// lock, so a packet's pieces arrive in consecutive calls: the pieces of an
// incomplete packet are held back (never more than a header) until the
// call that completes it.
//
// Writers combine: packets go into a queue, and the goroutine that finds
// nobody writing drains it, with one writev for every run of packets
// (vmsplice for large data), while others keep queueing and return at
// once. Under load ssh then reads a batch of requests per wakeup and sends
// them in one SSH packet instead of one each, which saves CPU in ssh, sshd
// and sftp-server as well as here, and no goroutine waits for its turn.
// An error writing breaks the session: the requests waiting for answers
// learn it from rawReads, pkg/sftp from its next Write and its reader.
type wireWriter struct {
	mu      sync.Mutex
	writing bool      // a goroutine is draining the queue (mu not held meanwhile)
	queue   []segment // what goes out next, in order
	copies  []byte    // backing store of the queue's copied pieces
	spareQ  []segment // the buffers of the batch being written, reused
	spareC  []byte
	err     error // the first write error: the session is broken

	raw    *rawReads
	w      io.WriteCloser
	fd     syscall.RawConn // w's descriptor when it has one: writev
	pipe   bool            // fd is a pipe: large data is spliced into it
	relay  *relay          // fd is a socket: large data is spliced through this
	h      *Host
	held   []byte   // pieces of the current packet not yet queued
	head   [64]byte // first bytes of the current packet
	nhead  int
	remain int // bytes of the current packet (after its length) still to come
	// opens are the exclusive creates whose OPEN gets permissions added
	// (createopen.go).
	opens []*openHook
}

// segment is a piece of the outgoing stream: a copy in the queue's store,
// or a caller's data referred to in place (spliced when large).
type segment struct {
	b      []byte
	splice bool
}

// maxHeld bounds what is held back: a packet header. Larger pieces are
// queued at once.
const maxHeld = 1024

// maxIovs bounds one writev (IOV_MAX is 1024).
const maxIovs = 512

func newWireWriter(w io.WriteCloser, h *Host, raw *rawReads) *wireWriter {
	ww := &wireWriter{w: w, h: h, raw: raw}
	if sc, ok := w.(syscall.Conn); ok {
		if raw, err := sc.SyscallConn(); err == nil {
			ww.fd = raw
			switch fileType(raw) {
			case unix.S_IFIFO:
				ww.pipe = true
			case unix.S_IFSOCK:
				ww.relay = newRelay()
			}
		}
	}
	return ww
}

// spliced reports whether data of n bytes is spliced rather than copied.
func (c *wireWriter) spliced(n int) bool {
	return (c.pipe || c.relay != nil) && n >= minSplice
}

// Write queues a piece of pkg/sftp's current packet (a copy: pkg/sftp
// reuses its buffer) once the packet is complete or the piece is large.
func (c *wireWriter) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err != nil {
		return 0, c.err
	}
	n := len(p)
	var hook *openHook
	if len(c.opens) > 0 && c.nhead == 0 {
		p, hook = c.hooked(p)
	}
	c.parse(p)
	if c.remain > 0 && len(c.held)+len(p) <= maxHeld {
		c.held = append(c.held, p...)
		return n, nil
	}
	c.h.wireOut.Add(uint64(len(c.held) + len(p)))
	c.copy(c.held)
	c.copy(p)
	c.held = c.held[:0]
	if hook != nil {
		close(hook.sent) // what is queued from now on follows it
	}
	if err := c.drain(); err != nil {
		return 0, err
	}
	return n, nil
}

// inject sends one whole packet of our own, hdr then data. Pieces of a
// pkg/sftp packet held back are not queued yet, so the packet never splits
// one. data must stay unchanged until the request is answered or the
// session ends: it is written from where it lies, after inject may have
// returned, and large data is spliced into the pipe to ssh, which then
// refers to its pages.
func (c *wireWriter) inject(hdr, data []byte) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err != nil {
		return c.err
	}
	c.h.wireOut.Add(uint64(len(hdr) + len(data)))
	c.h.reqs.count(hdr[4:])
	c.copy(hdr)
	if len(data) > 0 {
		c.queue = append(c.queue, segment{b: data, splice: c.spliced(len(data))})
	}
	return c.drain()
}

// copy queues a copy of p.
func (c *wireWriter) copy(p []byte) {
	if len(p) == 0 {
		return
	}
	n := len(c.copies)
	c.copies = append(c.copies, p...)
	c.queue = append(c.queue, segment{b: c.copies[n:len(c.copies):len(c.copies)]})
}

// drain writes the queue unless another goroutine is doing so (it then
// writes what was just queued too). mu is held on entry and on return, not
// during the system calls.
func (c *wireWriter) drain() error {
	if c.writing {
		return nil
	}
	c.writing = true
	var err error
	for len(c.queue) > 0 && err == nil {
		batch, copies := c.queue, c.copies
		c.queue, c.copies = c.spareQ[:0], c.spareC[:0]
		c.mu.Unlock()
		err = c.writeSegments(batch)
		c.mu.Lock()
		clear(batch) // no references to callers' data kept
		c.spareQ, c.spareC = batch[:0], copies[:0]
	}
	c.writing = false
	if err != nil {
		c.err = err
		clear(c.queue)
		c.queue, c.copies = nil, nil
		c.raw.fail(err)
	}
	return err
}

// writeSegments writes a batch in order: runs of copied or small pieces
// with writev, large data with vmsplice.
func (c *wireWriter) writeSegments(batch []segment) error {
	if c.fd == nil {
		for _, s := range batch {
			if _, err := c.w.Write(s.b); err != nil {
				return err
			}
		}
		return nil
	}
	iov := make([][]byte, 0, min(len(batch), maxIovs))
	for _, s := range batch {
		if s.splice || len(iov) == maxIovs {
			if err := c.writev(iov); err != nil {
				return err
			}
			iov = iov[:0]
		}
		if s.splice {
			if err := c.splice(s.b); err != nil {
				return err
			}
			continue
		}
		iov = append(iov, s.b)
	}
	return c.writev(iov)
}

// writev writes iov with writev calls on w's descriptor.
func (c *wireWriter) writev(iov [][]byte) error {
	if len(iov) == 0 {
		return nil
	}
	return c.onFD(func(fd int) (int, error) { return unix.Writev(fd, iov) }, func(n int) bool {
		for n > 0 && len(iov) > 0 {
			k := min(n, len(iov[0]))
			iov[0] = iov[0][k:]
			n -= k
			if len(iov[0]) == 0 {
				iov = iov[1:]
			}
		}
		return len(iov) == 0
	})
}

// onFD runs op on w's descriptor until done, given the bytes op wrote,
// reports everything written; it waits for room when the pipe is full.
func (c *wireWriter) onFD(op func(fd int) (int, error), done func(n int) bool) error {
	var werr error
	err := c.fd.Write(func(fd uintptr) bool {
		for {
			n, err := op(int(fd))
			switch {
			case err == unix.EAGAIN:
				return false // wait until the pipe has room
			case err == unix.EINTR:
				continue
			case err != nil:
				werr = err
				return true
			}
			if done(n) {
				return true
			}
		}
	})
	if err != nil {
		return err
	}
	return werr
}

// minSplice is the smallest data spliced rather than copied into the
// pipe: below it, pinning pages costs more than copying them.
const minSplice = 32 << 10

// splice hands b's pages to the pipe (vmsplice(2) without SPLICE_F_GIFT):
// ssh copies the data out of them when it reads, one copy instead of two,
// and the pipe needs no pages of its own. To a socket they go through the
// relay pipe, from which splice(2) moves them on without a copy.
func (c *wireWriter) splice(b []byte) error {
	if c.relay != nil {
		return c.relay.send(c, b)
	}
	return c.onFD(func(fd int) (int, error) {
		return vmsplice(fd, b, 0)
	}, func(n int) bool {
		b = b[n:]
		return len(b) == 0
	})
}

func vmsplice(fd int, b []byte, flags int) (int, error) {
	iov := []unix.Iovec{{Base: &b[0]}}
	iov[0].SetLen(len(b))
	return unix.Vmsplice(fd, iov, flags)
}

// fileType returns the descriptor's file type (S_IFIFO, S_IFSOCK, …), 0 if
// unknown.
func fileType(rc syscall.RawConn) uint32 {
	var st unix.Stat_t
	var serr error
	if err := rc.Control(func(fd uintptr) { serr = unix.Fstat(int(fd), &st) }); err != nil || serr != nil {
		return 0
	}
	return st.Mode & unix.S_IFMT
}

func (c *wireWriter) Close() error {
	if c.relay != nil {
		c.relay.close()
	}
	return c.w.Close()
}

// parse follows the packet framing to count requests by type and to know
// whether the current packet is complete.
func (c *wireWriter) parse(p []byte) {
	for len(p) > 0 {
		if c.nhead < 4 {
			k := copy(c.head[c.nhead:4], p)
			c.nhead += k
			p = p[k:]
			if c.nhead == 4 {
				c.remain = int(uint32(c.head[0])<<24 | uint32(c.head[1])<<16 | uint32(c.head[2])<<8 | uint32(c.head[3]))
			}
			continue
		}
		k := min(len(p), c.remain)
		if c.nhead < len(c.head) {
			c.nhead += copy(c.head[c.nhead:], p[:k])
		}
		c.remain -= k
		p = p[k:]
		if c.remain == 0 {
			if c.nhead >= 9 {
				c.raw.lastID.Store(binary.BigEndian.Uint32(c.head[5:9]))
			}
			c.h.reqs.count(c.head[4:c.nhead])
			c.nhead = 0
		}
	}
}
