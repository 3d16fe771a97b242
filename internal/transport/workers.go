package transport

import (
	"sync"
	"time"
)

// workers runs the blocking pkg/sftp calls of requests. A fresh goroutine
// per request starts with a small stack and grows it on every call through
// pkg/sftp, a measurable share of the CPU at tens of thousands of requests
// a second; these goroutines stay for a while and keep their grown stacks.
// There is no limit: a request never waits for a worker.
type workers struct {
	idle time.Duration
	jobs chan func() // unbuffered: a send succeeds only into a waiting worker
}

func newWorkers(idle time.Duration) *workers {
	return &workers{idle: idle, jobs: make(chan func())}
}

// do runs f on an idle worker, or on a new one.
func (w *workers) do(f func()) {
	select {
	case w.jobs <- f:
	default:
		go w.loop(f)
	}
}

func (w *workers) loop(f func()) {
	t := time.NewTimer(w.idle)
	defer t.Stop()
	for {
		f()
		t.Reset(w.idle)
		select {
		case f = <-w.jobs:
		case <-t.C:
			return
		}
	}
}

// sharedWorkers serves every Host of the process.
var sharedWorkers = sync.OnceValue(func() *workers { return newWorkers(10 * time.Second) })
