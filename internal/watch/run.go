package watch

import (
	"context"
	"errors"
	"io"
	"strings"
	"sync"
	"time"

	"sshfsm/internal/namespace"
	"sshfsm/internal/transport"
)

// Restart backoff after a watcher failed or ended: minBackoff doubling to
// maxBackoff, and back to minBackoff after a run that was active for
// steadyRun. When the server cannot watch (no inotifywait, no commands,
// the inotify limit), it is asked again after retryLater or when the
// host reconnects.
const (
	minBackoff = 250 * time.Millisecond
	maxBackoff = 30 * time.Second
	steadyRun  = time.Minute
	retryLater = 10 * time.Minute
)

// runner keeps the watcher of one target running.
type runner struct {
	w *Watcher
	t Target

	// mu guards st and the fields below it.
	mu sync.Mutex
	st Status
	// logged: the last detail logged, so that a failure repeating itself
	// is logged once.
	logged string
}

func newRunner(w *Watcher, t Target) *runner {
	r := &runner{w: w, t: t, st: Status{State: Starting}}
	if len(t.Candidates) > 0 {
		r.st.Host = t.Candidates[0].Name
	}
	return r
}

func (r *runner) status() Status {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.st
}

// set changes the state, keeping the counters.
func (r *runner) set(host string, s State, detail string) {
	r.mu.Lock()
	r.st.Host, r.st.State, r.st.Detail = host, s, detail
	if s != Active && s != Partial {
		r.st.Setup = 0
	}
	r.mu.Unlock()
}

// outcome is how one attempt ended and what to do next.
type outcome int

const (
	retrySoon  outcome = iota // with backoff
	retryLong                 // after retryLater or a reconnect
	retryNever                // the host cannot run commands at all
	stopped                   // ctx ended
)

// loop runs the watcher until ctx ends, restarting it as needed.
func (r *runner) loop(ctx context.Context) {
	if len(r.t.Candidates) == 0 {
		r.set("", Off, "no host serves this tree")
		return
	}
	backoff := time.Duration(0)
	gap := false // a run was active before: changes may have been missed
	for ctx.Err() == nil {
		c, h, dir := r.pick()
		var out outcome
		var ran time.Duration
		if h == nil {
			r.set(r.t.Candidates[0].Name, Off, "not connected")
			out = retrySoon
		} else {
			out, ran = r.attempt(ctx, c, h, dir, gap)
			gap = gap || ran > 0
		}
		switch out {
		case stopped, retryNever:
			return
		case retryLong:
			backoff = retryLater
		default:
			if ran >= steadyRun {
				backoff = 0
			}
			backoff = min(max(2*backoff, r.w.o.minBackoff), maxBackoff)
		}
		if !r.wait(ctx, backoff) {
			return
		}
	}
}

// pick returns the first candidate that is connected.
func (r *runner) pick() (Candidate, Host, string) {
	for _, c := range r.t.Candidates {
		if h, dir := c.Connected(); h != nil {
			return c, h, dir
		}
	}
	return Candidate{}, nil, ""
}

// wait sleeps d, or less when a candidate's connection changes (but at
// least the minimum backoff). It reports false when ctx ended.
func (r *runner) wait(ctx context.Context, d time.Duration) bool {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	changed := make(chan struct{}, 1)
	for _, c := range r.t.Candidates {
		ch := c.Changed()
		go func() {
			select {
			case <-ch:
				select {
				case changed <- struct{}{}:
				default:
				}
			case <-ctx.Done():
			}
		}()
	}
	floor := time.NewTimer(min(d, r.w.o.minBackoff))
	defer floor.Stop()
	full := time.NewTimer(d)
	defer full.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-floor.C:
	}
	select {
	case <-ctx.Done():
		return false
	case <-full.C:
	case <-changed:
	}
	return true
}

// attempt probes the server and runs the watcher once. ran is how long
// the watcher was active (0: it never was).
func (r *runner) attempt(ctx context.Context, c Candidate, h Host, dir string, gap bool) (outcome, time.Duration) {
	if dir == "/" || dir == "" {
		r.off(c.Name, "the server's root directory is not watched", nil)
		return retryNever, 0
	}
	r.set(c.Name, Starting, "")
	out, detail, err := r.probe(ctx, h, dir)
	switch {
	case ctx.Err() != nil:
		return stopped, 0
	case detail != "":
		r.off(c.Name, detail, err)
		return out, 0
	}
	run := &watchRun{r: r, host: c.Name, gap: gap, start: time.Now()}
	p := newParser(dir, run.emit)
	p.pause = r.w.o.Window
	err = h.Stream(ctx, watchCommand(r.w.o.program, dir, events(r.w.o.Writes)), p.read, run.errLine)
	ran := run.activeFor()
	switch {
	case ctx.Err() != nil:
		return stopped, ran
	case run.limited():
		r.off(c.Name, "inotify watch limit reached on the server (fs.inotify.max_user_watches)", nil)
		return retryLong, ran
	case errors.Is(err, errGone):
		r.off(c.Name, "the remote directory was removed or moved", nil)
		return retrySoon, ran
	}
	r.off(c.Name, endDetail(err, run.lastLine()), err)
	return retrySoon, ran
}

