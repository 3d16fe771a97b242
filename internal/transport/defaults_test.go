package transport

import (
	"testing"

	"sshfsm/internal/defaults"
)

// A caller that leaves Conns and Timeout zero gets what a mount gets by
// default: the values config declares for max_conns and timeout.
func TestZeroOptionsGetTheMountDefaults(t *testing.T) {
	h := newHost(Options{})
	defer h.cancel()
	if h.o.Conns != defaults.Conns || len(h.chans) != defaults.Conns {
		t.Errorf("channels: %d (%d slots), want max_conns' default %d", h.o.Conns, len(h.chans), defaults.Conns)
	}
	if h.o.Timeout != defaults.Timeout {
		t.Errorf("timeout: %v, want timeout's default %v", h.o.Timeout, defaults.Timeout)
	}
}
