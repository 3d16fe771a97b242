package e2e

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
	"time"

	"sshfsm/internal/testenv"
)

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
			write := func(name, data string, mtime time.Time) {
				t.Helper()
				p := filepath.Join(dir, name)
				if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
					t.Fatal(err)
				}
				if err := os.Chtimes(p, mtime, mtime); err != nil {
					t.Fatal(err)
				}
			}
			if err := os.MkdirAll(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			before := map[string]string{"modify": "aaaa", "replace": "one", "truncate": "123456", "delete": "gone"}
			for name, data := range before {
				write(name, data, older)
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

			write("modify", "bbbb", old) // same size, another mtime
			write(".new", "two, longer", old)
			if err := os.Rename(filepath.Join(dir, ".new"), filepath.Join(dir, "replace")); err != nil {
				t.Fatal(err)
			}
			if err := os.Truncate(filepath.Join(dir, "truncate"), 3); err != nil {
				t.Fatal(err)
			}
			if err := os.Chtimes(filepath.Join(dir, "truncate"), old, old); err != nil {
				t.Fatal(err)
			}
			if err := os.Remove(filepath.Join(dir, "delete")); err != nil {
				t.Fatal(err)
			}
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
