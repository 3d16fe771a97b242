package e2e

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"sshfsm/internal/control"
	"sshfsm/internal/testenv"
)

// watchdogMargin is added to a mount's timeout to make the age past which
// a request in flight fails the test. Every request to the server fails
// at the timeout if unanswered, and a request of the kernel waits on at
// most one such request at a time: its answer is due about then. The
// margin covers what comes on top on the test machine, where two CPU
// burners run beside a -race build: the timers that end a request fire
// late, the channel's ssh process is killed and reaped, and the watchdog
// sees a request only every watchdogEvery; under such load requests were
// seen to end within 0.1 s of the timeout. It is half the timeout, at
// most 5 s: less than a second timeout, so that a request that waits out
// two server requests in a row is caught, and far below what must never
// pass (a request waiting for a link that never comes back, or one in
// flight for minutes).
func watchdogMargin(timeout time.Duration) time.Duration {
	return min(timeout/2, 5*time.Second)
}

// watchdogEvery is how often the watchdog asks the daemon.
const watchdogEvery = 250 * time.Millisecond

// watchdog asks a mount's daemon, while a test runs, how old the oldest
// request it is answering is, and fails the test when one is older than
// its limit.
type watchdog struct {
	t     *testing.T
	m     *Mount
	limit time.Duration
	stop  chan struct{}
	done  chan struct{}

	mu       sync.Mutex
	maxAge   time.Duration // the oldest request seen
	maxKind  string
	polls    int
	failures int       // queries the daemon did not answer
	answered time.Time // when the daemon last answered
	reported bool
}

// startWatchdog watches m until the test ends, failing t if any request
// is in flight for longer than timeout+watchdogMargin(timeout), or if the
// daemon stops answering for that long (a daemon stuck as a whole hides
// its requests). It logs the oldest request it saw.
func startWatchdog(t *testing.T, m *Mount, timeout time.Duration) *watchdog {
	t.Helper()
	w := &watchdog{t: t, m: m, limit: timeout + watchdogMargin(timeout),
		stop: make(chan struct{}), done: make(chan struct{})}
	// A daemon in the foreground answers a little after its mount appears.
	testenv.EventuallyNoError(t, "the daemon answering its status", func() error {
		_, err := (control.Client{}).Query(m.Dir)
		return err
	})
	w.answered = time.Now()
	go w.run()
	t.Cleanup(w.close)
	return w
}

func (w *watchdog) run() {
	defer close(w.done)
	tick := time.NewTicker(watchdogEvery)
	defer tick.Stop()
	for {
		select {
		case <-w.stop:
			return
		case <-tick.C:
		}
		w.check()
	}
}

// check asks the daemon once.
func (w *watchdog) check() {
	st, err := (control.Client{}).Query(w.m.Dir)
	w.mu.Lock()
	defer w.mu.Unlock()
	w.polls++
	if err != nil {
		w.failures++
		if silent := time.Since(w.answered); silent > w.limit && !w.reported {
			w.reported = true
			w.t.Errorf("watchdog: the daemon of %s has not answered for %v: %v", w.m.Dir, silent.Round(time.Millisecond), err)
		}
		return
	}
	w.answered = time.Now()
	r := st.Requests
	if r == nil {
		if !w.reported {
			w.reported = true
			w.t.Errorf("watchdog: the daemon of %s does not report its requests in flight", w.m.Dir)
		}
		return
	}
	age := time.Duration(r.OldestSeconds * float64(time.Second))
	if age > w.maxAge {
		w.maxAge, w.maxKind = age, r.OldestKind
	}
	if age > w.limit && !w.reported {
		w.reported = true // once: the same request stays old
		w.t.Errorf("watchdog: a %s request has been in flight for %v, longer than the limit %v (%d in flight); hosts: %s",
			r.OldestKind, age.Round(time.Millisecond), w.limit, r.InFlight, hostsLine(st))
	}
}

// hostsLine sums up the hosts of a status for a failure message.
func hostsLine(st *control.Status) string {
	var parts []string
	for _, b := range st.Branches {
		for _, h := range b.Hosts {
			parts = append(parts, fmt.Sprintf("%s %s, %d/%d channels, %d sftp requests in flight",
				h.Name, h.State, h.ChannelsUp, h.Channels, h.InFlight))
		}
	}
	return strings.Join(parts, "; ")
}

// close stops the watchdog and logs what it saw.
func (w *watchdog) close() {
	select {
	case <-w.stop:
		return
	default:
	}
	close(w.stop)
	<-w.done
	w.check() // a request hanging as the test ends counts too
	w.mu.Lock()
	defer w.mu.Unlock()
	w.t.Logf("watchdog: oldest request seen in flight %v (%s), limit %v; %d polls, %d unanswered",
		w.maxAge.Round(time.Millisecond), w.maxKind, w.limit, w.polls, w.failures)
}

// oldest returns the oldest request the watchdog has seen so far.
func (w *watchdog) oldest() (time.Duration, string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.maxAge, w.maxKind
}
