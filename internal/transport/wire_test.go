package transport

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"runtime"
	"sync"
	"testing"
)

// Packets sent at the same time by many goroutines, small ones (queued for
// the goroutine writing), large ones (spliced into the pipe) and pkg/sftp's
// piecewise ones, arrive whole and intact, each exactly once.
func TestWireWriterConcurrentPackets(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	ww := newWireWriter(w, &Host{}, newRawReads())
	if !ww.pipe {
		t.Fatal("an os.Pipe is not recognised as a pipe: large packets would be copied")
	}
	sendConcurrentPackets(t, r, w, ww)
}

// The same through a socket, as to ssh: large data goes through the relay
// pipe, including data larger than the relay holds.
func TestWireWriterConcurrentPacketsSocket(t *testing.T) {
	r, w, err := socketPair()
	if err != nil {
		t.Fatal(err)
	}
	ww := newWireWriter(w, &Host{}, newRawReads())
	if ww.relay == nil {
		t.Fatal("a socket gets no relay pipe: large packets would be copied")
	}
	sendConcurrentPackets(t, r, ww, ww)
}

func sendConcurrentPackets(t *testing.T, r io.ReadCloser, w io.Closer, ww *wireWriter) {
	t.Helper()
	defer r.Close()
	const senders, each = 8, 200
	var (
		mu   sync.Mutex
		sent = map[uint32][]byte{} // id -> packet body after the length
		// The data handed over, kept alive until read, as a request's
		// buffer is until answered: spliced pages are not the GC's to reuse.
		handed [][]byte
	)
	packet := func(id uint32, n int) (hdr, data []byte) {
		data = make([]byte, n)
		for i := range data {
			data[i] = byte(int(id)*31 + i)
		}
		hdr = binary.BigEndian.AppendUint32(nil, uint32(5+n))
		hdr = append(hdr, fxpWrite)
		hdr = binary.BigEndian.AppendUint32(hdr, id)
		mu.Lock()
		sent[id] = append(append([]byte{}, hdr[4:]...), data...)
		handed = append(handed, data)
		mu.Unlock()
		return hdr, data
	}
	got := map[uint32][]byte{}
	readErr := make(chan error, 1)
	go func() {
		br := bufio.NewReader(r)
		for {
			var l [4]byte
			if _, err := io.ReadFull(br, l[:]); err != nil {
				if err == io.EOF {
					err = nil
				}
				readErr <- err
				return
			}
			body := make([]byte, binary.BigEndian.Uint32(l[:]))
			if _, err := io.ReadFull(br, body); err != nil {
				readErr <- fmt.Errorf("packet cut short: %v", err)
				return
			}
			got[binary.BigEndian.Uint32(body[1:5])] = body
		}
	}()
	var wg sync.WaitGroup
	for s := range senders {
		wg.Go(func() {
			for i := range each {
				id := uint32(s*each + i)
				switch i % 4 {
				case 0: // large: spliced; data unchanged until read below
					n := 64<<10 + i
					if i%40 == 0 {
						n = 3<<19 + i // more than a pipe holds
					}
					hdr, data := packet(id, n)
					if err := ww.inject(hdr, data); err != nil {
						t.Error(err)
						return
					}
				case 1: // pkg/sftp writes one packet at a time, in pieces:
					// sender 0 plays it; the others inject copied data.
					hdr, data := packet(id, 3000)
					if s != 0 {
						if err := ww.inject(hdr, data); err != nil {
							t.Error(err)
							return
						}
						continue
					}
					if _, err := ww.Write(hdr); err != nil {
						t.Error(err)
						return
					}
					if _, err := ww.Write(data); err != nil {
						t.Error(err)
						return
					}
				default: // small: may be queued
					hdr, _ := packet(id, 0)
					if err := ww.inject(hdr, nil); err != nil {
						t.Error(err)
						return
					}
				}
			}
		})
	}
	wg.Wait()
	w.Close()
	if err := <-readErr; err != nil {
		t.Fatal(err)
	}
	runtime.KeepAlive(handed)
	if len(got) != len(sent) {
		t.Fatalf("%d packets arrived, %d sent", len(got), len(sent))
	}
	for id, want := range sent {
		if string(got[id]) != string(want) {
			t.Fatalf("packet %d arrived damaged (%d bytes, want %d)", id, len(got[id]), len(want))
		}
	}
}
