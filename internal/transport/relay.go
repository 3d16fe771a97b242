package transport

import (
	"io"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// relay is a pipe of our own between large write data and the socket to
// ssh. A socket wakes a blocked writer only once half its buffer is free,
// where a full pipe to ssh wakes it for every read ssh makes (32 KiB), so
// a stream of writes through a pipe cost a context switch per 32 KiB.
// vmsplice(2) puts the data's pages into the relay and splice(2) moves
// them into the socket, both without a copy (Linux 6.5 and later; older
// kernels copy into the socket).
type relay struct {
	r, w   *os.File
	rr, wr syscall.RawConn // r's and w's descriptors, held while used
	size   int             // what the relay holds
}

// newRelay returns a relay, or nil if the pipe cannot be made: large data
// is then copied into the socket.
func newRelay() *relay {
	r, w, err := os.Pipe()
	if err != nil {
		return nil
	}
	growPipe(w)
	rr, err1 := r.SyscallConn()
	wr, err2 := w.SyscallConn()
	size := 0
	if err1 == nil && err2 == nil {
		wr.Control(func(fd uintptr) { size, _ = unix.FcntlInt(fd, unix.F_GETPIPE_SZ, 0) })
	}
	if size <= 0 {
		r.Close()
		w.Close()
		return nil
	}
	return &relay{r: r, w: w, rr: rr, wr: wr, size: size}
}

// send writes b into c's socket through the relay, which is empty before
// and after.
func (p *relay) send(c *wireWriter, b []byte) error {
	for len(b) > 0 {
		var n int
		var err error
		if cerr := p.wr.Control(func(fd uintptr) {
			for {
				n, err = vmsplice(int(fd), b[:min(len(b), p.size)], unix.SPLICE_F_NONBLOCK)
				if err != unix.EINTR {
					return
				}
			}
		}); cerr != nil {
			return cerr
		}
		if err != nil {
			return err // an empty pipe of ours refused data: give up the session
		}
		left := n
		err = c.onFD(func(sock int) (int, error) {
			var k int64
			var serr error
			if cerr := p.rr.Control(func(fd uintptr) {
				k, serr = unix.Splice(int(fd), nil, sock, nil, left, unix.SPLICE_F_MOVE|unix.SPLICE_F_NONBLOCK)
			}); cerr != nil {
				return 0, cerr
			}
			if k == 0 && serr == nil {
				serr = io.ErrUnexpectedEOF // the relay lost data
			}
			return int(k), serr
		}, func(k int) bool {
			left -= k
			return left == 0
		})
		if err != nil {
			return err
		}
		b = b[n:]
	}
	return nil
}

func (p *relay) close() {
	p.r.Close()
	p.w.Close()
}
