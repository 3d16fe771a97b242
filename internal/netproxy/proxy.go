// Package netproxy is a user-space TCP proxy that adds latency, caps bandwidth
// and can black-hole a link, for tests and benchmarks on loopback.
package netproxy

import (
	"errors"
	"net"
	"sync"
	"time"
)

// Shaping describes what happens to the bytes flowing in one direction.
type Shaping struct {
	// Delay is added one-way latency: every chunk is forwarded no earlier
	// than its arrival time plus Delay. Order and throughput are preserved.
	Delay time.Duration
	// Rate caps the direction at this many bytes per second; 0 = no cap.
	Rate int64
}

// Options configure a Proxy. Up is client→target, Down is target→client.
type Options struct {
	Up, Down Shaping
	// MaxQueued bounds the bytes held per direction (delayed or
	// black-holed) before the proxy stops reading from the sender;
	// 0 = 64 MiB.
	MaxQueued int
}

// Symmetric returns Options adding delay in each direction (RTT = 2×delay)
// and capping each direction at rate bytes/s (0 = no cap).
func Symmetric(delay time.Duration, rate int64) Options {
	s := Shaping{Delay: delay, Rate: rate}
	return Options{Up: s, Down: s}
}

// Proxy accepts TCP connections on a local address and forwards each one to
// a target address.
type Proxy struct {
	ln     net.Listener
	target string

	mu        sync.Mutex // guards the fields below
	opts      Options
	blackhole bool
	resume    chan struct{} // closed when the blackhole ends
	conns     map[*pair]struct{}
	closed    bool

	wg sync.WaitGroup
}

// Listen starts a proxy listening on listen (e.g. "127.0.0.1:0") that
// forwards to target.
func Listen(listen, target string, o Options) (*Proxy, error) {
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		return nil, err
	}
	p := &Proxy{
		ln:     ln,
		target: target,
		opts:   o,
		resume: make(chan struct{}),
		conns:  make(map[*pair]struct{}),
	}
	close(p.resume)
	p.wg.Add(1)
	go p.acceptLoop()
	return p, nil
}

// Addr is the address clients connect to.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// Port is the TCP port clients connect to.
func (p *Proxy) Port() int { return p.ln.Addr().(*net.TCPAddr).Port }

// SetOptions changes shaping for data that arrives from now on.
func (p *Proxy) SetOptions(o Options) {
	p.mu.Lock()
	p.opts = o
	p.mu.Unlock()
}

func (p *Proxy) options() Options {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.opts
}

// Blackhole(true) stops forwarding in both directions: data is held and
// connections stay open, like a lost link. Blackhole(false) resumes and
// delivers everything held, in order.
func (p *Proxy) Blackhole(on bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if on == p.blackhole {
		return
	}
	p.blackhole = on
	if on {
		p.resume = make(chan struct{})
	} else {
		close(p.resume)
	}
}

// gate returns nil when forwarding is allowed, or a channel closed when it
// will be.
func (p *Proxy) gate() <-chan struct{} {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.blackhole {
		return p.resume
	}
	return nil
}

// Reset cuts every connection open now, as a link lost and restored at
// once would: both ends see the connection end. The proxy keeps
// listening, so new connections go through. It returns how many it cut.
func (p *Proxy) Reset() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	for c := range p.conns {
		c.close()
	}
	return len(p.conns)
}

// Close stops listening and closes every connection.
func (p *Proxy) Close() error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil
	}
	p.closed = true
	err := p.ln.Close()
	for c := range p.conns {
		c.close()
	}
	if p.blackhole {
		p.blackhole = false
		close(p.resume)
	}
	p.mu.Unlock()
	p.wg.Wait()
	return err
}

func (p *Proxy) acceptLoop() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			time.Sleep(10 * time.Millisecond)
			continue
		}
		p.wg.Add(1)
		go p.serve(c)
	}
}

func (p *Proxy) serve(client net.Conn) {
	defer p.wg.Done()
	server, err := net.Dial("tcp", p.target)
	if err != nil {
		client.Close()
		return
	}
	pr := &pair{a: client, b: server, done: make(chan struct{})}
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		pr.close()
		return
	}
	p.conns[pr] = struct{}{}
	p.mu.Unlock()

	max := p.options().MaxQueued
	if max <= 0 {
		max = 64 << 20
	}
	up := newPipe(p, client, server, max, func(o Options) Shaping { return o.Up })
	down := newPipe(p, server, client, max, func(o Options) Shaping { return o.Down })
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); up.run(pr) }()
	go func() { defer wg.Done(); down.run(pr) }()
	wg.Wait()
	pr.close()
	p.mu.Lock()
	delete(p.conns, pr)
	p.mu.Unlock()
}

// pair is one proxied connection: a is the client side, b the target side.
type pair struct {
	a, b net.Conn
	once sync.Once
	done chan struct{} // closed when the pair is torn down
}

func (c *pair) close() {
	c.once.Do(func() {
		close(c.done)
		c.a.Close()
		c.b.Close()
	})
}
