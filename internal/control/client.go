package control

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"sort"
	"sshfsm/internal/mountinfo"
	"sync"
	"syscall"
	"time"
)

// DefaultTimeout bounds one exchange with a daemon, connecting included.
const DefaultTimeout = 3 * time.Second

// ErrNoSocket means that no daemon of the calling user has a status socket
// for the mountpoint asked about.
var ErrNoSocket = errors.New("no status socket")

// NotAnsweringError is a daemon that accepted no request or sent no answer
// in time: stopped, stuck, or overloaded.
type NotAnsweringError struct {
	Mountpoint string
	PID        int // 0 when unknown
	Timeout    time.Duration
}

func (e *NotAnsweringError) Error() string {
	return fmt.Sprintf("the sshfsm serving %s%s is not answering (no reply within %v); it may be stopped or stuck",
		e.Mountpoint, pidText(e.PID), e.Timeout)
}

// VersionError is a daemon speaking another version of the protocol: one
// started by an older or newer sshfsm than the client.
type VersionError struct {
	Mountpoint string
	PID        int
	Program    string // the daemon's sshfsm version
	Daemon     int    // the daemon's protocol version
}

func (e *VersionError) Error() string {
	prog := ""
	if e.Program != "" {
		prog = ", sshfsm " + e.Program
	}
	return fmt.Sprintf("the sshfsm serving %s (pid %d%s) speaks status protocol version %d, this sshfsm speaks %d; "+
		"run the sshfsm that mounted it, or remount", e.Mountpoint, e.PID, prog, e.Daemon, Version)
}

func pidText(pid int) string {
	if pid == 0 {
		return ""
	}
	return fmt.Sprintf(" (pid %d)", pid)
}

// Client asks daemons for their status.
type Client struct {
	Dir     string        // runtime directory; "" = RuntimeDir()
	Timeout time.Duration // per daemon; 0 = DefaultTimeout
}

// Query asks the daemon serving mountpoint, an absolute path as the daemon
// mounted it (symbolic links resolved).
func Query(mountpoint string) (*Status, error) { return Client{}.Query(mountpoint) }

// List asks every daemon of the calling user.
func List() ([]Result, error) { return Client{}.List() }

// Result is one daemon's answer to List.
type Result struct {
	Mountpoint string // "" when the daemon did not say and its sidecar is gone
	PID        int
	Status     *Status // nil when Err is set or Gone
	Err        error
	// Gone: the daemon is dead (killed) but its mount is still there,
	// failing every access with ENOTCONN until it is unmounted. Its
	// socket is kept so that every listing says so.
	Gone bool
}

// ErrGone means that the daemon of a mount is dead while the mount remains.
var ErrGone = errors.New("its sshfsm is gone, but the mount remains")

func (c Client) dir() string {
	if c.Dir != "" {
		return c.Dir
	}
	return RuntimeDir()
}

func (c Client) timeout() time.Duration {
	if c.Timeout > 0 {
		return c.Timeout
	}
	return DefaultTimeout
}

// openDir checks the runtime directory; ok is false when it does not
// exist, which means no daemon ever listened.
func (c Client) openDir() (dir string, ok bool, err error) {
	dir = c.dir()
	err = checkPrivateDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return dir, false, nil
	}
	if err != nil {
		return dir, false, fmt.Errorf("status directory: %w", err)
	}
	return dir, true, nil
}

// Query asks the daemon serving mountpoint. Without one it returns an
// error wrapping ErrNoSocket, after removing a socket its daemon left.
func (c Client) Query(mountpoint string) (*Status, error) {
	dir, ok, err := c.openDir()
	if err != nil {
		return nil, err
	}
	path := filepath.Join(dir, socketName(mountpoint))
	if ok {
		st, err := c.ask(path, mountpoint)
		if errors.Is(err, errGone) {
			return nil, fmt.Errorf("%s: %w", mountpoint, ErrGone)
		}
		if !errors.Is(err, errStale) {
			return st, err
		}
	}
	return nil, fmt.Errorf("%w for %s in %s", ErrNoSocket, mountpoint, dir)
}

// List asks every daemon with a socket in the runtime directory, all at
// once so that stuck ones cost one timeout in all. Sockets left by daemons
// that are gone are removed and not listed. Results are sorted by
// mountpoint.
func (c Client) List() ([]Result, error) {
	dir, ok, err := c.openDir()
	if err != nil || !ok {
		return nil, err
	}
	socks, err := filepath.Glob(filepath.Join(dir, "*.sock"))
	if err != nil {
		return nil, err
	}
	removeOrphans(dir)
	results := make([]*Result, len(socks))
	var wg sync.WaitGroup
	for i, sock := range socks {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i] = c.listOne(sock)
		}()
	}
	wg.Wait()
	var out []Result
	for _, r := range results {
		if r != nil {
			out = append(out, *r)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Mountpoint < out[j].Mountpoint })
	return out, nil
}

