package metrics

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"syscall"
	"time"
)

// ContentType is the media type of the text exposition format.
const ContentType = "text/plain; version=0.0.4; charset=utf-8"

// Server answers GET /metrics on one listener.
type Server struct {
	ln   net.Listener
	http *http.Server
	done chan struct{} // closed when Serve's loop has returned
}

// Listen binds network ("tcp" or "unix") and address. A unix socket left
// by a process that is gone is replaced; any other file at its path is
// not. Nothing is answered until Serve.
func Listen(network, address string) (*Server, error) {
	ln, err := net.Listen(network, address)
	if network == "unix" && errors.Is(err, syscall.EADDRINUSE) && staleSocket(address) {
		os.Remove(address)
		ln, err = net.Listen(network, address)
	}
	if err != nil {
		return nil, err
	}
	return &Server{ln: ln}, nil
}

// staleSocket reports whether path is a unix socket nobody listens on.
func staleSocket(path string) bool {
	fi, err := os.Lstat(path)
	if err != nil || fi.Mode().Type() != os.ModeSocket {
		return false
	}
	c, err := net.DialTimeout("unix", path, time.Second)
	if err == nil {
		c.Close()
		return false
	}
	return errors.Is(err, syscall.ECONNREFUSED)
}

// Addr is the address bound.
func (s *Server) Addr() net.Addr { return s.ln.Addr() }

// Public reports whether others than this machine's users may reach the
// listener: a TCP address that is not loopback.
func (s *Server) Public() bool { return public(s.ln.Addr()) }

func public(a net.Addr) bool {
	t, ok := a.(*net.TCPAddr)
	return ok && !t.IP.IsLoopback()
}

// Serve answers each scrape with what gather returns then, until Close.
// An error of gather or of Write is logged and answered with status 500.
func (s *Server) Serve(gather func() []Family, log *slog.Logger) {
	mux := http.NewServeMux()
	mux.HandleFunc("/metrics", func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, "only GET and HEAD", http.StatusMethodNotAllowed)
			return
		}
		var buf bytes.Buffer
		if err := Write(&buf, gather()); err != nil {
			log.Error("metrics page", "err", err)
			http.Error(w, "metrics: "+err.Error(), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", ContentType)
		w.Write(buf.Bytes())
	})
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "sshfsm serves its metrics at /metrics", http.StatusNotFound)
	})
	s.http = &http.Server{
		Handler: mux,
		// A client that stalls holds a connection, never the mount.
		ReadHeaderTimeout: 10 * time.Second,
		WriteTimeout:      30 * time.Second,
		IdleTimeout:       time.Minute,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelDebug),
	}
	s.done = make(chan struct{})
	go func() {
		defer close(s.done)
		s.http.Serve(s.ln)
	}()
}

// Close stops listening, ends the connections and removes a unix socket.
func (s *Server) Close() error {
	if s.http == nil {
		return s.ln.Close()
	}
	err := s.http.Close()
	<-s.done
	return err
}

// Describe names the listener for messages: host:port or the socket path.
func (s *Server) Describe() string {
	if a, ok := s.ln.Addr().(*net.UnixAddr); ok {
		return a.Name
	}
	return fmt.Sprint(s.ln.Addr())
}
