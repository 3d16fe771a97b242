// Package transport runs the SFTP channels to one SSH host (ssh processes or
// a custom stream), balances, times out and reconnects them, and serves the
// remote.Remote interface on top.
package transport

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"path"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"sshfsm/internal/defaults"
	"sshfsm/internal/inflight"
	"sshfsm/internal/remote"
)

// Options configure Dial.
type Options struct {
	Host       string   // ssh destination: alias, name or address (IPv6 without brackets)
	User       string   // "" = ssh decides (config or local user)
	Port       int      // 0 = ssh decides
	Dir        string   // remote directory as given; "" = home; relative = under home
	SSHCommand []string // default {"ssh"}; ssh_command=
	SSHArgs    []string // extra ssh arguments: -F file, -C, -o Key=Value ...
	// Password, when set (password_stdin), answers ssh's password prompts
	// through SSH_ASKPASS (internal/askpass), at the first connection and
	// at every reconnection; sessions then run without BatchMode.
	Password   string
	SFTPServer string        // sftp_server=: run this remote command instead of the subsystem
	DirectPort int           // directport=: plain TCP to an sftp-server, no ssh
	Conns      int           // max_conns: SFTP channels per host; 0 = defaults.Conns
	Timeout    time.Duration // per-request limit; after it the call fails and the channel is recycled; 0 = defaults.Timeout
	Reconnect  bool
	Logger     *slog.Logger
	// Dialer, when set, replaces the ssh process: it returns the two ends of
	// one SFTP byte stream (directport uses it for TCP; tests for an
	// in-process pkg/sftp server).
	Dialer func(ctx context.Context) (io.ReadCloser, io.WriteCloser, error)
	// FailFast makes a request that finds no live channel fail at once
	// with ErrNoChannel instead of waiting for a reconnect: for a layer
	// that can send it to another host (replica sets).
	FailFast bool
	// NoPrompt runs the first channel in BatchMode too: ssh fails instead
	// of asking for a password or passphrase (several hosts dialled at
	// once must not prompt over each other).
	NoPrompt bool
	// OnDemand opens the channels after the first only when work queues
	// up (see want), instead of all at once after Dial. Each channel is an
	// ssh connection whose key exchange costs tens of milliseconds of CPU
	// on both ends; opened eagerly they compete with the first listings
	// of a fresh mount, and work that one channel carries well (a walk, a
	// single file's reads) never needs them.
	OnDemand bool
	// NoCheckRoot (no_check_root) lets Dial and RemoteAt succeed when Dir
	// does not exist or is not a directory: the root is then Dir made
	// absolute against the remote home, and requests below it fail as the
	// server answers them.
	NoCheckRoot bool
	// ReplayLimit bounds the bytes of acknowledged writes each open file
	// keeps to replay after a reconnect (see fileLog); past it the file
	// is synced. 0 = DefaultReplayLimit.
	ReplayLimit int64
}

// Reconnect backoff: first retry at once, then minBackoff doubling to
// maxBackoff. A request waiting for a channel cuts a longer wait short,
// but not below hurryAfter: a server back after a long outage serves it
// within its timeout, and however many requests wait, a slot does not
// redial more often than that.
const (
	minBackoff = 250 * time.Millisecond
	maxBackoff = 30 * time.Second
	hurryAfter = time.Second
)

// Host is the set of SFTP channels to one host, rooted at one directory.
type Host struct {
	o     Options
	log   *slog.Logger
	extra []string // ssh -o options added to the user's
	root  string   // resolved absolute remote directory
	uid   uint32
	gid   uint32
	uidOK bool

	x       execState           // remote commands (exec.go)
	askFor  string              // with a Password: the user@host it answers prompts of
	logsMu  sync.Mutex          // guards logs, files and every file's abs and gone
	logs    map[string]*fileLog // per remote path: writable handles' shared log (journal.go)
	files   map[*file]struct{}  // open files, whose names follow renames (names.go)
	dialed  atomic.Bool         // Dial succeeded: ssh's complaints are news from now on
	termMu  sync.Mutex          // guards onTerm
	onTerm  []*channel          // sessions whose ssh still writes to the terminal (LeaveTerminal)
	reqs    reqCounters
	ages    inflight.Table // the requests run through pkg/sftp (call.go), while they run
	wireIn  atomic.Uint64
	wireOut atomic.Uint64
	slots   []*slotStats
	demand  chan struct{} // OnDemand: one token wakes one dormant slot
	hurry   chan struct{} // a request waits for a channel: one token ends one slot's backoff early

	ctx    context.Context // ends when the host is closed
	cancel context.CancelFunc
	wg     sync.WaitGroup // slot maintainers

	// mu guards the fields below; it is a leaf lock (nothing else is
	// taken while holding it).
	mu      sync.Mutex
	chans   []*channel    // per slot: its current channel, nil while down
	alive   int           // maintainers still running
	changed chan struct{} // closed and replaced whenever chans changes
	closed  bool
}

