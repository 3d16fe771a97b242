package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"sshfsm/internal/control"
	"sshfsm/internal/testenv"
)

// TestRequestsWhileReconnectingWithinTimeout takes a mount's server away
// (sshd and its sessions killed: every channel breaks and every redial is
// refused, so the waits between redials grow) and makes requests of
// programs one after another for longer than the redials' wait reaches
// meanwhile: each finds no channel and must fail within the timeout (the
// watchdog's limit), not wait for the next redial. Once the server is
// back, the mount answers again without a remount.
func TestRequestsWhileReconnectingWithinTimeout(t *testing.T) {
	const timeout = 2 * time.Second
	const dirs = 10
	h := testenv.StartHost(t, "127.0.0.10")
	for i := range dirs {
		d := filepath.Join(h.Dir, fmt.Sprint("d", i))
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
		writeServerFile(t, filepath.Join(d, "f"), 4096, uint64(i))
	}
	// No listing ahead: each directory is asked for only when used.
	m := mount(t, h, mountSpec{opts: []string{fmt.Sprintf("timeout=%g", timeout.Seconds()), "prefetch_depth=0"}})
	t.Cleanup(func() { testenv.AbortFUSE(m.Dir) }) // releases any call still waiting
	wd := startWatchdog(t, m, timeout)

	h.Kill()
	testenv.Eventually(t, "every channel down", func() bool {
		st, err := (control.Client{}).Query(m.Dir)
		if err != nil {
			return false
		}
		for _, b := range st.Branches {
			for _, hs := range b.Hosts {
				if hs.ChannelsUp > 0 {
					return false
				}
			}
		}
		return true
	})
	down := time.Now()
	for i := range dirs - 1 {
		start := time.Now()
		var err error
		within(t, testenv.Patience(), "a stat while the server is away", func() error {
			_, err = os.Stat(m.Path(fmt.Sprint("d", i), "f"))
			return nil
		})
		t.Logf("stat of d%d/f %v into the outage: %v after %v", i, start.Sub(down).Round(time.Millisecond),
			err, time.Since(start).Round(time.Millisecond))
		if err == nil {
			t.Errorf("a stat of a file never looked up succeeded while the server was away")
		}
	}
	age, kind := wd.oldest()
	t.Logf("oldest request seen during the outage (%v): %v (%s)", time.Since(down).Round(time.Millisecond), age.Round(time.Millisecond), kind)
	if err := h.Restart(); err != nil {
		t.Fatal(err)
	}
	back := time.Now()
	testenv.EventuallyNoError(t, "a stat once the server is back", func() error {
		_, err := os.Stat(m.Path(fmt.Sprint("d", dirs-1), "f"))
		return err
	})
	t.Logf("the mount answered %v after the server came back", time.Since(back).Round(time.Millisecond))
}
