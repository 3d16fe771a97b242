package transport

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"sshfsm/internal/testenv"
)

// TestMeasureThroughput compares read throughput over real ssh on loopback
// for channel counts and ciphers. It only runs with SSHFSM_MEASURE=1.
func TestMeasureThroughput(t *testing.T) {
	if os.Getenv("SSHFSM_MEASURE") == "" {
		t.Skip("set SSHFSM_MEASURE=1 to measure")
	}
	th := testenv.StartHost(t, "127.0.0.2")
	const size = 256 << 20
	f, _ := os.Create(filepath.Join(th.Dir, "big"))
	f.Truncate(size)
	f.Close()
	for _, cipher := range []string{"", "aes128-gcm@openssh.com", "chacha20-poly1305@openssh.com"} {
		for _, conns := range []int{1, 2, 3, 4} {
			for _, chunk := range []int{128 << 10, 1 << 20} {
				mbps := measureRead(t, th, cipher, conns, chunk, size)
				t.Logf("cipher=%-30q conns=%d chunk=%4dKiB  %6.0f MB/s", cipher, conns, chunk>>10, mbps)
			}
		}
	}
}

func measureRead(t *testing.T, th *testenv.Host, cipher string, conns, chunk, size int) float64 {
	o := sshOptions(th)
	o.Conns = conns
	if cipher != "" {
		o.SSHArgs = append(o.SSHArgs, "-oCiphers="+cipher)
	}
	h, err := Dial(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	waitUp(t, h, conns)
	rf, err := h.Remote().Open(bg, "big", os.O_RDONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer rf.Close(bg)
	<-rf.(*file).learned
	var next atomic.Int64
	var wg sync.WaitGroup
	start := time.Now()
	for range 4 { // like kernel readahead: a few reads in flight
		wg.Add(1)
		go func() {
			defer wg.Done()
			buf := make([]byte, chunk)
			for {
				off := next.Add(int64(chunk)) - int64(chunk)
				if off >= int64(size) {
					return
				}
				if _, err := rf.ReadAt(bg, buf, off); err != nil && off+int64(chunk) < int64(size) {
					panic(fmt.Sprint(err))
				}
			}
		}()
	}
	wg.Wait()
	return float64(size) / time.Since(start).Seconds() / 1e6
}