// Dial starts the first channel (which may prompt on the terminal), resolves
// and checks Dir, and starts the other channels in the background.
func Dial(ctx context.Context, o Options) (*Host, error) {
	if o.Host == "" || strings.HasPrefix(o.Host, "-") {
		return nil, &DialError{Kind: ErrSSH, Host: o.Host, Detail: "invalid host name"}
	}
	h := newHost(o)
	if o.Dialer == nil {
		h.extra = sshDefaults(ctx, &h.o, preferredCiphers())
		h.x.setup(ctx, &h.o)
		if o.Password != "" {
			h.askFor = passwordAccount(ctx, &h.o)
		}
	}
	c, err := h.openChannel(ctx, 0, !o.NoPrompt)
	if err != nil {
		h.cancel()
		h.removeExecDir()
		return nil, err
	}
	if err := h.resolveRoot(ctx, c); err != nil {
		c.kill(err)
		<-c.dead
		h.cancel()
		h.removeExecDir()
		return nil, err
	}
	h.setChan(0, c) // published before Dial returns: FailFast requests need it
	h.dialed.Store(true)
	h.start(0, c)
	for slot := 1; slot < h.o.Conns; slot++ {
		h.start(slot, nil)
	}
	return h, nil
}

func newHost(o Options) *Host {
	if o.Conns <= 0 {
		o.Conns = defaults.Conns
	}
	if o.Timeout <= 0 {
		o.Timeout = defaults.Timeout
	}
	if o.ReplayLimit <= 0 {
		o.ReplayLimit = DefaultReplayLimit
	}
	h := &Host{o: o, log: o.Logger, changed: make(chan struct{})}
	if h.log == nil {
		h.log = slog.New(slog.DiscardHandler)
	}
	h.ctx, h.cancel = context.WithCancel(context.Background())
	h.demand = make(chan struct{}, o.Conns)
	h.hurry = make(chan struct{}, 1)
	h.chans = make([]*channel, o.Conns)
	for range o.Conns {
		h.slots = append(h.slots, &slotStats{})
	}
	return h
}

// resolveRoot makes Dir absolute, checks it is a directory and learns the
// owner of the remote home.
func (h *Host) resolveRoot(ctx context.Context, c *channel) error {
	dir := h.o.Dir
	if dir == "" {
		dir = "."
	}
	fail := func(kind error, err error) error {
		return &DialError{Kind: kind, Host: h.o.Host, Detail: fmt.Sprintf("%s: %v", dir, err)}
	}
	c.begin()
	err := h.run(ctx, c, idempotent, func() error {
		if home, err := c.client.Stat("."); err == nil {
			h.uid, h.gid, h.uidOK = statOf(home).UID, statOf(home).GID, true
		}
		root, notDir, err := realDir(c, dir, h.o.NoCheckRoot)
		if err == nil && notDir {
			return syscall.ENOTDIR
		}
		h.root = root
		return err
	}, nil)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, fs.ErrNotExist):
		return fail(ErrNoDir, err)
	case errors.Is(err, syscall.ENOTDIR):
		return fail(ErrNotDir, err)
	}
	return fail(ErrSSH, err)
}

// start runs the maintainer of one slot, beginning with channel c if any.
func (h *Host) start(slot int, c *channel) {
	h.mu.Lock()
	h.alive++
	h.mu.Unlock()
	h.wg.Add(1)
	go h.maintain(slot, c)
}

