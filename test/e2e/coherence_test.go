package e2e

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"sshfsm/internal/control"
	"sshfsm/internal/testenv"
)

// A change made directly in the server's directory while a mount shows it.
type serverChange string

const (
	changeModify   serverChange = "modify"   // rewritten in place: same size, new content, new mtime
	changeReplace  serverChange = "replace"  // another file renamed over it
	changeTruncate serverChange = "truncate" // cut short, new mtime
	changeRemove   serverChange = "delete"   // removed
)

// writeDated writes data to p and dates it mtime.
func writeDated(t *testing.T, p string, data []byte, mtime time.Time) {
	t.Helper()
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(p, mtime, mtime); err != nil {
		t.Fatal(err)
	}
}

// changeOnServer applies c to dir/name on the server's side: after it,
// the file holds data (modify, replace; the first len(data) bytes for
// truncate) dated mtime, or is gone (remove).
func changeOnServer(t *testing.T, dir, name string, c serverChange, data []byte, mtime time.Time) {
	t.Helper()
	p := filepath.Join(dir, name)
	switch c {
	case changeModify:
		writeDated(t, p, data, mtime)
	case changeReplace:
		tmp := filepath.Join(dir, ".new-"+name)
		writeDated(t, tmp, data, mtime)
		if err := os.Rename(tmp, p); err != nil {
			t.Fatal(err)
		}
	case changeTruncate:
		if err := os.Truncate(p, int64(len(data))); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(p, mtime, mtime); err != nil {
			t.Fatal(err)
		}
	case changeRemove:
		if err := os.Remove(p); err != nil {
			t.Fatal(err)
		}
	default:
		t.Fatalf("unknown change %q", c)
	}
}

