package transport

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	osuser "os/user"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pkg/sftp"

	"sshfsm/internal/askpass"
	"sshfsm/internal/metrics"
)

// maxPacketLimits is the read/write size OpenSSH's sftp-server accepts when
// it advertises limits@openssh.com: SFTP_MAX_MSG_LENGTH (256 KiB) minus
// 1024, the clamp it applies to READ lengths (and its max-write-length).
const maxPacketLimits = 256*1024 - 1024

// defaultMaxPacket is the payload size every SFTP server must accept.
const defaultMaxPacket = 32 * 1024

// channel is one SFTP session (one ssh process or one Dialer stream).
type channel struct {
	slot        int
	client      *sftp.Client
	maxPacket   int
	proc        *sshProc      // nil with a Dialer
	ctlPath     string        // control socket when proc is our ssh master (exec.go)
	stream      io.Closer     // the Dialer's ends; nil with ssh
	dead        chan struct{} // closed once the session has ended
	gone        atomic.Bool   // set as soon as the channel is known to be unusable
	killOnce    sync.Once
	stats       *slotStats
	outstanding atomic.Int32
	term        *heldPrinter // ssh's stderr on the terminal while it may prompt; nil otherwise
	raw         *rawReads    // reads sent past pkg/sftp (rawread.go)
	wire        *wireWriter  // the session's writer, for those reads
}

// slotStats are the counters of one channel slot; they survive reconnects.
type slotStats struct {
	up          atomic.Bool
	outstanding atomic.Int32
	bytesRead   atomic.Uint64
	bytesWrite  atomic.Uint64
	errors      atomic.Uint64
	reconnects  atomic.Uint64
	lastRTT     atomic.Int64
	latency     metrics.Latency // every request's duration
}

// kill ends the channel: every request blocked on it fails promptly.
func (c *channel) kill(reason error) {
	c.gone.Store(true)
	c.killOnce.Do(func() {
		if c.proc != nil {
			c.proc.kill()
		}
		if c.stream != nil {
			c.stream.Close()
		}
	})
}

func (c *channel) isDead() bool { return c.gone.Load() }

func (c *channel) ext(name string) bool {
	_, ok := c.client.HasExtension(name)
	return ok
}

// begin and end bracket one request for load balancing and stats.
func (c *channel) begin() {
	c.outstanding.Add(1)
	c.stats.outstanding.Add(1)
}

// unbegin takes back a counted request that was never sent.
func (c *channel) unbegin() {
	c.outstanding.Add(-1)
	c.stats.outstanding.Add(-1)
}

func (c *channel) end(start time.Time, err error) {
	c.outstanding.Add(-1)
	c.stats.outstanding.Add(-1)
	took := time.Since(start)
	c.stats.lastRTT.Store(int64(took))
	c.stats.latency.Observe(took)
	if err != nil && !isAnswer(err) {
		c.stats.errors.Add(1)
	}
}

// pairCloser closes both ends of a Dialer stream.
type pairCloser struct {
	r io.ReadCloser
	w io.WriteCloser
}

func (p pairCloser) Close() error {
	err := p.w.Close()
	if err2 := p.r.Close(); err == nil {
		err = err2
	}
	return err
}

// openChannel starts one SFTP session for slot. interactive lets ssh prompt
// on the terminal; every other session runs with BatchMode.
func (h *Host) openChannel(ctx context.Context, slot int, interactive bool) (*channel, error) {
	c := &channel{slot: slot, dead: make(chan struct{}), stats: h.slots[slot]}
	var r io.ReadCloser
	var w io.WriteCloser
	if h.o.Dialer != nil {
		var err error
		if r, w, err = h.o.Dialer(ctx); err != nil {
			return nil, &DialError{Kind: ErrUnreachable, Host: h.o.Host, Detail: err.Error()}
		}
		c.stream = pairCloser{r, w}
	} else {
		extra, sock := h.masterArgs(slot)
		sink := h.logSink()
		if interactive {
			c.term = &heldPrinter{w: os.Stderr}
			sink = c.term.print
		}
		env, err := h.sshEnv()
		if err != nil {
			return nil, &DialError{Kind: ErrSSH, Host: h.o.Host, Detail: err.Error()}
		}
		batch := !interactive && h.o.Password == "" // the password needs prompts
		p, err := startSSH(sshArgv(&h.o, extra, batch), env, interactive, sink)
		if err != nil {
			return nil, &DialError{Kind: ErrSSH, Host: h.o.Host, Detail: err.Error()}
		}
		c.proc, c.ctlPath, r, w = p, sock, p.stdout, p.stdin
	}
	if err := h.handshake(ctx, c, r, w, interactive); err != nil {
		return nil, err
	}
	if c.term != nil {
		// What ssh writes from now on (the server's own words on its
		// standard error among them, which ssh may relay after the first
		// SFTP reply) still goes to the terminal until LeaveTerminal.
		c.term.flush()
		h.termMu.Lock()
		h.onTerm = append(h.onTerm, c)
		h.termMu.Unlock()
	}
	go h.watch(c)
	go h.watchRaw(c)
	return c, nil
}