// maintain keeps one slot's channel up: it publishes the channel, waits for
// it to die and, when reconnecting, replaces it with exponential backoff.
// A slot that never came up keeps trying even without Reconnect.
func (h *Host) maintain(slot int, c *channel) {
	defer h.wg.Done()
	defer h.slotStopped()
	if c == nil && slot > 0 && h.o.OnDemand {
		select {
		case <-h.demand:
		case <-h.ctx.Done():
			return
		}
	}
	backoff := time.Duration(0)
	everUp := c != nil
	for {
		if c != nil {
			h.setChan(slot, c)
			select {
			case <-c.dead:
			case <-h.ctx.Done():
				c.kill(errClosed)
				<-c.dead
			}
			h.setChan(slot, nil)
			if !h.o.Reconnect || h.ctx.Err() != nil {
				return
			}
			backoff = 0
		}
		if !h.sleep(backoff) {
			return
		}
		var err error
		if c, err = h.openChannel(h.ctx, slot, false); err != nil {
			if h.ctx.Err() != nil {
				return // closing: not a failure
			}
			h.log.Warn("sftp channel failed", "host", h.o.Host, "slot", slot, "err", err)
			backoff = min(max(2*backoff, minBackoff), maxBackoff)
			continue
		}
		if everUp {
			h.slots[slot].reconnects.Add(1)
		}
		everUp = true
	}
}