// listOne asks the daemon of sock; nil when the socket was stale.
func (c Client) listOne(sock string) *Result {
	sc, _ := readSidecar(sock)
	st, err := c.ask(sock, "")
	switch {
	case errors.Is(err, errStale):
		return nil
	case errors.Is(err, errGone):
		return &Result{Mountpoint: sc.Mountpoint, PID: sc.PID, Gone: true}
	case err != nil:
		return &Result{Mountpoint: sc.Mountpoint, PID: sc.PID, Err: err}
	}
	return &Result{Mountpoint: st.Mount.Mountpoint, PID: st.Mount.PID, Status: st}
}

// errStale: the socket was left by a daemon that is gone; it was removed.
var errStale = errors.New("stale status socket")

// errGone: the socket was left by a daemon that is gone, whose mount is
// still there; the socket stays.
var errGone = errors.New("daemon gone, mount left")

// ask exchanges one status request on the socket at path; want, when set,
// is the mountpoint the daemon must be serving.
func (c Client) ask(path, want string) (*Status, error) {
	fi, err := os.Lstat(path)
	if err != nil {
		return nil, errStale
	}
	sc, _ := readSidecar(path)
	if want == "" {
		want = sc.Mountpoint
	}
	quiet := &NotAnsweringError{Mountpoint: want, PID: sc.PID, Timeout: c.timeout()}
	if want == "" {
		quiet.Mountpoint = "socket " + path
	}
	conn, err := net.DialTimeout("unix", path, c.timeout())
	switch {
	case err != nil && stale(err):
		if sc.Mountpoint != "" && mountedHere(sc.Mountpoint) {
			return nil, errGone
		}
		removeStale(path, fi)
		return nil, errStale
	case errors.Is(err, syscall.EAGAIN), isTimeout(err):
		return nil, quiet // its queue of connections is full
	case err != nil:
		return nil, fmt.Errorf("status socket %s: %w", path, err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(c.timeout()))
	resp, err := exchange(conn)
	if isTimeout(err) {
		return nil, quiet
	}
	if err != nil {
		return nil, fmt.Errorf("status of %s: %w", quiet.Mountpoint, err)
	}
	return decode(resp, want)
}

// exchange sends the request and reads the answer.
func exchange(conn net.Conn) (*response, error) {
	b, _ := json.Marshal(request{Version: Version, Op: opStatus})
	if _, err := conn.Write(append(b, '\n')); err != nil {
		return nil, err
	}
	line, err := bufio.NewReader(io.LimitReader(conn, maxResponse)).ReadBytes('\n')
	if errors.Is(err, io.EOF) {
		return nil, errors.New("the daemon closed the connection without answering")
	}
	if err != nil {
		return nil, err
	}
	var resp response
	if err := json.Unmarshal(line, &resp); err != nil {
		return nil, fmt.Errorf("malformed answer: %w", err)
	}
	return &resp, nil
}

// decode checks an answer and returns its status.
func decode(resp *response, want string) (*Status, error) {
	if resp.Version != Version {
		return nil, &VersionError{Mountpoint: resp.Mountpoint, PID: resp.PID, Program: resp.Program, Daemon: resp.Version}
	}
	if resp.Error != "" {
		return nil, fmt.Errorf("the sshfsm serving %s (pid %d) answered: %s", resp.Mountpoint, resp.PID, resp.Error)
	}
	if want != "" && resp.Mountpoint != want {
		return nil, fmt.Errorf("the status socket of %s is answered by the sshfsm serving %s (pid %d)", want, resp.Mountpoint, resp.PID)
	}
	var st Status
	if err := json.Unmarshal(resp.Status, &st); err != nil {
		return nil, fmt.Errorf("malformed status from the sshfsm serving %s: %w", resp.Mountpoint, err)
	}
	return &st, nil
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// stale reports whether a failed connection means that nothing listens on
// the socket any more.
func stale(err error) bool {
	return errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, os.ErrNotExist)
}

// removeStale removes the socket at path and its sidecar, unless the socket
// is no longer the file fi (a new daemon just replaced it).
// mountedHere reports whether an sshfsm mount is at mountpoint; nothing
// is stat'ed (a stuck mount would hang the caller).
func mountedHere(mountpoint string) bool {
	m, ok := mountinfo.At(mountpoint)
	return ok && m.FSType == "fuse.sshfsm"
}

func removeStale(path string, fi os.FileInfo) {
	if now, err := os.Lstat(path); err != nil || !os.SameFile(fi, now) {
		return
	}
	os.Remove(path)
	os.Remove(sidecarPath(path))
}

// removeOrphans removes sidecars whose socket is gone. A daemon writes its
// sidecar after creating its socket and removes it after the socket, so an
// orphan belongs to a daemon that is gone or closing.
func removeOrphans(dir string) {
	cars, _ := filepath.Glob(filepath.Join(dir, "*.json"))
	for _, car := range cars {
		sock := car[:len(car)-len(".json")] + ".sock"
		if _, err := os.Lstat(sock); errors.Is(err, os.ErrNotExist) {
			os.Remove(car)
		}
	}
}
