package cache

import (
	"context"
	"errors"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"sshfsm/internal/remote"
)

// changeList is the check's view of a server: it reports paths, or fails
// with err, once hold (when set) is closed.
type changeList struct {
	paths []string
	err   error
	hold  chan struct{}

	mu     sync.Mutex
	calls  int
	within time.Duration
}

func (c *changeList) ListChanged(ctx context.Context, dir string, within time.Duration, fn func(string, time.Duration)) error {
	c.mu.Lock()
	c.calls++
	c.within = within
	c.mu.Unlock()
	if c.hold != nil {
		select {
		case <-c.hold:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	if c.err != nil {
		return c.err
	}
	for _, p := range c.paths {
		fn(p, 0)
	}
	return nil
}

// checkDone waits for the check of d's loaded listings to end.
func checkDone(t *testing.T, d *Dirs) {
	t.Helper()
	d.mu.Lock()
	ch := d.p.checked
	d.mu.Unlock()
	if ch == nil {
		return
	}
	select {
	case <-ch:
	case <-time.After(time.Minute):
		t.Fatal("the check of loaded listings did not end")
	}
}

// A new mount in Auto mode checks its loaded listings with one change
// listing over their age: the listing of a changed directory is dropped
// and listed again when used, a changed name's entry is asked again, and
// everything else answers from the snapshot without a request.
func TestAutoCheckAtMount(t *testing.T) {
	path := filepath.Join(t.TempDir(), "snap")
	saveTree(t, path, sampleTree())
	remoteNow := sampleTree()
	remoteNow["a/b"] = []remote.DirEntry{{Name: "c", Attr: dirAttr()}, {Name: "new", Attr: file(7, 7)}}
	f := &fetches{tree: remoteNow}
	cl := &changeList{paths: []string{"a/g", "a/b", "a/b/new"}}
	var got []string
	d := persisted(t, path, Auto, nil, PersistOptions{Changes: cl, Checked: func(p []string) { got = p }})
	checkDone(t, d)

	if a, st, err := d.Lookup(context.Background(), "a", "f", noFetch(t)); err != nil || st != Hit || a.Size != 2 {
		t.Errorf("unchanged name: %+v %v %v", a, st, err)
	}
	if _, st := d.Peek("a", "g"); st != Unknown {
		t.Errorf("changed name answered %v, want Unknown (asked again)", st)
	}
	if _, ok := d.List("a/b"); ok {
		t.Error("the loaded listing of a changed directory answers")
	}
	if _, st, err := d.Lookup(context.Background(), "a/b", "new", f.readDir); err != nil || st != Hit || f.count("a/b") != 1 {
		t.Errorf("lookup in a changed directory: %v %v, %d listings", st, err, f.count("a/b"))
	}
	mustList(t, d, "a/b/c")
	cl.mu.Lock()
	calls, within := cl.calls, cl.within
	cl.mu.Unlock()
	if calls != 1 || within < checkMargin {
		t.Errorf("%d change listings over %v, want 1 over at least %v", calls, within, checkMargin)
	}
	if st := d.PersistStats(); st.Check != "done" || st.CheckChanged != 3 || len(got) != 3 {
		t.Errorf("stats %+v, Checked got %q", st, got)
	}
}

// Lookups and readers of a loaded directory wait for the check; Peek and
// List answer nothing from loaded listings meanwhile.
func TestAutoCheckWaits(t *testing.T) {
	path := filepath.Join(t.TempDir(), "snap")
	saveTree(t, path, sampleTree())
	cl := &changeList{hold: make(chan struct{})}
	d := persisted(t, path, Auto, nil, PersistOptions{Changes: cl})
	if _, st := d.Peek("a", "f"); st != Unknown {
		t.Errorf("Peek before the check: %v, want Unknown", st)
	}
	if _, ok := d.List("a"); ok {
		t.Error("List before the check answers")
	}
	type result struct {
		st  State
		err error
	}
	looked := make(chan result, 1)
	go func() {
		_, st, err := d.Lookup(context.Background(), "a", "f", noFetch(t))
		looked <- result{st, err}
	}()
	listed := make(chan error, 1)
	go func() {
		_, cached, err := d.Get(context.Background(), "a/b", noFetch(t))
		if err == nil && !cached {
			err = errors.New("not from the loaded listing")
		}
		listed <- err
	}()
	close(cl.hold)
	if r := <-looked; r.err != nil || r.st != Hit {
		t.Errorf("lookup that waited for the check: %v %v", r.st, r.err)
	}
	if err := <-listed; err != nil {
		t.Errorf("listing that waited for the check: %v", err)
	}
}

// When the check fails or cannot run, no loaded listing answers: each
// directory is listed at its first use.
func TestAutoCheckFails(t *testing.T) {
	path := filepath.Join(t.TempDir(), "snap")
	saveTree(t, path, sampleTree())
	for name, cl := range map[string]*changeList{
		"failed":      {err: syscall.EIO},
		"unsupported": nil,
	} {
		t.Run(name, func(t *testing.T) {
			o := PersistOptions{}
			if cl != nil {
				o.Changes = cl
			}
			d := persisted(t, path, Auto, nil, o)
			checkDone(t, d)
			remoteNow := sampleTree()
			remoteNow["a"] = remoteNow["a"][:2]
			f := &fetches{tree: remoteNow}
			if _, st, err := d.Lookup(context.Background(), "a", "g", f.readDir); err != nil || st != Absent || f.count("a") != 1 {
				t.Errorf("lookup: %v %v, %d listings; want Absent from one listing", st, err, f.count("a"))
			}
			if st := d.PersistStats(); st.Check != "failed" {
				t.Errorf("stats %+v", st)
			}
		})
	}
}
