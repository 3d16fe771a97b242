package transport

import (
	"testing"
	"time"

	"sshfsm/internal/remote"
)

// Up follows the channels: false once the only channel is cut and the
// server refuses new ones, true again after it accepts them; Changed fires
// at each step.
func TestHealthFollowsChannels(t *testing.T) {
	h, ts, _ := dialTest(t, 1, nil)
	hr := h.Remote().(remote.Health)
	if !hr.Up() {
		t.Fatal("Up = false with a live channel")
	}
	waitFor := func(want bool) {
		t.Helper()
		deadline := time.After(5 * time.Second)
		for {
			changed := hr.Changed() // taken before Up, so no change is missed
			if hr.Up() == want {
				return
			}
			select {
			case <-changed:
			case <-deadline:
				t.Fatalf("Up did not become %v", want)
			}
		}
	}
	ts.setRefuse(true)
	ts.stream(0).drop()
	waitFor(false)
	ts.setRefuse(false)
	waitFor(true)
}
