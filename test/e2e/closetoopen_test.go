package e2e

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"sshfsm/internal/netproxy"
	"sshfsm/internal/testenv"
)

// ctoLink is one way of reaching the test host: straight, or behind the
// latency proxy.
type ctoLink struct {
	name  string
	delay time.Duration // one way; 0: no proxy
}

var ctoLinks = []ctoLink{{"0ms", 0}, {"4msRTT", 2 * time.Millisecond}}

// ctoMountSpec returns how to mount dir of h over link with opts.
func ctoMountSpec(t *testing.T, h *testenv.Host, link ctoLink, dir string, opts ...string) mountSpec {
	spec := mountSpec{dest: h.Alias + ":" + dir, opts: opts}
	if link.delay > 0 {
		_, sshArgs, dest := proxied(t, h, netproxy.Symmetric(link.delay, 0))
		spec.sshArgs, spec.dest = sshArgs, strings.TrimSuffix(dest, h.Dir)+dir
	}
	return spec
}

// ctoChange is one change made on the server to a file a mount read
// before: the content before and after (nil: absent).
type ctoChange struct {
	name          string
	before, after []byte
	// apply makes the change in dir; nil writes after (or removes the
	// file) dating it an hour ago, as the other changes.
	apply func(t *testing.T, dir string)
	// remountOnly: a change only a new mount can see (an open sees the
	// same size and mtime).
	remountOnly bool
}

// ctoChanges are the changes every test of close-to-open consistency
// makes: modify (the "1" to "changed"), grow, shrink, replace by
// rename, delete, create, a rewrite of the same size dated the same
// second as the version read while that second was recent, and one dated
// back to the old version's second (touch -r, cp -p): only the server's
// ctime shows that one, which a new mount asks for.
func ctoChanges() []*ctoChange {
	old := time.Now().Add(-time.Hour).Truncate(time.Second)
	return []*ctoChange{
		{name: "a", before: []byte("1\n"), after: []byte("changed\n"),
			apply: func(t *testing.T, dir string) { // as echo does: dated now
				if err := os.WriteFile(filepath.Join(dir, "a"), []byte("changed\n"), 0o644); err != nil {
					t.Fatal(err)
				}
			}},
		{name: "grow", before: []byte("short"), after: []byte("short, and then much longer")},
		{name: "shrink", before: []byte("a long line of text"), after: []byte("a lo")},
		{name: "replaced", before: []byte("first version"), after: []byte("2nd, renamed over it"),
			apply: func(t *testing.T, dir string) {
				tmp := filepath.Join(dir, ".tmp-replaced")
				writeDated(t, tmp, []byte("2nd, renamed over it"), old)
				if err := os.Rename(tmp, filepath.Join(dir, "replaced")); err != nil {
					t.Fatal(err)
				}
			}},
		{name: "c", before: []byte("deleted\n")},
		{name: "b", after: []byte("2\n")},
		{name: "sametime", before: []byte("old same size 1"), after: []byte("old same size 2"), remountOnly: true,
			apply: func(t *testing.T, dir string) {
				p := filepath.Join(dir, "sametime")
				fi, err := os.Stat(p)
				if err != nil {
					t.Fatal(err)
				}
				writeDated(t, p, []byte("old same size 2"), fi.ModTime())
			}},
		{name: "samesecond", before: []byte("same size 1"), after: []byte("same size 2"),
			apply: func(t *testing.T, dir string) {
				p := filepath.Join(dir, "samesecond")
				fi, err := os.Stat(p)
				if err != nil {
					t.Fatal(err)
				}
				writeDated(t, p, []byte("same size 2"), fi.ModTime())
			}},
	}
}

// ctoPrepare writes the "before" files of cs into dir, dated two hours
// ago, but for the one rewritten within its second: dated an hour ahead,
// so that it is read while its second may still change it, whatever the
// test's pace.
func ctoPrepare(t *testing.T, dir string, cs []*ctoChange) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	older := time.Now().Add(-2 * time.Hour)
	for _, c := range cs {
		if c.before == nil {
			continue
		}
		mtime := older
		if c.name == "samesecond" {
			mtime = time.Now().Add(time.Hour).Truncate(time.Second)
		}
		writeDated(t, filepath.Join(dir, c.name), c.before, mtime)
	}
}

// ctoApply makes every change of cs in dir.
func ctoApply(t *testing.T, dir string, cs []*ctoChange) {
	t.Helper()
	old := time.Now().Add(-time.Hour)
	for _, c := range cs {
		switch {
		case c.apply != nil:
			c.apply(t, dir)
		case c.after == nil:
			if err := os.Remove(filepath.Join(dir, c.name)); err != nil {
				t.Fatal(err)
			}
		default:
			writeDated(t, filepath.Join(dir, c.name), c.after, old)
		}
	}
}

// ctoReadAll lists dir through the mount and reads every file in it, as
// `ls dir; cat dir/*` does, and returns the names listed.
func ctoReadAll(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
		if _, err := readNoStat(filepath.Join(dir, e.Name())); err != nil {
			t.Fatal(err)
		}
	}
	return names
}

