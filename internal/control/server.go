package control

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// Options configure a Server.
type Options struct {
	Dir        string        // runtime directory; "" = RuntimeDir()
	Mountpoint string        // absolute path of the mount served
	Program    string        // sshfsm version, reported to clients
	Provider   func() Status // the mount's current status; called per request
	Logger     *slog.Logger
}

// Server answers status requests for one mount on a unix socket in the
// runtime directory, reachable by the mounting user only.
type Server struct {
	o       Options
	log     *slog.Logger
	path    string
	ln      *net.UnixListener
	started time.Time
	done    chan struct{} // closed when the accept loop has returned
	wg      sync.WaitGroup
	once    sync.Once
}

// maxSocketPath is the longest path a unix socket address holds on Linux.
const maxSocketPath = 107

// Listen creates the socket of o.Mountpoint, replacing one left behind by
// a daemon that is gone, and starts answering on it.
func Listen(o Options) (*Server, error) {
	if o.Dir == "" {
		o.Dir = RuntimeDir()
	}
	if err := makePrivateDir(o.Dir); err != nil {
		return nil, fmt.Errorf("status directory: %w", err)
	}
	sweep(o.Dir)
	path := filepath.Join(o.Dir, socketName(o.Mountpoint))
	if len(path) > maxSocketPath {
		return nil, fmt.Errorf("status socket path %s is longer than %d bytes", path, maxSocketPath)
	}
	if err := claim(path); err != nil {
		return nil, err
	}
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		return nil, fmt.Errorf("status socket: %w", err)
	}
	s := &Server{o: o, log: o.Logger, path: path, ln: ln, started: time.Now(), done: make(chan struct{})}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	// The directory already keeps others out; the mode says so too.
	err = os.Chmod(path, 0o600)
	if err == nil {
		err = writeSidecar(path, sidecar{Mountpoint: o.Mountpoint, PID: os.Getpid()})
	}
	if err != nil {
		ln.Close()
		os.Remove(sidecarPath(path))
		return nil, fmt.Errorf("status socket: %w", err)
	}
	go s.serve()
	return s, nil
}

// claim removes a socket at path that no daemon listens on; it fails if
// one does.
func claim(path string) error {
	fi, err := os.Lstat(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("status socket: %w", err)
	}
	c, err := net.DialTimeout("unix", path, time.Second)
	if err == nil {
		c.Close()
		pid := "unknown pid"
		if sc, ok := readSidecar(path); ok {
			pid = fmt.Sprintf("pid %d", sc.PID)
		}
		return fmt.Errorf("status socket %s is in use by another sshfsm (%s)", path, pid)
	}
	if !stale(err) {
		return fmt.Errorf("status socket %s: %w", path, err)
	}
	removeStale(path, fi)
	return nil
}

// Path is the socket's path.
func (s *Server) Path() string { return s.path }

// Close stops answering and removes the socket and its sidecar; it waits
// for requests being answered. It may be called more than once.
func (s *Server) Close() error {
	var err error
	s.once.Do(func() {
		err = s.ln.Close() // removes the socket file too
		<-s.done
		s.wg.Wait()
		if rerr := os.Remove(sidecarPath(s.path)); rerr != nil && !errors.Is(rerr, os.ErrNotExist) && err == nil {
			err = rerr
		}
	})
	return err
}

func (s *Server) serve() {
	defer close(s.done)
	for {
		c, err := s.ln.AcceptUnix()
		if errors.Is(err, net.ErrClosed) {
			return
		}
		if err != nil {
			// Out of file descriptors, most likely: wait rather than spin.
			s.log.Warn("status socket: accept failed", "err", err)
			time.Sleep(100 * time.Millisecond)
			continue
		}
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			s.handle(c)
		}()
	}
}

// handle answers one request on c.
func (s *Server) handle(c *net.UnixConn) {
	defer c.Close()
	c.SetDeadline(time.Now().Add(ioTimeout))
	if err := samePeer(c); err != nil {
		s.log.Warn("status socket: refused a connection", "err", err)
		return
	}
	line, err := bufio.NewReader(io.LimitReader(c, maxRequest)).ReadBytes('\n')
	if err != nil {
		return // nobody to answer: the peer went away or sent garbage
	}
	resp := s.answer(line)
	b, err := json.Marshal(resp)
	if err != nil {
		s.log.Warn("status socket: encoding the answer failed", "err", err)
		return
	}
	c.Write(append(b, '\n'))
}

// answer builds the response to one request line.
func (s *Server) answer(line []byte) response {
	resp := response{Version: Version, Mountpoint: s.o.Mountpoint, PID: os.Getpid(), Program: s.o.Program}
	var req request
	switch {
	case json.Unmarshal(line, &req) != nil:
		resp.Error = "malformed request"
	case req.Version != Version:
		resp.Error = fmt.Sprintf("status protocol version %d is not spoken here (this daemon speaks %d)", req.Version, Version)
	case req.Op != opStatus:
		resp.Error = fmt.Sprintf("unknown request %q", req.Op)
	default:
		st, err := s.status()
		if err == nil {
			resp.Status, err = json.Marshal(st)
		}
		if err != nil {
			resp.Error = err.Error()
		}
	}
	return resp
}

// status asks the provider and stamps who and how old the daemon is. A
// provider that panics must not take the mount down with it.
func (s *Server) status() (st Status, err error) {
	defer func() {
		if r := recover(); r != nil {
			s.log.Error("status provider panicked", "panic", r)
			err = fmt.Errorf("internal error while collecting the status")
		}
	}()
	if s.o.Provider != nil {
		st = s.o.Provider()
	}
	st.Mount.Mountpoint = s.o.Mountpoint
	st.Mount.PID = os.Getpid()
	st.Mount.Program = s.o.Program
	st.Mount.Started = s.started
	st.Mount.UptimeSeconds = time.Since(s.started).Seconds()
	st.Cache.fillRatios()
	if d := st.Disk; d != nil {
		d.HitRatio = ratio(uint64(d.HitBytes), uint64(d.MissBytes))
	}
	return st, nil
}

// samePeer refuses a peer running as another user. The directory's mode
// already keeps others out; this holds even if it were loosened later.
func samePeer(c *net.UnixConn) error {
	raw, err := c.SyscallConn()
	if err != nil {
		return err
	}
	var cred *unix.Ucred
	var cerr error
	if err := raw.Control(func(fd uintptr) {
		cred, cerr = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED)
	}); err != nil {
		return err
	}
	if cerr != nil {
		return cerr
	}
	if int(cred.Uid) != os.Getuid() {
		return fmt.Errorf("peer pid %d runs as uid %d", cred.Pid, cred.Uid)
	}
	return nil
}
