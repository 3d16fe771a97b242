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
// system call per batch of replies and exactly one per request.

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
		if err := deliver(w.br, w.raw.take(id), typ, length-5); err != nil {
			w.raw.fail(err)
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

// wireWriter sends each SFTP packet with one write, counts the bytes and
// the requests by type. pkg/sftp writes one packet at a time, under its
// own lock, so a packet's pieces arrive in consecutive calls: the pieces of
// an incomplete packet are held back (never more than a header) until the
// call that completes it.
type wireWriter struct {
	mu     sync.Mutex // serialises pkg/sftp's writes and injected packets
	raw    *rawReads
	w      io.WriteCloser
	fd     syscall.RawConn // w's descriptor when it has one: writev
	h      *Host
	held   []byte   // pieces of the current packet not yet written
	head   [64]byte // first bytes of the current packet
	nhead  int
	remain int // bytes of the current packet (after its length) still to come
	iov    [2][]byte
}

// maxHeld bounds what is held back: a packet header. Larger pieces are
// written at once.
const maxHeld = 1024

func newWireWriter(w io.WriteCloser, h *Host, raw *rawReads) *wireWriter {
	ww := &wireWriter{w: w, h: h, raw: raw}
	if sc, ok := w.(syscall.Conn); ok {
		if raw, err := sc.SyscallConn(); err == nil {
			ww.fd = raw
		}
	}
	return ww
}

func (c *wireWriter) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.parse(p)
	if c.remain > 0 && len(c.held)+len(p) <= maxHeld {
		c.held = append(c.held, p...)
		return len(p), nil
	}
	err := c.send(p)
	if err != nil {
		return 0, err
	}
	return len(p), nil
}

// inject writes one whole packet of our own, hdr then data. Pieces of a
// pkg/sftp packet held back are not on the wire yet, so the packet never
// splits one.
func (c *wireWriter) inject(hdr, data []byte) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	var err error
	switch {
	case len(data) == 0:
		_, err = c.w.Write(hdr)
	case c.fd != nil:
		err = c.writev(hdr, data)
	default:
		if _, err = c.w.Write(hdr); err == nil {
			_, err = c.w.Write(data)
		}
	}
	if err != nil {
		return err
	}
	c.h.wireOut.Add(uint64(len(hdr) + len(data)))
	c.h.reqs.count(hdr[4:])
	return nil
}

// send writes the held pieces followed by p.
func (c *wireWriter) send(p []byte) error {
	held := c.held
	c.held = c.held[:0]
	total := len(held) + len(p)
	var err error
	switch {
	case len(held) == 0:
		_, err = c.w.Write(p)
	case c.fd != nil:
		err = c.writev(held, p)
	case len(p) <= maxHeld:
		_, err = c.w.Write(append(held, p...))
	default:
		if _, err = c.w.Write(held); err == nil {
			_, err = c.w.Write(p)
		}
	}
	if err == nil {
		c.h.wireOut.Add(uint64(total))
	}
	return err
}

// writev writes a and b with as few system calls as the pipe allows.
func (c *wireWriter) writev(a, b []byte) error {
	c.iov[0], c.iov[1] = a, b
	iov := c.iov[:]
	var werr error
	err := c.fd.Write(func(fd uintptr) bool {
		for len(iov) > 0 {
			n, err := unix.Writev(int(fd), iov)
			if err == unix.EAGAIN {
				return false // wait until the pipe has room
			}
			if err == unix.EINTR {
				continue
			}
			if err != nil {
				werr = err
				return true
			}
			for n > 0 && len(iov) > 0 {
				k := min(n, len(iov[0]))
				iov[0] = iov[0][k:]
				n -= k
				if len(iov[0]) == 0 {
					iov = iov[1:]
				}
			}
		}
		return true
	})
	c.iov[0], c.iov[1] = nil, nil
	if err != nil {
		return err
	}
	return werr
}

func (c *wireWriter) Close() error { return c.w.Close() }

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
