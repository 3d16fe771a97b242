package transport

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"sshfsm/internal/remote"
	"sshfsm/internal/testenv"
)

// cutLink drops the newest session: the one the files opened last use.
func cutLink(ts *testServer) { ts.stream(ts.count() - 1).drop() }

func openRW(t *testing.T, h *Host, name string) *file {
	t.Helper()
	rf, err := h.Remote().Open(bg, name, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	return rf.(*file)
}

func writeAt(t *testing.T, f *file, s string, off int64) {
	t.Helper()
	if _, err := f.WriteAt(bg, []byte(s), off); err != nil {
		t.Fatalf("write %q at %d: %v", s, off, err)
	}
}

func serverHas(t *testing.T, p, want string) {
	t.Helper()
	got, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != want {
		t.Fatalf("%s holds %q, want %q", filepath.Base(p), got, want)
	}
}

// TestRenamedFileReplaysAtItsNewName: a file renamed through the host
// while open re-opens at its new name after the link drops, and its
// writes acknowledged before and after the rename all land there.
func TestRenamedFileReplaysAtItsNewName(t *testing.T) {
	h, ts, dir := dialTest(t, 1, nil)
	if err := os.Mkdir(filepath.Join(dir, "d"), 0o755); err != nil {
		t.Fatal(err)
	}
	f := openRW(t, h, "d/a")
	writeAt(t, f, "one", 0)
	if err := h.Remote().Rename(bg, "d/a", "d/b", false); err != nil {
		t.Fatal(err)
	}
	writeAt(t, f, "two", 3)
	// The server loses what it was not made to keep: the log replays it.
	if err := os.WriteFile(filepath.Join(dir, "d/b"), []byte("xxxxxx"), 0o644); err != nil {
		t.Fatal(err)
	}
	cutLink(ts)
	writeAt(t, f, "three", 6)
	// A renamed directory takes its open files along.
	if err := h.Remote().Rename(bg, "d", "e", false); err != nil {
		t.Fatal(err)
	}
	cutLink(ts)
	writeAt(t, f, "four", 11)
	if err := f.Close(bg); err != nil {
		t.Fatal(err)
	}
	serverHas(t, filepath.Join(dir, "e/b"), "onetwothreefour")
	if _, err := os.Lstat(filepath.Join(dir, "e/a")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the old name exists again: %v", err)
	}
}

// TestUnlinkedFileIsNotResurrected: a file unlinked through the host
// while open cannot be re-opened after the link drops; the next write
// fails with EIO and neither recreates the old name nor changes the file
// that now has it.
func TestUnlinkedFileIsNotResurrected(t *testing.T) {
	for _, how := range []string{"unlink", "rename over"} {
		t.Run(how, func(t *testing.T) {
			h, ts, dir := dialTest(t, 1, nil)
			f := openRW(t, h, "a")
			writeAt(t, f, "old", 0)
			other := openRW(t, h, "b")
			writeAt(t, other, "new", 0)
			if how == "unlink" {
				if err := h.Remote().Remove(bg, "a"); err != nil {
					t.Fatal(err)
				}
				if err := h.Remote().Rename(bg, "b", "c", false); err != nil {
					t.Fatal(err)
				}
			} else if err := h.Remote().Rename(bg, "b", "a", false); err != nil {
				t.Fatal(err)
			}
			cutLink(ts)
			if _, err := f.WriteAt(bg, []byte("zz"), 1); !errors.Is(err, syscall.EIO) {
				t.Fatalf("write to the nameless file after the cut: %v, want EIO", err)
			}
			if err := f.Close(bg); !errors.Is(err, syscall.EIO) {
				t.Fatalf("close of the nameless file: %v, want EIO", err)
			}
			// The file that was renamed keeps working at its new name.
			writeAt(t, other, "er", 3)
			if err := other.Close(bg); err != nil {
				t.Fatal(err)
			}
			if how == "unlink" {
				if _, err := os.Lstat(filepath.Join(dir, "a")); !errors.Is(err, os.ErrNotExist) {
					t.Fatalf("the unlinked name exists again: %v", err)
				}
				serverHas(t, filepath.Join(dir, "c"), "newer")
				return
			}
			serverHas(t, filepath.Join(dir, "a"), "newer")
		})
	}
}

// TestNewFileAtRemovedNameHasItsOwnLog: a file created where an open one
// was unlinked shares nothing with it.
func TestNewFileAtRemovedNameHasItsOwnLog(t *testing.T) {
	h, _, dir := dialTest(t, 1, nil)
	f := openRW(t, h, "a")
	writeAt(t, f, "0123456789", 0)
	if err := h.Remote().Remove(bg, "a"); err != nil {
		t.Fatal(err)
	}
	g := openRW(t, h, "a")
	if g.log == f.log {
		t.Fatal("the new file at the removed name shares the old file's log")
	}
	writeAt(t, g, "ab", 0)
	for _, x := range []*file{f, g} {
		if err := x.Close(bg); err != nil {
			t.Fatal(err)
		}
	}
	if !bytes.Equal(mustRead(t, filepath.Join(dir, "a")), []byte("ab")) {
		t.Fatal("the new file does not hold its own data")
	}
}

func mustRead(t *testing.T, p string) []byte {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestChangeLostInFlightIsToldByTheServer: an unlink, a rename, a mkdir
// and a creating open whose answers are lost with the link are settled by a
// look at the server on the new channel, not failed with ENOTCONN.
func TestChangeLostInFlightIsToldByTheServer(t *testing.T) {
	h, ts, dir := dialTest(t, 1, func(o *Options) { o.Timeout = 5 * time.Second })
	for _, n := range []string{"gone", "from"} {
		if err := os.WriteFile(filepath.Join(dir, n), []byte(n), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	lost := func(what string, change func() error, made func() bool) {
		t.Helper()
		s := ts.stream(ts.count() - 1)
		s.freeze() // the server makes the change; its answer never comes
		done := make(chan error, 1)
		go func() { done <- change() }()
		testenv.Eventually(t, what+" made on the server", made)
		s.drop()
		if err := <-done; err != nil {
			t.Fatalf("%s lost in flight: %v", what, err)
		}
	}
	lost("unlink", func() error { return h.Remote().Remove(bg, "gone") }, func() bool {
		_, err := os.Lstat(filepath.Join(dir, "gone"))
		return errors.Is(err, os.ErrNotExist)
	})
	lost("rename", func() error { return h.Remote().Rename(bg, "from", "to", false) }, func() bool {
		_, err := os.Lstat(filepath.Join(dir, "to"))
		return err == nil
	})
	// The server makes the directory; the chmod that follows is never
	// sent, so the look sets the permissions.
	lost("mkdir", func() error { return h.Remote().Mkdir(bg, "dir", 0o750) }, func() bool {
		_, err := os.Lstat(filepath.Join(dir, "dir"))
		return err == nil
	})
	if fi, err := os.Lstat(filepath.Join(dir, "dir")); err != nil || fi.Mode().Perm() != 0o750 {
		t.Fatalf("directory made by a mkdir lost in flight: %v, %v, want mode 0750", fi.Mode(), err)
	}
	var f remote.File
	lost("creating open", func() (err error) {
		f, err = h.Remote().Open(bg, "new", os.O_RDWR|os.O_CREATE, 0o644)
		return err
	}, func() bool {
		_, err := os.Lstat(filepath.Join(dir, "new"))
		return err == nil
	})
	if _, err := f.WriteAt(bg, []byte("data"), 0); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(bg); err != nil {
		t.Fatal(err)
	}
	serverHas(t, filepath.Join(dir, "new"), "data")
	serverHas(t, filepath.Join(dir, "to"), "from")
}