// Files changed directly on the server while mounted, without the change
// watcher: each coherence mode shows what it promises. auto: once the
// timeouts passed, the next open sees the change; strict: the next open
// sees it at once; immutable: the mount keeps showing what it saw
// (documented staleness), contents included, from its caches.
func TestCoherenceModes(t *testing.T) {
	h := testenv.StartHost(t, "127.0.0.2")
	for _, c := range []struct {
		mode  string
		opts  []string
		wait  time.Duration
		fresh bool // the change is seen
	}{
		{"auto", []string{"attr_timeout=1", "entry_timeout=1", "negative_timeout=1", "dcache_timeout=1"}, 1500 * time.Millisecond, true},
		{"strict", nil, 0, true},
		{"immutable", nil, 1500 * time.Millisecond, false},
	} {
		t.Run(c.mode, func(t *testing.T) {
			dir := filepath.Join(h.Dir, c.mode)
			older, old := time.Now().Add(-2*time.Hour), time.Now().Add(-time.Hour)
			if err := os.MkdirAll(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			before := map[string]string{"modify": "aaaa", "replace": "one", "truncate": "123456", "delete": "gone"}
			for name, data := range before {
				writeDated(t, filepath.Join(dir, name), []byte(data), older)
			}
			opts := append([]string{"cache=" + c.mode, "watch=no"}, c.opts...)
			// Each mode mounts its own directory: an immutable mount would
			// trust listings other modes' mounts kept of a shared one.
			m := mount(t, h, mountSpec{opts: opts, dest: h.Alias + ":" + dir})
			for name, data := range before {
				if got := readString(t, m.Path(name)); got != data {
					t.Fatalf("%s before the change: %q, want %q", name, got, data)
				}
			}

			changeOnServer(t, dir, "modify", changeModify, []byte("bbbb"), old) // same size, another mtime
			changeOnServer(t, dir, "replace", changeReplace, []byte("two, longer"), old)
			changeOnServer(t, dir, "truncate", changeTruncate, []byte("123"), old)
			changeOnServer(t, dir, "delete", changeRemove, nil, old)
			time.Sleep(c.wait)

			after := map[string]string{"modify": "bbbb", "replace": "two, longer", "truncate": "123"}
			for name, data := range after {
				want := data
				if !c.fresh {
					want = before[name]
				}
				got, err := os.ReadFile(m.Path(name))
				if err != nil || string(got) != want {
					t.Errorf("%s after the change: %q, %v; want %q", name, got, err, want)
				}
				fi, err := os.Stat(m.Path(name))
				if err != nil || fi.Size() != int64(len(want)) {
					t.Errorf("%s after the change: stat %v, %v; want size %d", name, fi, err, len(want))
				}
			}
			got, err := os.ReadFile(m.Path("delete"))
			switch {
			case c.fresh && !errors.Is(err, fs.ErrNotExist):
				t.Errorf("delete after the change: %q, %v; want ENOENT", got, err)
			case !c.fresh && (err != nil || string(got) != before["delete"]):
				t.Errorf("delete after the change: %q, %v; want the content seen before", got, err)
			}
		})
	}
}

// pushedFile is one file of TestCoherencePushed: what it holds before and
// after its change (after is nil once deleted).
type pushedFile struct {
	name          string
	change        serverChange
	before, after []byte
	polled        bool // read until it shows the change; else read once, a second after it
}

// pushedFiles makes, for each change, a small file and one of several disk
// cache blocks (1 MiB), twice: one to poll, one to read only once.
func pushedFiles() []*pushedFile {
	var files []*pushedFile
	seed := uint64(1000)
	bytesOf := func(n int) []byte {
		seed++
		b := make([]byte, n)
		io.ReadFull(content(seed), b)
		return b
	}
	for _, polled := range []bool{true, false} {
		for _, big := range []bool{false, true} {
			size := 7
			if big {
				size = 3*mib + 12345
			}
			for _, c := range []serverChange{changeModify, changeReplace, changeTruncate, changeRemove} {
				f := &pushedFile{change: c, before: bytesOf(size), polled: polled}
				f.name = fmt.Sprintf("%s-%d", c, size)
				if !polled {
					f.name += "-once"
				}
				switch c {
				case changeModify:
					// Same size; for the large file only the bytes around
					// the boundary of blocks 1 and 2 and the last one
					// change, the other blocks are the same.
					f.after = bytes.Clone(f.before)
					at, n := 0, size
					if big {
						at, n = 2*mib-32<<10, 64<<10
					}
					copy(f.after[at:at+n], bytesOf(n))
					f.after[size-1] ^= 0xff
				case changeReplace:
					f.after = bytesOf(size*5/6 + 3)
				case changeTruncate:
					f.after = f.before[:size/3]
				}
				files = append(files, f)
			}
		}
	}
	return files
}

// readNoStat opens p and reads it to the end without a stat first: a stat
// would refresh the attributes the open relies on, hiding a stale open.
func readNoStat(p string) ([]byte, error) {
	f, err := os.Open(p)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(f)
}

// shows compares what a read of f through the mount gave with what the
// server holds after the change; "" when they agree.
func (f *pushedFile) shows(got []byte, err error) string {
	switch {
	case f.after == nil && errors.Is(err, fs.ErrNotExist):
		return ""
	case f.after == nil:
		return fmt.Sprintf("%s: read %d bytes, %v after it was deleted on the server; want ENOENT", f.name, len(got), err)
	case err != nil:
		return fmt.Sprintf("%s: %v; want the server's %d bytes", f.name, err, len(f.after))
	case bytes.Equal(got, f.after):
		return ""
	}
	i := 0
	for i < len(got) && i < len(f.after) && got[i] == f.after[i] {
		i++
	}
	what := "other bytes"
	if bytes.Equal(got, f.before) {
		what = "the version before the change"
	}
	return fmt.Sprintf("%s: read %d bytes (%s), differing from offset %d; want the server's %d bytes", f.name, len(got), what, i, len(f.after))
}

// Files changed directly on the server, with the change watcher and the
// disk cache on and timeouts far longer than the test: every coherence
// mode shows each change within a second, the contents of files of one
// and of several cache blocks read before included, as the server has
// them. The files are dated in the past so that the disk cache keeps both
// versions; the reads open the file without a stat first, so a stale
// first open after a pushed change shows.
func TestCoherencePushed(t *testing.T) {
	h := testenv.StartHost(t, "127.0.0.2")
	for _, c := range []struct {
		mode string
		opts []string
	}{
		{"auto", []string{"cache_timeout=60"}},
		{"strict", []string{"entry_timeout=60", "negative_timeout=60", "dcache_timeout=60"}},
		{"immutable", nil},
	} {
		t.Run(c.mode, func(t *testing.T) {
			dir := filepath.Join(h.Dir, "pushed-"+c.mode)
			older, old := time.Now().Add(-2*time.Hour), time.Now().Add(-time.Hour)
			if err := os.MkdirAll(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			files := pushedFiles()
			var total int
			for _, f := range files {
				writeDated(t, filepath.Join(dir, f.name), f.before, older)
				total += len(f.before)
			}
			cacheDir := filepath.Join(t.TempDir(), "cache")
			opts := append([]string{"cache=" + c.mode, "cache_dir=" + cacheDir}, c.opts...)
			m := mount(t, h, mountSpec{opts: opts, dest: h.Alias + ":" + dir})
			waitWatchActive(t, m.Dir, 15*time.Second)

			// Twice: the second open may be served by the disk cache
			// (passthrough in immutable mode, as root).
			for range 2 {
				for _, f := range files {
					got, err := readNoStat(m.Path(f.name))
					if err != nil || !bytes.Equal(got, f.before) {
						t.Fatalf("%s before the change: %d bytes, %v; want the server's %d bytes", f.name, len(got), err, len(f.before))
					}
				}
			}
			if d := status(t, m.Dir).Disk; d == nil || d.Entries < int64(len(files)) || d.Bytes < int64(total) {
				t.Fatalf("disk cache after reading %d files of %d bytes: %+v", len(files), total, d)
			}

			for _, f := range files {
				changeOnServer(t, dir, f.name, f.change, f.after, old)
			}
			changed := time.Now()

			// Each polled file is read again until it shows its change; an
			// open begun more than a second after the change must not be
			// needed. Every file is polled on its own, so the time taken
			// to read the large ones does not count against the others.
			deadline := changed.Add(time.Second)
			type result struct {
				begun time.Time
				err   string
			}
			results := make(chan result, len(files))
			polled := 0
			for _, f := range files {
				if f.polled {
					polled++
					go func() {
						begun, err := f.pollUntilShown(m.Path(f.name), deadline)
						results <- result{begun, err}
					}()
				}
			}
			var latest time.Time
			for range polled {
				select {
				case r := <-results:
					if r.err != "" {
						t.Error(r.err)
					}
					if r.begun.After(latest) {
						latest = r.begun
					}
				case <-time.After(time.Until(deadline) + 10*time.Second):
					t.Fatalf("a read of a polled file still blocks 10s after the deadline")
				}
			}
			t.Logf("the polled files showed every change in a read begun %v after it was made", latest.Sub(changed).Round(time.Millisecond))

			// Once the promised second passed, the first open of each
			// other file shows its change, and so does a stat after it.
			time.Sleep(time.Until(changed.Add(time.Second)))
			within(t, 10*time.Second, "reading the files read once", func() error {
				for _, f := range files {
					if f.polled {
						continue
					}
					if s := f.shows(readNoStat(m.Path(f.name))); s != "" {
						t.Error("first open a second after the change: " + s)
						continue
					}
					if fi, err := os.Lstat(m.Path(f.name)); f.after != nil && (err != nil || fi.Size() != int64(len(f.after))) {
						t.Errorf("%s: stat after the change: %v, %v; want size %d", f.name, fi, err, len(f.after))
					}
				}
				return nil
			})
		})
	}
}

// pollUntilShown reads p until it shows f's change and returns when the
// read that did began, or says what the last read showed if no open begun
// before deadline did.
func (f *pushedFile) pollUntilShown(p string, deadline time.Time) (time.Time, string) {
	for {
		begun := time.Now()
		s := f.shows(readNoStat(p))
		if s == "" {
			return begun, ""
		}
		if begun.After(deadline) {
			return begun, "still after a second of reading again: " + s
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// waitWatchActive waits up to d for every host of mnt to report change
// detection active.
func waitWatchActive(t *testing.T, mnt string, d time.Duration) {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		var states []string
		for _, b := range status(t, mnt).Branches {
			for _, h := range b.Hosts {
				if h.Watch != control.WatchActive {
					states = append(states, fmt.Sprintf("%s: %q %s", h.Name, h.Watch, h.WatchDetail))
				}
			}
		}
		if len(states) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("change detection not active after %v: %s", d, strings.Join(states, "; "))
		}
		time.Sleep(50 * time.Millisecond)
	}
}