// sleep waits d before a redial, or less once hurryAfter has passed if a
// request is waiting for a channel. It reports false when the host closes.
func (h *Host) sleep(d time.Duration) bool {
	if d == 0 {
		return h.ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	var early <-chan time.Time
	if d > hurryAfter {
		e := time.NewTimer(hurryAfter)
		defer e.Stop()
		early = e.C
	}
	var hurry chan struct{}
	for {
		select {
		case <-t.C:
			return true
		case <-h.ctx.Done():
			return false
		case <-early:
			early, hurry = nil, h.hurry
		case <-hurry:
			return true
		}
	}
}

func (h *Host) setChan(slot int, c *channel) {
	h.mu.Lock()
	h.chans[slot] = c
	h.slots[slot].up.Store(c != nil)
	h.broadcastLocked()
	h.mu.Unlock()
}

func (h *Host) slotStopped() {
	h.mu.Lock()
	h.alive--
	h.broadcastLocked()
	h.mu.Unlock()
}

func (h *Host) broadcastLocked() {
	close(h.changed)
	h.changed = make(chan struct{})
}

var errClosed = errors.New("connection closed")

// ErrNoChannel is the error (wrapping ENOTCONN) of a request that found no
// live channel under Options.FailFast: it was not sent.
var ErrNoChannel = errors.New("no live sftp channel")

// pick returns the live channel with the fewest outstanding requests,
// waiting for one until ctx ends; it fails with ctx.Err() once ctx is done,
// even with a channel live, so that a cancelled request is never sent. The
// request is counted on the channel; the caller must end it.
func (h *Host) pick(ctx context.Context) (*channel, error) {
	for {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		h.mu.Lock()
		if h.closed {
			h.mu.Unlock()
			return nil, fmt.Errorf("%w: %w", errClosed, syscall.ENOTCONN)
		}
		var best *channel
		for _, c := range h.chans {
			if c != nil && !c.isDead() && (best == nil || c.outstanding.Load() < best.outstanding.Load()) {
				best = c
			}
		}
		if best != nil {
			if best.outstanding.Load() >= queuedDemand {
				h.want(1)
			}
			best.begin()
			h.mu.Unlock()
			return best, nil
		}
		h.want(len(h.chans))
		if h.alive == 0 {
			h.mu.Unlock()
			return nil, fmt.Errorf("%w: %w", errClosed, syscall.ENOTCONN)
		}
		if h.o.FailFast {
			h.mu.Unlock()
			return nil, fmt.Errorf("%s: %w: %w", h.o.Host, ErrNoChannel, syscall.ENOTCONN)
		}
		select { // a slot waiting to redial need not wait so long
		case h.hurry <- struct{}{}:
		default:
		}
		wait := h.changed
		h.mu.Unlock()
		select {
		case <-wait:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// live returns up to n live channels, least busy first, each with one
// request counted.
func (h *Host) live(n int) []*channel {
	h.mu.Lock()
	defer h.mu.Unlock()
	var cs []*channel
	for _, c := range h.chans {
		if c != nil && !c.isDead() {
			cs = append(cs, c)
		}
	}
	for i := 1; i < len(cs); i++ {
		for j := i; j > 0 && cs[j].outstanding.Load() < cs[j-1].outstanding.Load(); j-- {
			cs[j], cs[j-1] = cs[j-1], cs[j]
		}
	}
	if len(cs) > n {
		cs = cs[:n]
	}
	h.want(n - len(cs))
	for _, c := range cs {
		c.begin()
	}
	return cs
}

// queuedDemand: a request picking a channel that already carries this
// many wakes a dormant one (Options.OnDemand).
const queuedDemand = 4

// want wakes up to n dormant slots (Options.OnDemand): for requests that
// queue behind others, a large transfer split over more channels than are
// open, or no live channel at all. Tokens beyond the dormant slots stay
// in the buffer unused.
func (h *Host) want(n int) {
	for range n {
		select {
		case h.demand <- struct{}{}:
		default:
			return
		}
	}
}

// Remote returns the remote tree rooted at the resolved Dir.
func (h *Host) Remote() remote.Remote { return hostRemote{h: h, root: h.root, own: true} }

// RemoteAt returns the tree rooted at another directory of the same host
// (relative to the remote home, like Options.Dir), served by the same
// channels: several branches of one host share its connections and its one
// authentication. Its Close leaves the Host open. Errors are *DialError
// (ErrNoDir, ErrNotDir) as for Dial.
func (h *Host) RemoteAt(ctx context.Context, dir string) (remote.Remote, error) {
	if dir == "" {
		dir = "."
	}
	var root string
	notDir := false
	err := h.do(ctx, idempotent, func(c *channel) error {
		var err error
		root, notDir, err = realDir(c, dir, h.o.NoCheckRoot)
		return err
	})
	if err == nil && notDir {
		err = syscall.ENOTDIR // not from the transport: outside do's retries
	}
	switch {
	case err == nil:
		return hostRemote{h: h, root: root}, nil
	case errors.Is(err, fs.ErrNotExist):
		return nil, &DialError{Kind: ErrNoDir, Host: h.o.Host, Detail: fmt.Sprintf("%s: %v", dir, err)}
	case errors.Is(err, syscall.ENOTDIR):
		return nil, &DialError{Kind: ErrNotDir, Host: h.o.Host, Detail: fmt.Sprintf("%s: %v", dir, err)}
	}
	return nil, &DialError{Kind: ErrSSH, Host: h.o.Host, Detail: fmt.Sprintf("%s: %v", dir, err)}
}

// realDir resolves dir (relative: below the remote home) to an absolute
// path and reports whether it is not a directory; err is the server's
// answer. With noCheck nothing is checked: a dir that is missing resolves
// all the same (joined to the home when the server cannot resolve it).
func realDir(c *channel, dir string, noCheck bool) (root string, notDir bool, err error) {
	root, err = c.client.RealPath(dir)
	switch {
	case err != nil && noCheck && errors.Is(err, fs.ErrNotExist):
		if path.IsAbs(dir) {
			return path.Clean(dir), false, nil
		}
		if root, err = c.client.RealPath("."); err != nil {
			return "", false, err
		}
		return path.Join(root, dir), false, nil
	case err != nil || noCheck:
		return root, false, err
	}
	fi, err := c.client.Stat(root)
	if err != nil {
		return "", false, err
	}
	return root, !fi.IsDir(), nil
}

// RemoteUser returns the owner of the remote home directory.
func (h *Host) RemoteUser() (uid, gid uint32, ok bool) { return h.uid, h.gid, h.uidOK }

// Root returns the resolved absolute remote directory.
func (h *Host) Root() string { return h.root }

// Close ends every channel and waits for their processes to exit.
func (h *Host) Close() error {
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return nil
	}
	h.closed = true
	h.broadcastLocked()
	h.mu.Unlock()
	h.cancel()
	h.wg.Wait()
	h.removeExecDir()
	return nil
}

// Up reports whether at least one channel is live.
func (h *Host) Up() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, c := range h.chans {
		if c != nil && !c.isDead() {
			return true
		}
	}
	return false
}

// Changed returns a channel closed at the next change of the channels.
func (h *Host) Changed() <-chan struct{} {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.changed
}

// RootOf returns the absolute remote directory of a tree of Remote or
// RemoteAt; "" for any other remote.
func RootOf(r remote.Remote) string {
	if hr, ok := r.(hostRemote); ok {
		return hr.root
	}
	return ""
}
