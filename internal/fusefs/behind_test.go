package fusefs

import (
	"context"
	"math/rand"
	"sync"
	"testing"
	"time"

	"sshfsm/internal/remote"
	"sshfsm/internal/testenv"
)

// orderedFile is a file whose server applies requests in order, so that
// attribute changes may go behind its writes. Its writes are answered
// once gate is closed; answer says what SetAttrsBehind does: "send",
// "refuse" (nothing sent), or "lose" (sent, then lost with the
// connection).
type orderedFile struct {
	slowFile
	gate   chan struct{}
	answer string

	mu      sync.Mutex // guards the fields below
	landed  int        // writes answered
	behind  int        // changes sent behind writes
	after   []int      // for each change sent by SetAttrs, the writes answered before
	applied []remote.SetAttr
}

func (f *orderedFile) WriteAtAsync(p []byte, off int64, release func(), done func(error)) {
	go func() {
		<-f.gate
		_, err := f.slowFile.WriteAtOwned(bg, p, off, release)
		f.mu.Lock()
		f.landed++
		f.mu.Unlock()
		done(err)
	}()
}

func (f *orderedFile) SetAttrsBehind(a remote.SetAttr, done func(error, bool)) bool {
	if f.answer == "refuse" {
		return false
	}
	f.mu.Lock()
	f.behind++
	f.mu.Unlock()
	go func() {
		<-f.gate
		if f.answer == "lose" {
			done(nil, true)
			return
		}
		f.mu.Lock()
		f.applied = append(f.applied, a)
		f.mu.Unlock()
		done(nil, false)
	}()
	return true
}

func (f *orderedFile) SetAttrs(_ context.Context, a remote.SetAttr) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.after = append(f.after, f.landed)
	f.applied = append(f.applied, a)
	return nil
}

func (f *orderedFile) counts() (behind int, after []int, applied []remote.SetAttr) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.behind, append([]int(nil), f.after...), append([]remote.SetAttr(nil), f.applied...)
}

// A mode and mtime queued behind a file's writes go out while the writes
// are still unanswered where the file can send them behind the writes;
// where it refuses, or the change is lost with its connection, the change
// goes again once every write is answered. Either way the wait ends with
// the change queued applied.
func TestWriterAttrsBehindWrites(t *testing.T) {
	for _, answer := range []string{"send", "refuse", "lose"} {
		t.Run(answer, func(t *testing.T) {
			f := &orderedFile{slowFile: slowFile{rnd: rand.New(rand.NewSource(1)), size: 64 << 10},
				gate: make(chan struct{}), answer: answer}
			w := newWriter(f, &node{}, 8<<20)
			data := make([]byte, 4096)
			const writes = 3
			for i := range writes {
				// Writes apart from each other: one request each.
				if err := w.write(bg, data, int64(i)*(1<<20)); err != nil {
					t.Fatal(err)
				}
			}
			mode := uint32(0o640)
			mtime := time.Date(2022, 3, 4, 5, 6, 7, 0, time.UTC)
			w.setAttrs(remote.SetAttr{Mode: &mode, Atime: &mtime, Mtime: &mtime})
			waited := make(chan error, 1)
			go func() {
				_, err := w.wait(bg)
				waited <- err
			}()
			if answer != "refuse" {
				testenv.Eventually(t, "the change sent behind the unanswered writes", func() bool {
					behind, _, _ := f.counts()
					return behind == 1
				})
			}
			close(f.gate)
			if err := <-waited; err != nil {
				t.Fatal(err)
			}
			behind, after, applied := f.counts()
			switch answer {
			case "send":
				if behind != 1 || len(after) != 0 {
					t.Errorf("sent behind %d, after the writes %v; want 1 and none", behind, after)
				}
			default:
				if len(after) != 1 || after[0] != writes {
					t.Errorf("after the writes: %v; want one change, sent once the %d writes were answered", after, writes)
				}
			}
			if len(applied) != 1 || *applied[0].Mode != mode || !applied[0].Mtime.Equal(mtime) {
				t.Errorf("applied %+v; want the one change queued", applied)
			}
		})
	}
}
