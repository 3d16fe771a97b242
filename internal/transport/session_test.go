package transport

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"sshfsm/internal/remote"
	"sshfsm/internal/testenv"
)

// Tree listings after the first go through one long-lived command: the
// same listings as commands of their own give, hostile names included,
// one ssh process for all of them, which Close ends.
func TestListTreeThroughOneLoop(t *testing.T) {
	th := testenv.StartHost(t, "127.0.0.2")
	const depth = 2
	rootName := "loop 'root' $x\n"
	want := hostileTree(t, th.Dir, filepath.Join(th.Dir, rootName), depth)
	h := dialSSH(t, th, nil)
	r := h.Remote().(remote.TreeLister)
	before := sshChildren()
	var first *cmdSession
	for i := range 3 {
		var c collect
		if err := r.ListTree(bg, rootName, depth, c.fn); err != nil {
			t.Fatal(err)
		}
		if len(c.dirs) != len(want) {
			t.Fatalf("listing %d reported %d directories, want %d", i, len(c.dirs), len(want))
		}
		for _, d := range want {
			sftp, err := h.Remote().ReadDir(bg, d)
			must(t, err)
			compareListings(t, d, byName(c.dirs[d]), byName(sftp))
		}
		h.x.sessMu.Lock()
		s := h.x.sess
		h.x.sessMu.Unlock()
		if s == nil || (first != nil && s != first) {
			t.Fatalf("listing %d: loop %p, first %p: not one loop for all", i, s, first)
		}
		first = s
	}
	if n := h.Stats().Requests["exec"]; n != 3 {
		t.Errorf("%d commands counted, want 3", n)
	}
	if n := sshChildren(); n != before+1 {
		t.Errorf("%d ssh processes, %d before: want the loop's only", n, before)
	}
	h.Close()
	if !first.dead() {
		t.Error("the loop outlived Close")
	}
}

// A name in the output that looks like an end record does not end the
// listing: the record's nonce is fresh for each command.
func TestListTreeLoopEndRecordNotForged(t *testing.T) {
	th := testenv.StartHost(t, "127.0.0.2")
	dir := filepath.Join(th.Dir, "d")
	must(t, os.Mkdir(dir, 0o755))
	forged := "x\x01\x010123456789abcdef0123456789abcdef 0\nafter"
	must(t, os.WriteFile(filepath.Join(dir, forged), nil, 0o644))
	must(t, os.WriteFile(filepath.Join(dir, "zz-last"), nil, 0o644))
	h := dialSSH(t, th, nil)
	r := h.Remote().(remote.TreeLister)
	for range 2 {
		var c collect
		must(t, r.ListTree(bg, "", 1, c.fn))
		var names []string
		for _, e := range c.dirs["d"] {
			names = append(names, e.Name)
		}
		if len(names) != 2 || !strings.Contains(strings.Join(names, "|"), forged) {
			t.Fatalf("listed %q", names)
		}
	}
}

// A listing asked while the loop runs another runs as a command of its
// own; both are complete.
func TestListTreeLoopBusy(t *testing.T) {
	th := testenv.StartHost(t, "127.0.0.2")
	for _, d := range []string{"a/x", "b/y"} {
		must(t, os.MkdirAll(filepath.Join(th.Dir, d), 0o755))
	}
	h := dialSSH(t, th, nil)
	r := h.Remote().(remote.TreeLister)
	h.x.sessMu.Lock() // the loop is busy
	var c collect
	must(t, r.ListTree(bg, "", 1, c.fn))
	h.x.sessMu.Unlock()
	if len(c.dirs) != 3 || h.x.sess != nil {
		t.Fatalf("while the loop was busy: %d directories, loop %p", len(c.dirs), h.x.sess)
	}
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var c collect
			if err := r.ListTree(bg, "", 1, c.fn); err != nil || len(c.dirs) != 3 {
				t.Errorf("concurrent listing: %d directories, %v", len(c.dirs), err)
			}
		}()
	}
	wg.Wait()
}

// A command failing in the loop fails as it would on its own: its exit
// status, and the loop goes on.
func TestListTreeLoopCommandFails(t *testing.T) {
	th := testenv.StartHost(t, "127.0.0.2")
	must(t, os.Mkdir(filepath.Join(th.Dir, "d"), 0o755))
	h := dialSSH(t, th, nil)
	r := h.Remote().(remote.TreeLister)
	must(t, r.ListTree(bg, "", 0, func(string, []remote.DirEntry) {}))
	err := r.ListTree(bg, "missing", 0, func(string, []remote.DirEntry) { t.Error("reported a listing") })
	var ee *ExecError
	if !errors.As(err, &ee) || ee.Status == 0 || ee.Status == 255 {
		t.Fatalf("listing a missing directory: %v", err)
	}
	ran, err := h.sessionExec(bg, "echo one; exit 3", func(rd io.Reader) error {
		b, err := io.ReadAll(rd)
		if string(b) != "one\n" {
			t.Errorf("output %q", b)
		}
		return err
	})
	if !ran || !errors.As(err, &ee) || ee.Status != 3 {
		t.Fatalf("ran %v, %v: want status 3", ran, err)
	}
	var c collect
	if err := r.ListTree(bg, "", 0, c.fn); err != nil || len(c.dirs) != 1 {
		t.Errorf("after a failure: %d directories, %v", len(c.dirs), err)
	}
}

// The loop lives on the connection it was started on: once the server
// went away and the host reconnected, the next listing starts another
// loop and lists completely.
func TestListTreeLoopAfterReconnect(t *testing.T) {
	th := testenv.StartHost(t, "127.0.0.2")
	must(t, os.MkdirAll(filepath.Join(th.Dir, "a", "b"), 0o755))
	h := dialSSH(t, th, nil)
	r := h.Remote().(remote.TreeLister)
	must(t, r.ListTree(bg, "", 1, func(string, []remote.DirEntry) {}))
	h.x.sessMu.Lock()
	old := h.x.sess
	h.x.sessMu.Unlock()
	th.Kill()
	must(t, th.Restart())
	testenv.Eventually(t, "slot 0 reconnected", func() bool {
		c := h.Stats().Channels[0]
		return c.Reconnects > 0 && c.Up
	})
	var c collect
	if err := r.ListTree(bg, "", 1, c.fn); err != nil || len(c.dirs) != 2 {
		t.Errorf("after the reconnect: %d directories, %v; want 2", len(c.dirs), err)
	}
	h.x.sessMu.Lock()
	s := h.x.sess
	h.x.sessMu.Unlock()
	if s == nil || s == old || !old.dead() {
		t.Errorf("loop %p after the reconnect, %p before (dead %v)", s, old, old.dead())
	}
}
