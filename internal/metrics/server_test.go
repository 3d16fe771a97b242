package metrics

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"

	"sshfsm/test/exposition"
)

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// get asks the server at network/address for path with method.
func get(t *testing.T, network, address, method, path string) (*http.Response, string) {
	t.Helper()
	c := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, network, address)
	}}}
	defer c.CloseIdleConnections()
	req, err := http.NewRequest(method, "http://sshfsm"+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, string(body)
}

// TestServeTCP: GET /metrics answers the page of the moment in the text
// format; other paths and methods are refused; after Close nothing
// listens.
func TestServeTCP(t *testing.T) {
	s, err := Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	if s.Public() {
		t.Errorf("127.0.0.1 reported public")
	}
	var scrapes atomic.Int64
	s.Serve(func() []Family {
		n := scrapes.Add(1)
		return []Family{{Name: "sshfsm_scrapes_total", Help: "Scrapes.", Type: Counter, Samples: []Sample{{Value: float64(n)}}}}
	}, quiet())
	addr := s.Addr().String()
	for want := 1.0; want <= 2; want++ {
		resp, body := get(t, "tcp", addr, "GET", "/metrics")
		if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != ContentType {
			t.Fatalf("status %d, content type %q: %s", resp.StatusCode, resp.Header.Get("Content-Type"), body)
		}
		fams, _, err := exposition.Parse(strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		if got := fams["sshfsm_scrapes_total"].Sum("sshfsm_scrapes_total", nil); got != want {
			t.Errorf("scrape %v reads %v", want, got)
		}
	}
	if resp, _ := get(t, "tcp", addr, "POST", "/metrics"); resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("POST: status %d", resp.StatusCode)
	}
	if resp, _ := get(t, "tcp", addr, "GET", "/"); resp.StatusCode != http.StatusNotFound {
		t.Errorf("GET /: status %d", resp.StatusCode)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s.Close() // twice is harmless
	if c, err := net.Dial("tcp", addr); err == nil {
		c.Close()
		t.Errorf("%s still accepts connections after Close", addr)
	}
}

// TestServeError: a page that cannot be written is a 500, not a page a
// scraper would half-read.
func TestServeError(t *testing.T) {
	s, err := Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	s.Serve(func() []Family { return []Family{{Name: "bad name", Type: Gauge}} }, quiet())
	if resp, body := get(t, "tcp", s.Addr().String(), "GET", "/metrics"); resp.StatusCode != 500 {
		t.Errorf("status %d: %s", resp.StatusCode, body)
	}
}

// TestListenTCPInUse: an address already bound is an error at Listen.
func TestListenTCPInUse(t *testing.T) {
	s, err := Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if s2, err := Listen("tcp", s.Addr().String()); !errors.Is(err, syscall.EADDRINUSE) {
		if err == nil {
			s2.Close()
		}
		t.Errorf("second Listen on %s: %v, want EADDRINUSE", s.Addr(), err)
	}
}

// TestServeUnix: a unix socket serves the page; Close removes it. A
// socket left by a process that is gone is replaced, one that is served
// or a file that is no socket is not.
func TestServeUnix(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "m.sock")

	// Left behind: a listener closed without removing its socket.
	ln, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	ln.(*net.UnixListener).SetUnlinkOnClose(false)
	ln.Close()

	s, err := Listen("unix", path)
	if err != nil {
		t.Fatalf("over a stale socket: %v", err)
	}
	if s.Public() || s.Describe() != path {
		t.Errorf("public %v, describe %q", s.Public(), s.Describe())
	}
	s.Serve(func() []Family {
		return []Family{{Name: "sshfsm_up", Help: "Up.", Type: Gauge, Samples: []Sample{{Value: 1}}}}
	}, quiet())
	if resp, body := get(t, "unix", path, "GET", "/metrics"); resp.StatusCode != 200 || !strings.Contains(body, "\nsshfsm_up 1\n") {
		t.Errorf("status %d: %s", resp.StatusCode, body)
	}
	if s2, err := Listen("unix", path); err == nil {
		s2.Close()
		t.Errorf("a second Listen took over a socket in use")
	}
	s.Close()
	if _, err := os.Lstat(path); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("socket left after Close: %v", err)
	}

	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, []byte("keep"), 0o600); err != nil {
		t.Fatal(err)
	}
	if s3, err := Listen("unix", file); err == nil {
		s3.Close()
		t.Errorf("Listen replaced a regular file")
	}
	if b, err := os.ReadFile(file); err != nil || string(b) != "keep" {
		t.Errorf("file at the path: %q, %v", b, err)
	}
}

// TestPublic: only TCP addresses off loopback are public; every address
// (0.0.0.0, ::) is.
func TestPublic(t *testing.T) {
	for _, c := range []struct {
		addr net.Addr
		want bool
	}{
		{&net.TCPAddr{IP: net.ParseIP("127.0.0.1")}, false},
		{&net.TCPAddr{IP: net.ParseIP("127.0.0.2")}, false},
		{&net.TCPAddr{IP: net.ParseIP("::1")}, false},
		{&net.TCPAddr{IP: net.ParseIP("0.0.0.0")}, true},
		{&net.TCPAddr{IP: net.ParseIP("::")}, true},
		{&net.TCPAddr{IP: net.ParseIP("192.168.1.2")}, true},
		{&net.UnixAddr{Name: "/run/x", Net: "unix"}, false},
	} {
		if got := public(c.addr); got != c.want {
			t.Errorf("%v: public %v, want %v", c.addr, got, c.want)
		}
	}
}
