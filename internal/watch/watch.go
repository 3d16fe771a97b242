// Package watch pushes changes made on the servers to the mount: a watcher
// (inotifywait) runs on the server of each branch, over that branch's SSH
// connection, and the paths it reports become namespace changes, gathered
// over a short window, for the mount to drop what it caches about them.
package watch

import (
	"context"
	"io"
	"log/slog"
	"sync"
	"time"

	"sshfsm/internal/namespace"
)

// Host is a connected server (transport.Host).
type Host interface {
	// Exec runs a short command; its standard input is empty.
	Exec(ctx context.Context, command string, read func(io.Reader) error) error
	// Stream runs a long one whose standard input stays open until it
	// returns, passing each line of its standard error to errLine.
	Stream(ctx context.Context, command string, out func(io.Reader) error, errLine func(string)) error
}

// Candidate is one host that can watch a tree. A replica set has several,
// the preferred first; one watcher on one of them is enough, since they
// show the same storage.
type Candidate struct {
	Name string // for the status and logs: [user@]host
	// Connected returns the host and the tree's absolute directory on it,
	// or nil while the host is not connected.
	Connected func() (Host, string)
	// Changed returns a channel closed at the next change of the host's
	// connection (a reconnect, a host reached at last).
	Changed func() <-chan struct{}
}

// Target is one remote tree to watch.
type Target struct {
	Prefix     string // namespace path of the tree's root (namespace.Trees)
	Candidates []Candidate
}

// Options configure a Watcher.
type Options struct {
	Logger *slog.Logger
	// Window is how long changes are gathered before they are passed on;
	// 0 means DefaultWindow.
	Window time.Duration
	// Writes pushes every write to a file and every truncation, not only
	// files closed after writing (watch=writes; see watchedEvents).
	Writes bool
	// Network watches trees on a network or cluster file system of the
	// server too (watch=yes; see networkFS).
	Network bool

	program    string        // run on the server; "" means "inotifywait" (tests)
	minBackoff time.Duration // 0 means minBackoff (tests)
}

// DefaultWindow gathers a burst (a checkout, an unpacked archive) into a
// few batches while keeping the delay small against the second users
// expect.
const DefaultWindow = 25 * time.Millisecond

// State says whether changes of a tree are pushed.
type State string

// States.
const (
	Starting State = "starting" // the watcher is setting up its watches
	Active   State = "active"   // changes are pushed
	Partial  State = "partial"  // changes are pushed, but not from every directory
	Off      State = "off"      // changes are not pushed; the timeouts apply
)

// Status is the state of one target's watcher.
type Status struct {
	Host   string // the candidate running it (or trying, or that failed)
	State  State
	Detail string // why it is off, or what is partial
	// Setup is how long the watcher took to set up its watches, once
	// active.
	Setup time.Duration
	// Changes counts the changes received.
	Changes uint64
}

// Watcher runs one watcher per target and delivers their changes.
type Watcher struct {
	o       Options
	log     *slog.Logger
	runners []*runner
	batch   *coalescer
	ctx     context.Context
	cancel  context.CancelFunc
	wg      sync.WaitGroup
	once    sync.Once // Start
}

// New prepares a watcher of targets; Start starts it.
func New(targets []Target, o Options) *Watcher {
	if o.Window <= 0 {
		o.Window = DefaultWindow
	}
	if o.program == "" {
		o.program = "inotifywait"
	}
	if o.minBackoff <= 0 {
		o.minBackoff = minBackoff
	}
	w := &Watcher{o: o, log: o.Logger}
	if w.log == nil {
		w.log = slog.New(slog.DiscardHandler)
	}
	w.ctx, w.cancel = context.WithCancel(context.Background())
	w.batch = newCoalescer(o.Window)
	for _, t := range targets {
		w.runners = append(w.runners, newRunner(w, t))
	}
	return w
}

// Changes returns the channel of batches of changes, each sorted by path
// and holding a path once. It is closed by Close.
func (w *Watcher) Changes() <-chan []namespace.Change { return w.batch.out }

// Start starts the watchers in the background; it never waits for them.
func (w *Watcher) Start() {
	w.once.Do(func() {
		w.wg.Add(1 + len(w.runners))
		go func() {
			defer w.wg.Done()
			w.batch.run(w.ctx)
		}()
		for _, r := range w.runners {
			go func() {
				defer w.wg.Done()
				r.loop(w.ctx)
			}()
		}
	})
}

// Status returns the state of each target's watcher, in the order given
// to New.
func (w *Watcher) Status() []Status {
	st := make([]Status, len(w.runners))
	for i, r := range w.runners {
		st[i] = r.status()
	}
	return st
}

// Close stops the watchers, on the servers too, and closes Changes.
func (w *Watcher) Close() error {
	w.once.Do(func() {}) // not started: nothing will be
	w.cancel()
	w.wg.Wait()
	w.batch.close()
	return nil
}
