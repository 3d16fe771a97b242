package netproxy

import (
	"bytes"
	"crypto/rand"
	"io"
	"net"
	"testing"
	"time"
)

// echoServer echoes every connection back and returns its address.
func echoServer(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() { io.Copy(c, c); c.Close() }()
		}
	}()
	return ln.Addr().String()
}

// sinkServer reads everything from each connection and reports the byte
// count on the returned channel.
func sinkServer(t *testing.T) (string, <-chan int64) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	got := make(chan int64, 4)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() { n, _ := io.Copy(io.Discard, c); c.Close(); got <- n }()
		}
	}()
	return ln.Addr().String(), got
}

func start(t *testing.T, target string, o Options) (*Proxy, net.Conn) {
	t.Helper()
	p, err := Listen("127.0.0.1:0", target, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	c, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return p, c
}

func roundTrip(t *testing.T, c net.Conn, msg []byte) time.Duration {
	t.Helper()
	begin := time.Now()
	if _, err := c.Write(msg); err != nil {
		t.Fatal(err)
	}
	back := make([]byte, len(msg))
	if _, err := io.ReadFull(c, back); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(back, msg) {
		t.Fatalf("echo mismatch")
	}
	return time.Since(begin)
}

func TestLatency(t *testing.T) {
	const delay = 25 * time.Millisecond
	_, c := start(t, echoServer(t), Symmetric(delay, 0))
	for i := 0; i < 5; i++ {
		rtt := roundTrip(t, c, []byte("ping"))
		// The upper bound only catches gross added latency: a loaded
		// machine under -race delays delivery by itself.
		if rtt < 2*delay || rtt > 2*delay+time.Second {
			t.Fatalf("round trip %v, want about %v", rtt, 2*delay)
		}
	}
}

func TestAsymmetricLatency(t *testing.T) {
	o := Options{Up: Shaping{Delay: 30 * time.Millisecond}}
	_, c := start(t, echoServer(t), o)
	rtt := roundTrip(t, c, []byte("x"))
	if rtt < 30*time.Millisecond || rtt > 30*time.Millisecond+time.Second {
		t.Fatalf("round trip %v, want about 30ms", rtt)
	}
}

// TestLatencyKeepsThroughput checks that latency delays data without
// throttling it: a sleep per read would need seconds for this transfer.
func TestLatencyKeepsThroughput(t *testing.T) {
	const delay = 20 * time.Millisecond
	target, got := sinkServer(t)
	_, c := start(t, target, Symmetric(delay, 0))
	const total = 32 << 20
	buf := make([]byte, 16<<10)
	begin := time.Now()
	for sent := 0; sent < total; sent += len(buf) {
		if _, err := c.Write(buf); err != nil {
			t.Fatal(err)
		}
	}
	c.(*net.TCPConn).CloseWrite()
	n := <-got
	took := time.Since(begin)
	if n != total {
		t.Fatalf("forwarded %d bytes, want %d", n, total)
	}
	// 2048 writes at one delay each would take 40 s.
	if took > 20*time.Second {
		t.Fatalf("32 MiB took %v through a %v delay: throughput throttled", took, delay)
	}
	if took < delay {
		t.Fatalf("transfer took %v, less than the delay %v", took, delay)
	}
}

func TestOrderPreserved(t *testing.T) {
	_, c := start(t, echoServer(t), Symmetric(5*time.Millisecond, 0))
	want := make([]byte, 4<<20)
	rand.Read(want)
	errc := make(chan error, 1)
	go func() {
		for off := 0; off < len(want); off += 1000 {
			end := min(off+1000, len(want))
			if _, err := c.Write(want[off:end]); err != nil {
				errc <- err
				return
			}
		}
		errc <- nil
	}()
	got := make([]byte, len(want))
	if _, err := io.ReadFull(c, got); err != nil {
		t.Fatal(err)
	}
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatal("data reordered or corrupted")
	}
}

func TestRate(t *testing.T) {
	const rate = 4 << 20 // bytes/s
	target, got := sinkServer(t)
	_, c := start(t, target, Options{Up: Shaping{Rate: rate}})
	const total = 2 << 20
	buf := make([]byte, 32<<10)
	begin := time.Now()
	for sent := 0; sent < total; sent += len(buf) {
		if _, err := c.Write(buf); err != nil {
			t.Fatal(err)
		}
	}
	c.(*net.TCPConn).CloseWrite()
	if n := <-got; n != total {
		t.Fatalf("forwarded %d bytes, want %d", n, total)
	}
	took := time.Since(begin)
	want := time.Duration(float64(total) / rate * float64(time.Second))
	// Slower than the rate is what a loaded machine does by itself; only
	// a gross throttle fails.
	if took < want*85/100 || took > want*4 {
		t.Fatalf("2 MiB at 4 MiB/s took %v, want about %v", took, want)
	}
}

func TestBlackhole(t *testing.T) {
	p, c := start(t, echoServer(t), Options{})
	roundTrip(t, c, []byte("before"))

	p.Blackhole(true)
	if _, err := c.Write([]byte("held")); err != nil {
		t.Fatal(err)
	}
	c.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
	one := make([]byte, 1)
	if n, err := c.Read(one); n != 0 || err == nil {
		t.Fatalf("read %d bytes through a black hole (err %v)", n, err)
	}
	// New connections are accepted but carry nothing either.
	c2, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	c2.Write([]byte("new"))

	p.Blackhole(false)
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	back := make([]byte, 4)
	if _, err := io.ReadFull(c, back); err != nil || string(back) != "held" {
		t.Fatalf("after the black hole got %q, %v", back, err)
	}
	c2.SetReadDeadline(time.Now().Add(5 * time.Second))
	back = make([]byte, 3)
	if _, err := io.ReadFull(c2, back); err != nil || string(back) != "new" {
		t.Fatalf("new connection got %q, %v", back, err)
	}
	c.SetReadDeadline(time.Time{})
	roundTrip(t, c, []byte("after"))
}

func TestCloseEndsConnections(t *testing.T) {
	p, c := start(t, echoServer(t), Options{})
	roundTrip(t, c, []byte("x"))
	p.Blackhole(true)
	done := make(chan error, 1)
	go func() { _, err := c.Read(make([]byte, 1)); done <- err }()
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err == nil {
			t.Fatal("read succeeded after Close")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("connection still open after Close")
	}
	if _, err := net.Dial("tcp", p.Addr()); err == nil {
		t.Fatal("proxy still accepting after Close")
	}
}

func TestResetCutsConnectionsKeepsListening(t *testing.T) {
	p, c := start(t, echoServer(t), Options{})
	roundTrip(t, c, []byte("x"))
	if n := p.Reset(); n != 1 {
		t.Fatalf("Reset cut %d connections, want 1", n)
	}
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := c.Read(make([]byte, 1)); err == nil {
		t.Fatal("read succeeded on a connection Reset cut")
	}
	c2, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	roundTrip(t, c2, []byte("after"))
}
