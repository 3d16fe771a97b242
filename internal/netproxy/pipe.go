package netproxy

import (
	"net"
	"sync"
	"time"
)

const readSize = 64 << 10

// chunk is one read from the sender, held until due.
type chunk struct {
	data []byte
	due  time.Time
}

// pipe forwards one direction of a connection. A reader goroutine stamps each
// chunk with its arrival time plus the delay and queues it; the writer
// forwards chunks in order once due, so latency never limits throughput.
type pipe struct {
	p        *Proxy
	src, dst net.Conn
	shaping  func(Options) Shaping
	max      int

	mu     sync.Mutex // guards q, queued, eof, dead
	cond   *sync.Cond // signalled on any change of the fields above
	q      []chunk
	queued int
	eof    bool // the sender closed or failed; nothing more will be queued
	dead   bool // the writer gave up; the reader must stop

	// token bucket, used by the writer only
	tokens float64
	last   time.Time
}

func newPipe(p *Proxy, src, dst net.Conn, max int, sh func(Options) Shaping) *pipe {
	pp := &pipe{p: p, src: src, dst: dst, shaping: sh, max: max}
	pp.cond = sync.NewCond(&pp.mu)
	return pp
}

func (pp *pipe) run(pr *pair) {
	go pp.read()
	if !pp.write(pr) {
		pr.close()
	}
	pp.mu.Lock()
	pp.dead = true
	pp.cond.Broadcast()
	pp.mu.Unlock()
}

func (pp *pipe) read() {
	buf := make([]byte, readSize)
	for {
		n, err := pp.src.Read(buf)
		if n > 0 {
			due := time.Now().Add(pp.shaping(pp.p.options()).Delay)
			var data []byte
			if n < readSize/2 {
				data = append([]byte(nil), buf[:n]...)
			} else {
				data = buf[:n]
				buf = make([]byte, readSize)
			}
			pp.mu.Lock()
			for pp.queued >= pp.max && !pp.dead {
				pp.cond.Wait()
			}
			if pp.dead {
				pp.mu.Unlock()
				return
			}
			pp.q = append(pp.q, chunk{data: data, due: due})
			pp.queued += n
			pp.cond.Broadcast()
			pp.mu.Unlock()
		}
		if err != nil {
			pp.mu.Lock()
			pp.eof = true
			pp.cond.Broadcast()
			pp.mu.Unlock()
			return
		}
	}
}

// next blocks for the next chunk; ok is false once the sender is done and
// everything has been forwarded.
func (pp *pipe) next() (c chunk, ok bool) {
	pp.mu.Lock()
	defer pp.mu.Unlock()
	for len(pp.q) == 0 && !pp.eof {
		pp.cond.Wait()
	}
	if len(pp.q) == 0 {
		return chunk{}, false
	}
	c = pp.q[0]
	pp.q[0] = chunk{}
	pp.q = pp.q[1:]
	pp.queued -= len(c.data)
	pp.cond.Broadcast()
	return c, true
}

// write forwards chunks until the sender finishes (then half-closes the
// receiver and returns true) or a write fails (returns false).
func (pp *pipe) write(pr *pair) bool {
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		c, ok := pp.next()
		if !ok {
			if tc, isTCP := pp.dst.(*net.TCPConn); isTCP {
				tc.CloseWrite()
				return true
			}
			return false
		}
		if !sleepUntil(timer, c.due, pr.done) {
			return false
		}
		for g := pp.p.gate(); g != nil; g = pp.p.gate() {
			select {
			case <-g:
			case <-pr.done:
				return false
			}
		}
		if !pp.send(c.data, timer, pr.done) {
			return false
		}
	}
}

// send writes data, pacing it to the direction's rate cap.
func (pp *pipe) send(data []byte, timer *time.Timer, done <-chan struct{}) bool {
	rate := float64(pp.shaping(pp.p.options()).Rate)
	if rate <= 0 {
		_, err := pp.dst.Write(data)
		return err == nil
	}
	burst := rate / 100 // 10 ms worth of bytes
	if burst < 4096 {
		burst = 4096
	}
	for len(data) > 0 {
		n := len(data)
		if float64(n) > burst {
			n = int(burst)
		}
		now := time.Now()
		if pp.last.IsZero() {
			pp.tokens = burst
		} else {
			pp.tokens += now.Sub(pp.last).Seconds() * rate
		}
		if pp.tokens > burst {
			pp.tokens = burst
		}
		pp.last = now
		if short := float64(n) - pp.tokens; short > 0 {
			wait := time.Duration(short / rate * float64(time.Second))
			if !sleepUntil(timer, now.Add(wait), done) {
				return false
			}
			pp.tokens += time.Since(pp.last).Seconds() * rate
			pp.last = time.Now()
		}
		pp.tokens -= float64(n)
		if _, err := pp.dst.Write(data[:n]); err != nil {
			return false
		}
		data = data[n:]
	}
	return true
}

// sleepUntil waits for t; false when done closes first.
func sleepUntil(timer *time.Timer, t time.Time, done <-chan struct{}) bool {
	d := time.Until(t)
	if d <= 0 {
		return true
	}
	timer.Reset(d)
	select {
	case <-timer.C:
		return true
	case <-done:
		timer.Stop()
		return false
	}
}
