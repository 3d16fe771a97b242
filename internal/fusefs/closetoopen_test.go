package fusefs

import (
	"bytes"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
	"time"

	"sshfsm/internal/cache"
)

// openRead opens p and reads it to the end, with no stat before: what a
// stat would refresh is what the open must check itself.
func openRead(p string) ([]byte, error) {
	f, err := os.Open(p)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(f)
}

// The open-time check (cache=auto, default timeouts far longer than the
// test): a file read twice (its pages kept by the kernel, its content in
// the disk cache), then changed on the server, shows the server's bytes
// and size at the next open; an open of a removed file fails. Each open
// of an unchanged file asks for its attributes once and sends no OPEN.
func TestOpenChecksVersion(t *testing.T) {
	old := time.Now().Add(-time.Hour)
	for _, disk := range []bool{false, true} {
		name := "nodisk"
		if disk {
			name = "disk"
		}
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			files := map[string][2]string{ // before, after ("": removed)
				"modify":   {"aaaa", "bbbb"},
				"grow":     {"short", "short, then longer"},
				"shrink":   {"a long line", "a l"},
				"replaced": {"first", "second one"},
				"removed":  {"gone soon", ""},
			}
			for n, c := range files {
				writeOld(t, filepath.Join(dir, n), []byte(c[0]), 2*time.Hour)
			}
			var mnt func(string) string
			var hook *hookRemote
			if disk {
				m := mountDisk(t, dir, t.TempDir(), cache.Auto)
				mnt, hook = m.path, m.hook
			} else {
				h := &hookRemote{}
				tm := mountWith(t, defaultOpts(), h.wrap)
				dir = tm.dir
				for n, c := range files {
					writeOld(t, filepath.Join(dir, n), []byte(c[0]), 2*time.Hour)
				}
				mnt, hook = tm.path, h
			}
			for range 2 {
				for n, c := range files {
					if b, err := openRead(mnt(n)); err != nil || string(b) != c[0] {
						t.Fatalf("%s before: %q %v", n, b, err)
					}
				}
			}
			lstats, opens := hook.lstats.Load(), hook.opens.Load()
			if b, err := openRead(mnt("modify")); err != nil || string(b) != "aaaa" {
				t.Fatalf("modify, unchanged: %q %v", b, err)
			}
			if n, o := hook.lstats.Load()-lstats, hook.opens.Load()-opens; n != 1 || o != 0 {
				t.Errorf("an open of an unchanged file sent %d LSTATs and %d OPENs, want 1 and 0", n, o)
			}

			for n, c := range files {
				p := filepath.Join(dir, n)
				switch {
				case c[1] == "":
					if err := os.Remove(p); err != nil {
						t.Fatal(err)
					}
				case n == "replaced":
					writeOld(t, p+".tmp", []byte(c[1]), time.Hour)
					if err := os.Rename(p+".tmp", p); err != nil {
						t.Fatal(err)
					}
				default:
					mustWrite(t, p, []byte(c[1]))
					if err := os.Chtimes(p, old, old); err != nil {
						t.Fatal(err)
					}
				}
			}
			for n, c := range files {
				b, err := openRead(mnt(n))
				if c[1] == "" {
					if !errors.Is(err, fs.ErrNotExist) {
						t.Errorf("%s: %q %v, want ENOENT", n, b, err)
					}
					continue
				}
				if err != nil || !bytes.Equal(b, []byte(c[1])) {
					t.Errorf("%s: read %q %v, want %q", n, b, err, c[1])
				}
				if fi, err := os.Stat(mnt(n)); err != nil || fi.Size() != int64(len(c[1])) {
					t.Errorf("%s: stat %v %v, want size %d", n, fi, err, len(c[1]))
				}
			}
		})
	}
}

// A file rewritten keeping its size within the second of the version the
// kernel read (its mtime then was that recent: racy) shows its new bytes
// at the next open, though size and mtime are the same.
func TestOpenRacyVersion(t *testing.T) {
	tm := mountWith(t, defaultOpts(), nil)
	p := filepath.Join(tm.dir, "f")
	// Dated ahead: racy whatever the test's pace.
	ahead := time.Now().Add(time.Hour).Truncate(time.Second)
	mustWrite(t, p, []byte("version 1"))
	os.Chtimes(p, ahead, ahead)
	for range 2 {
		if b, err := openRead(tm.path("f")); err != nil || string(b) != "version 1" {
			t.Fatalf("before: %q %v", b, err)
		}
	}
	mustWrite(t, p, []byte("version 2"))
	os.Chtimes(p, ahead, ahead)
	if b, err := openRead(tm.path("f")); err != nil || string(b) != "version 2" {
		t.Errorf("after a rewrite of the same size and mtime: %q %v, want \"version 2\"", b, err)
	}
}
