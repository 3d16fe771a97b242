package transport

import (
	"math/bits"
	"sync"
	"sync/atomic"
)

// lease is a pooled private buffer shared by a caller and the goroutines
// running its requests: the last holder to release it returns it to the
// pool, so no request ever writes into memory the caller has handed back.
type lease struct {
	b    []byte
	cls  int    // pool class; -1: not pooled
	done func() // for a caller's own buffer: called instead of pooling
	refs atomic.Int32
}

const (
	minClassShift = 12 // 4 KiB
	numClasses    = 11 // up to 4 MiB
)

var leasePools [numClasses]sync.Pool

// getLease returns a buffer of at least n bytes, held once.
func getLease(n int) *lease {
	cls := 0
	if n > 1<<minClassShift {
		cls = bits.Len(uint(n-1)) - minClassShift
	}
	var l *lease
	if cls < numClasses {
		if v := leasePools[cls].Get(); v != nil {
			l = v.(*lease)
		} else {
			l = &lease{b: make([]byte, 1<<(cls+minClassShift)), cls: cls}
		}
	} else {
		l = &lease{b: make([]byte, n), cls: -1}
	}
	l.refs.Store(1)
	return l
}

// ownLease wraps a caller's buffer, held once; done runs at the last
// release.
func ownLease(b []byte, done func()) *lease {
	l := &lease{b: b, cls: -1, done: done}
	l.refs.Store(1)
	return l
}

func (l *lease) hold() {
	if l != nil {
		l.refs.Add(1)
	}
}

func (l *lease) release() {
	if l == nil || l.refs.Add(-1) != 0 {
		return
	}
	switch {
	case l.done != nil:
		l.done()
	case l.cls >= 0:
		leasePools[l.cls].Put(l)
	}
}
