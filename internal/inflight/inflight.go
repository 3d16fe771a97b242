// Package inflight keeps, for every request a server is answering, when it
// began and what kind it is, so that the oldest can be reported: a request
// that waits far longer than its timeout is a hang, and `sshfsm status`
// (and the fault tests' watchdog) must see it while it lasts.
//
// It sits on the hot path of every FUSE request, so beginning and ending
// one costs two atomic stores and a compare-and-swap on a slot of its own
// (found from a hint, such as the kernel's request id): no lock shared by
// all requests, no allocation. Reading the table scans every slot; it is
// done only when someone asks.
package inflight

import (
	"sync/atomic"
	"time"
)

// Slots is how many requests the table tracks at once. The kernel keeps
// at most max_background (64) background requests in flight and one per
// blocked thread otherwise; a request beyond Slots is counted (Overflow)
// but its age is not known.
const Slots = 1024

// claimed marks a slot taken whose start is not yet written.
const claimed = -1

// slot is one request: its start in Unix nanoseconds (0 when free) and its
// kind. Padded to a cache line, so that requests on other CPUs do not
// bounce each other's lines.
type slot struct {
	start atomic.Int64
	kind  atomic.Int32
	_     [52]byte
}

// Table tracks the requests in flight. The zero Table is ready to use.
type Table struct {
	slots    [Slots]slot
	overflow atomic.Int64
	now      func() int64 // Unix nanoseconds; nil is the clock
}

// Token is the handle of one begun request, for End.
type Token int32

// none is the token of a request the table had no room for.
const none Token = -1

func (t *Table) clock() int64 {
	if t.now != nil {
		return t.now()
	}
	return time.Now().UnixNano()
}

// Begin records a request of kind beginning now. hint picks the first slot
// tried (any number that differs between concurrent requests).
func (t *Table) Begin(hint uint64, kind int32) Token {
	for i := range uint64(Slots) {
		s := &t.slots[(hint+i)%Slots]
		if s.start.Load() == 0 && s.start.CompareAndSwap(0, claimed) {
			s.kind.Store(kind)
			s.start.Store(t.clock())
			return Token((hint + i) % Slots)
		}
	}
	t.overflow.Add(1)
	return none
}

// End records the end of the request Begin returned tok for.
func (t *Table) End(tok Token) {
	if tok == none {
		t.overflow.Add(-1)
		return
	}
	t.slots[tok].start.Store(0)
}

// Snapshot is the table at one moment.
type Snapshot struct {
	Count int           // requests in flight, Overflow included
	Age   time.Duration // the oldest one's age; 0 when none
	Kind  int32         // the oldest one's kind
	// Overflow counts requests beyond Slots, whose age is not known.
	Overflow int
}

// Oldest returns the number of requests in flight and the oldest one.
func (t *Table) Oldest() Snapshot {
	now := t.clock()
	var s Snapshot
	oldest := int64(0)
	for i := range t.slots {
		start := t.slots[i].start.Load()
		if start == 0 {
			continue
		}
		s.Count++
		if start == claimed {
			continue // beginning as we look: age 0
		}
		if oldest == 0 || start < oldest {
			oldest, s.Kind = start, t.slots[i].kind.Load()
		}
	}
	if oldest != 0 {
		s.Age = max(time.Duration(now-oldest), 0)
	}
	s.Overflow = int(t.overflow.Load())
	s.Count += s.Overflow
	return s
}
