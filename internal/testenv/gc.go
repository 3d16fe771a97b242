package testenv

import (
	"runtime"
	"runtime/debug"
	"testing"
)

// HoldGC turns the garbage collector off until t ends, then collects once.
//
// A test that maps a file of a FUSE mount served by its own process (an
// in-process server, or a proxy its daemon's link goes through) must hold
// it while the mapping is touched: a thread waiting in a page fault on the
// mount cannot be stopped, so a collection's stop-the-world would wait for
// it forever while stopping the goroutines that are to answer the fault.
func HoldGC(t testing.TB) {
	old := debug.SetGCPercent(-1)
	t.Cleanup(func() {
		debug.SetGCPercent(old)
		runtime.GC()
	})
}
