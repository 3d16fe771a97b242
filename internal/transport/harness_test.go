package transport

import (
	"context"
	"io"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/pkg/sftp"
)

// stream is one in-process SFTP session whose server→client direction can
// be frozen (the server stops answering), held (its answers are delayed
// until released) or cut (the link drops).
type stream struct {
	mu     sync.Mutex // guards frozen, held
	frozen chan struct{}
	held   chan struct{}
	cut    chan struct{}
	once   sync.Once
	cr     *io.PipeReader // client reads
	cw     *io.PipeWriter // client writes
}

func (s *stream) freeze() {
	s.mu.Lock()
	if s.frozen == nil {
		s.frozen = make(chan struct{})
	}
	s.mu.Unlock()
}

func (s *stream) gate() chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.frozen
}

// hold delays the server's answers (the server still executes requests)
// until release.
func (s *stream) hold() {
	s.mu.Lock()
	if s.held == nil {
		s.held = make(chan struct{})
	}
	s.mu.Unlock()
}

func (s *stream) release() {
	s.mu.Lock()
	if s.held != nil {
		close(s.held)
		s.held = nil
	}
	s.mu.Unlock()
}

func (s *stream) holding() chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.held
}

// drop cuts the link in both directions.
func (s *stream) drop() {
	s.once.Do(func() { close(s.cut) })
	s.cr.CloseWithError(io.ErrUnexpectedEOF)
	s.cw.CloseWithError(io.ErrUnexpectedEOF)
}

// testServer is a Dialer factory for an in-process pkg/sftp server on dir.
type testServer struct {
	t       *testing.T
	mu      sync.Mutex // guards streams, refuse, refused
	streams []*stream
	refuse  bool
	refused int // dials refused
	wg      sync.WaitGroup
}

func newTestServer(t *testing.T) *testServer {
	ts := &testServer{t: t}
	t.Cleanup(ts.wg.Wait)
	return ts
}

func (ts *testServer) dial(ctx context.Context) (io.ReadCloser, io.WriteCloser, error) {
	ts.mu.Lock()
	refuse := ts.refuse
	if refuse {
		ts.refused++
	}
	ts.mu.Unlock()
	if refuse {
		return nil, nil, io.ErrClosedPipe
	}
	cr, relayW := io.Pipe() // server output, relayed, read by the client
	sr, cw := io.Pipe()     // client output read by the server
	srvR, srvW := io.Pipe() // server writes here; the relay forwards it
	s := &stream{cut: make(chan struct{}), cr: cr, cw: cw}
	srv, err := sftp.NewServer(struct {
		io.Reader
		io.WriteCloser
	}{sr, srvW})
	if err != nil {
		return nil, nil, err
	}
	ts.wg.Add(2)
	go func() {
		defer ts.wg.Done()
		srv.Serve()
		srv.Close()
		sr.Close()
	}()
	go func() {
		defer ts.wg.Done()
		s.relay(srvR, relayW)
	}()
	ts.mu.Lock()
	ts.streams = append(ts.streams, s)
	ts.mu.Unlock()
	return hookReader{cr, s}, hookWriter{cw, s}, nil
}

// hookReader and hookWriter cut the whole stream when the client closes
// its end, as a dying ssh process would.
type hookReader struct {
	*io.PipeReader
	s *stream
}

func (h hookReader) Close() error { h.s.drop(); return nil }

type hookWriter struct {
	*io.PipeWriter
	s *stream
}

func (h hookWriter) Close() error { h.s.drop(); return nil }

func (s *stream) relay(from *io.PipeReader, to *io.PipeWriter) {
	defer from.Close()
	defer to.Close()
	buf := make([]byte, 64*1024)
	for {
		n, err := from.Read(buf)
		if g := s.gate(); g != nil {
			select {
			case <-g:
			case <-s.cut:
			}
			return
		}
		if h := s.holding(); h != nil {
			select {
			case <-h:
			case <-s.cut:
				return
			}
		}
		if n > 0 {
			if _, werr := to.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

func (ts *testServer) stream(i int) *stream {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	return ts.streams[i]
}

func (ts *testServer) count() int {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	return len(ts.streams)
}

// refusedDials returns how many dials were refused.
func (ts *testServer) refusedDials() int {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	return ts.refused
}

func (ts *testServer) setRefuse(v bool) {
	ts.mu.Lock()
	ts.refuse = v
	ts.mu.Unlock()
}

// dialTest dials an in-process server rooted at a fresh directory.
func dialTest(t *testing.T, conns int, mod func(*Options)) (*Host, *testServer, string) {
	t.Helper()
	dir := t.TempDir()
	ts := newTestServer(t)
	o := Options{Host: "test", Dir: dir, Conns: conns, Timeout: 2 * time.Second,
		Reconnect: true, Dialer: ts.dial}
	if mod != nil {
		mod(&o)
	}
	h, err := Dial(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	waitUp(t, h, conns)
	return h, ts, dir
}

// openRead opens name read-only on h once its attributes at open are
// learned (reads split from then on); it is closed at the end of the test.
func openRead(t *testing.T, h *Host, name string) *file {
	t.Helper()
	f, err := h.Remote().Open(bg, name, os.O_RDONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close(bg) })
	<-f.(*file).learned
	return f.(*file)
}

// setMaxPacket makes the live channels ask for n bytes per READ packet.
func setMaxPacket(h *Host, n int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, c := range h.chans {
		if c != nil {
			c.maxPacket = n
		}
	}
}

// waitUp waits until n channels are up.
func waitUp(t *testing.T, h *Host, n int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		up := 0
		for _, c := range h.Stats().Channels {
			if c.Up {
				up++
			}
		}
		if up >= n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("only %d of %d channels up", up, n)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