// probe checks that the host runs commands and has the watcher program,
// and that dir is not on a network file system (unless Options.Network).
// detail is empty when the watcher can run.
func (r *runner) probe(ctx context.Context, h Host, dir string) (outcome, string, error) {
	marked := false
	network := ""
	err := h.Exec(ctx, probeCommand(r.w.o.program, dir), func(rd io.Reader) error {
		b, err := io.ReadAll(rd)
		marked = strings.Contains("\n"+string(b), "\n"+marker+"\n")
		network = networkFSOf(string(b))
		return err
	})
	var ee *transport.ExecError
	switch {
	case errors.Is(err, transport.ErrNoExec):
		return retryNever, "no remote commands without ssh (directport)", nil
	case errors.As(err, &ee) && ee.Status == exitNoProgram:
		return retryLong, r.w.o.program + " not found on the server (install inotify-tools there)", nil
	case errors.As(err, &ee) && ee.Status == 255, err != nil && !errors.As(err, &ee):
		return retrySoon, "cannot run the watcher: " + oneLine(err.Error()), err
	case !marked:
		return retryLong, "the server runs no commands (SFTP only)", err
	case network != "" && !r.w.o.Network:
		// The file system of a tree does not change while it is mounted.
		return retryNever, "the tree is on " + network + " on the server, where inotify sees only that server's own changes " +
			"and watching walks every directory; -o watch=yes watches it anyway", nil
	}
	return retrySoon, "", nil
}

// off records that the watcher is not running, logging a new reason.
func (r *runner) off(host, detail string, err error) {
	r.set(host, Off, detail)
	r.mu.Lock()
	repeat := r.logged == detail
	r.logged = detail
	r.mu.Unlock()
	if repeat {
		return
	}
	args := []any{"host", host, "prefix", r.t.Prefix, "why", detail}
	if err != nil {
		args = append(args, "err", err)
	}
	if strings.Contains(detail, "limit") {
		r.w.log.Warn("changes on the server are not pushed; the cache timeouts apply", args...)
		return
	}
	r.w.log.Info("changes on the server are not pushed; the cache timeouts apply", args...)
}

// endDetail explains why a watcher ended: its last message, or the error.
func endDetail(err error, last string) string {
	switch {
	case last != "" && !strings.HasPrefix(last, "Setting up watches") && last != msgReady:
		return "the watcher ended: " + last
	case err != nil:
		return "the watcher ended: " + oneLine(err.Error())
	}
	return "the watcher ended"
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// watchRun is one run of the watcher command.
type watchRun struct {
	r     *runner
	host  string
	gap   bool // changes may have been missed before this run
	start time.Time

	// mu guards the fields below: standard error and output are read by
	// different goroutines.
	mu      sync.Mutex
	ready   time.Time // when the watches were established
	partial string
	limit   bool
	last    string // the last line of standard error
}

// errLine follows the watcher's messages.
func (w *watchRun) errLine(line string) {
	line = strings.TrimSpace(line)
	if line == "" {
		return
	}
	w.mu.Lock()
	w.last = line
	var becameReady bool
	switch {
	case line == msgReady:
		w.ready, becameReady = time.Now(), true
	case strings.Contains(line, msgLimit):
		w.limit = true
	case strings.HasPrefix(line, msgNewDir) && w.partial == "":
		w.partial = "some new directories are not watched: " + line
		if strings.Contains(line, "No space left on device") {
			w.partial = "inotify watch limit reached on the server (fs.inotify.max_user_watches): " +
				"changes in some new directories are not pushed"
		}
		w.r.w.log.Warn("changes on the server are pushed only in part", "host", w.host, "prefix", w.r.t.Prefix, "why", line)
	}
	ready, partial := w.ready, w.partial
	w.mu.Unlock()
	switch {
	case becameReady:
		w.becameReady(ready)
	case partial != "" && !ready.IsZero():
		w.r.set(w.host, Partial, partial)
	}
}

// becameReady marks the target active; after a gap, everything below it
// may have changed meanwhile.
func (w *watchRun) becameReady(at time.Time) {
	setup := at.Sub(w.start)
	w.mu.Lock()
	partial := w.partial
	w.mu.Unlock()
	state := Active
	if partial != "" {
		state = Partial
	}
	r := w.r
	r.mu.Lock()
	r.st.Host, r.st.State, r.st.Detail, r.st.Setup = w.host, state, partial, setup
	r.logged = ""
	r.mu.Unlock()
	r.w.log.Info("changes on the server are pushed", "host", w.host, "prefix", r.t.Prefix, "setup", setup.Round(time.Millisecond))
	if w.gap {
		r.deliver(namespace.Change{Kind: namespace.ChangeTree, Dir: true})
	}
}

// emit passes on one change below the target's root.
func (w *watchRun) emit(c namespace.Change) {
	w.r.deliver(c)
}

// deliver maps c, relative to the target's root, into the namespace.
func (r *runner) deliver(c namespace.Change) {
	c.Path = join(r.t.Prefix, c.Path)
	r.mu.Lock()
	r.st.Changes++
	r.mu.Unlock()
	r.w.batch.add(c, r.t.Prefix)
}

func (w *watchRun) limited() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.limit
}

func (w *watchRun) lastLine() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.last
}

// activeFor is how long the run was active.
func (w *watchRun) activeFor() time.Duration {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.ready.IsZero() {
		return 0
	}
	return time.Since(w.ready)
}

func join(prefix, rel string) string {
	switch {
	case prefix == "":
		return rel
	case rel == "":
		return prefix
	}
	return prefix + "/" + rel
}