// ctoWant returns the names dir holds once each change of cs is (after)
// or is not yet (!after) made.
func ctoWant(cs []*ctoChange, after bool) []string {
	var names []string
	for _, c := range cs {
		b := c.before
		if after {
			b = c.after
		}
		if b != nil {
			names = append(names, c.name)
		}
	}
	slices.Sort(names)
	return names
}

// ctoCheck checks, through the mount at dir, that every change of cs
// shows at the first look: the listing (with listing), then each file
// read without a stat first (the read's size is the size the kernel
// holds, its bytes the server's), then a stat.
func ctoCheck(t *testing.T, dir string, cs []*ctoChange, listing bool) {
	t.Helper()
	if listing {
		ents, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, e := range ents {
			names = append(names, e.Name())
		}
		if want := ctoWant(cs, true); !slices.Equal(names, want) {
			t.Errorf("listing after the changes: %q, want %q", names, want)
		}
	}
	for _, c := range cs {
		p := filepath.Join(dir, c.name)
		got, err := readNoStat(p)
		switch {
		case c.after == nil && !errors.Is(err, fs.ErrNotExist):
			t.Errorf("%s, deleted on the server: read %q, %v; want ENOENT", c.name, got, err)
		case c.after != nil && (err != nil || string(got) != string(c.after)):
			t.Errorf("%s: read %q, %v; want %q (before: %q)", c.name, got, err, c.after, c.before)
		}
		if c.after == nil {
			continue
		}
		if fi, err := os.Stat(p); err != nil || fi.Size() != int64(len(c.after)) {
			t.Errorf("%s: stat %v, %v; want size %d", c.name, fi, err, len(c.after))
		}
	}
}

// The reproduction of a stale tree and a torn read across a remount, with
// default options: mount; ls; cat *; unmount; change the files on the
// server; mount again: the first listing and the first reads show the
// server's current names, sizes and bytes (not the old size with new
// bytes). Straight and behind a 4 ms round trip, with and without the
// change watcher.
func TestCoherenceRemount(t *testing.T) {
	h := testenv.StartHost(t, "127.0.0.2")
	for _, link := range ctoLinks {
		for _, watch := range []string{"watch=auto", "watch=no"} {
			t.Run(link.name+"/"+watch, func(t *testing.T) {
				dir := filepath.Join(h.Dir, "remount-"+link.name+"-"+watch)
				cs := ctoChanges()
				ctoPrepare(t, filepath.Join(dir, "sub"), cs)
				cacheDir := filepath.Join(t.TempDir(), "cache")
				spec := ctoMountSpec(t, h, link, dir, "cache_dir="+cacheDir, watch)

				m := mount(t, h, spec)
				if got, want := ctoReadAll(t, m.Path("sub")), ctoWant(cs, false); !slices.Equal(got, want) {
					t.Fatalf("first listing %q, want %q", got, want)
				}
				m.unmount(t)

				ctoApply(t, filepath.Join(dir, "sub"), cs)
				m = mount(t, h, spec)
				ctoCheck(t, m.Path("sub"), cs, true)
				// One change listing checked the loaded listings: no
				// fallback to listing each directory again.
				if meta := status(t, m.Dir).Meta; meta == nil || meta.Check != "done" {
					t.Errorf("check of the loaded listings at mount: %+v, want done", meta)
				}
			})
		}
	}
}

// Close-to-open consistency while mounted, with default options and the
// default timeouts (far longer than the test): files read before, then
// changed on the server, show the server's content and size at the next
// open, without waiting. Without the change watcher, so that nothing but
// the open itself can notice; and with it, whose pushed changes must not
// get in the way.
func TestCoherenceOpen(t *testing.T) {
	h := testenv.StartHost(t, "127.0.0.2")
	for _, link := range ctoLinks {
		for _, watch := range []string{"watch=no", "watch=auto"} {
			t.Run(link.name+"/"+watch, func(t *testing.T) {
				dir := filepath.Join(h.Dir, "open-"+link.name+"-"+watch)
				cs := ctoChanges()
				ctoPrepare(t, filepath.Join(dir, "sub"), cs)
				cacheDir := filepath.Join(t.TempDir(), "cache")
				m := mount(t, h, ctoMountSpec(t, h, link, dir, "cache_dir="+cacheDir, watch))
				// Twice: the second open keeps the kernel's cached pages
				// and may be served from the disk cache.
				for range 2 {
					ctoReadAll(t, m.Path("sub"))
				}
				ctoApply(t, filepath.Join(dir, "sub"), cs)
				ctoCheck(t, m.Path("sub"), whileMounted(cs), false)
			})
		}
	}
}

// whileMounted leaves out of cs the files created by the change (while
// mounted, a listing may be as old as dcache_timeout: only an open
// promises what the server holds now) and those rewritten keeping size
// and an mtime of the past (no attribute an open sees tells them).
func whileMounted(cs []*ctoChange) []*ctoChange {
	var out []*ctoChange
	for _, c := range cs {
		if c.before != nil && !c.remountOnly {
			out = append(out, c)
		}
	}
	return out
}