// LeaveTerminal sends what the sessions started on the terminal write to
// stderr from now on to the log instead, after showing what they wrote so
// far. The mount calls it before it leaves the terminal.
func (h *Host) LeaveTerminal() {
	h.termMu.Lock()
	chans := h.onTerm
	h.onTerm = nil
	h.termMu.Unlock()
	for _, c := range chans {
		c.proc.errs.setSink(h.logSink())
		c.term.flush()
	}
}

// handshake runs the SFTP version exchange, bounded by ctx (and by
// Options.Timeout for sessions that cannot be waiting on a prompt).
func (h *Host) handshake(ctx context.Context, c *channel, r io.Reader, w io.WriteCloser, interactive bool) error {
	if !interactive {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, 2*h.o.Timeout)
		defer cancel()
	}
	type result struct {
		cl  *sftp.Client
		err error
	}
	c.raw = newRawReads()
	c.wire = newWireWriter(w, h, c.raw)
	done := make(chan result, 1)
	go func() {
		cl, err := sftp.NewClientPipe(newWireReader(r, h, c.raw), c.wire,
			sftp.UseConcurrentReads(true), sftp.UseConcurrentWrites(true))
		done <- result{cl, err}
	}()
	var res result
	select {
	case res = <-done:
	case <-ctx.Done():
		c.kill(ctx.Err())
		if res = <-done; res.err == nil {
			res.cl.Close()
		}
		res.err = ctx.Err()
	}
	if res.err != nil {
		c.kill(res.err)
		return h.dialFailure(c, res.err)
	}
	c.client, c.maxPacket = res.cl, defaultMaxPacket
	if c.ext("limits@openssh.com") {
		sftp.MaxPacketUnchecked(maxPacketLimits)(c.client)
		c.maxPacket = maxPacketLimits
	}
	return nil
}

// dialFailure explains a failed session start from ssh's exit and stderr.
func (h *Host) dialFailure(c *channel, err error) error {
	if c.proc == nil {
		kind := ErrSSH
		if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
			kind = ErrUnreachable
		}
		return &DialError{Kind: kind, Host: h.o.Host, Detail: err.Error()}
	}
	select {
	case <-c.proc.exited:
	case <-time.After(time.Second):
	}
	detail, kind := classifyStderr(c.proc.errs.tail())
	if c.term != nil {
		c.term.settle(detail)
	}
	if detail == "" {
		detail = err.Error()
	}
	if errors.Is(err, context.DeadlineExceeded) && kind == ErrSSH {
		kind = ErrUnreachable
	}
	return &DialError{Kind: kind, Host: h.o.Host, Detail: detail}
}

// watch waits for the session to end, then reaps it.
func (h *Host) watch(c *channel) {
	err := c.client.Wait()
	c.kill(err)
	c.raw.fail(err) // pkg/sftp stopped reading: no answer will come
	if c.proc != nil {
		<-c.proc.exited
		h.dropSocket(c.ctlPath)
		if l := c.proc.errs.tail(); len(l) > 0 {
			err = fmt.Errorf("%w: %s", err, l[len(l)-1])
		}
	}
	h.log.Info("sftp channel closed", "host", h.o.Host, "slot", c.slot, "err", err)
	close(c.dead)
}

// sshEnv is the environment of a session's ssh: ours, or with a password
// the askpass program that answers its prompts.
func (h *Host) sshEnv() ([]string, error) {
	if h.o.Password == "" {
		return nil, nil
	}
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("password: cannot find own executable for SSH_ASKPASS: %w", err)
	}
	return askpass.Env(os.Environ(), exe, h.o.Password, h.askFor), nil
}

// passwordAccount returns the account ssh's password prompts name for o,
// the only prompts the password answers (askpass): user@host as ssh -G
// resolves them, else as given.
func passwordAccount(ctx context.Context, o *Options) string {
	cfg := sshConfig(ctx, o)
	user, host := cfg["user"], cfg["hostname"]
	if alias := cfg["hostkeyalias"]; alias != "" && alias != "none" {
		host = alias
	}
	if user == "" || host == "" {
		user, host = givenAccount(o)
	}
	return askpass.Destination(user, host)
}

// givenAccount is the user and host of o as given: Options.User, or the
// user part of a user@host destination, or the local user.
func givenAccount(o *Options) (string, string) {
	user, host := o.User, o.Host
	if i := strings.LastIndexByte(host, '@'); i >= 0 {
		if user == "" {
			user = host[:i]
		}
		host = host[i+1:]
	}
	if user == "" {
		if u, err := osuser.Current(); err == nil {
			user = u.Username
		}
	}
	return user, host
}

// logSink sends ssh's stderr lines to the log.
func (h *Host) logSink() func(string) {
	return func(line string) {
		if !h.dialed.Load() {
			// Dial's own error carries ssh's last words to the caller.
			h.log.Info("ssh", "host", h.o.Host, "msg", line)
			return
		}
		h.log.Warn("ssh", "host", h.o.Host, "msg", line)
	}
}
