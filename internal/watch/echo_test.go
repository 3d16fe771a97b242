package watch

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"sshfsm/internal/testenv"
)

// archiveOf packs a tree of dirs directories of files files each into a
// tar file and returns its path and the number of entries below "src".
func archiveOf(t *testing.T, dirs, files int) (string, int) {
	t.Helper()
	tmp := t.TempDir()
	for d := range dirs {
		dir := filepath.Join(tmp, "src", fmt.Sprintf("d%d", d))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		for f := range files {
			data := strings.Repeat(fmt.Sprintf("line of %d/%d\n", d, f), 20*(f+1))
			p := filepath.Join(dir, fmt.Sprintf("f%d", f))
			if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(p, []os.FileMode{0o644, 0o600, 0o755}[f%3]); err != nil {
				t.Fatal(err)
			}
			mtime := time.Date(2021, 1, 1+d, f, 0, 0, 0, time.UTC)
			if err := os.Chtimes(p, mtime, mtime); err != nil {
				t.Fatal(err)
			}
		}
	}
	archive := filepath.Join(tmp, "src.tar")
	if out, err := exec.Command("tar", "-cf", archive, "-C", tmp, "src").CombinedOutput(); err != nil {
		t.Fatalf("tar -c: %v: %s", err, out)
	}
	return archive, 1 + dirs + dirs*files
}

// requestsSince returns the SFTP requests rg's host sent since before.
func (rg *rig) requestsSince(before map[string]uint64) map[string]uint64 {
	d := map[string]uint64{}
	for k, v := range rg.h.Stats().Requests {
		if v > before[k] {
			d[k] = v - before[k]
		}
	}
	return d
}

func countsString(m map[string]uint64) string {
	var s []string
	for k, v := range m {
		s = append(s, fmt.Sprintf("%s %d", k, v))
	}
	sort.Strings(s)
	return strings.Join(s, ", ")
}

// The watcher reports the mount's own changes too. Those echoes do not
// make the mount forget what it learned by making the changes: after a
// tree is unpacked through the mount and the watcher has reported all of
// it, walking the tree and stat-ing every name sends no request (the
// listings of the directories the mount made, and the entries of the
// files, are still known), and removing it sends one request per name.
// A change someone else makes in a directory the mount made still shows.
func TestOwnChangesEchoed(t *testing.T) {
	th := testenv.StartHost(t, "127.0.0.2")
	rg := newRig(t, th, cacheFor, Options{})
	rg.waitState(t, Active, 15*time.Second)
	archive, entries := archiveOf(t, 4, 6)

	before := rg.h.Stats().Requests
	if out, err := exec.Command("tar", "-xf", archive, "-C", rg.mnt).CombinedOutput(); err != nil {
		t.Fatalf("tar -x: %v: %s", err, out)
	}
	t.Logf("untar of %d entries: %s", entries, countsString(rg.requestsSince(before)))
	if out, err := exec.Command("diff", "-r", filepath.Join(filepath.Dir(archive), "src"), rg.remote("src")).CombinedOutput(); err != nil {
		t.Fatalf("the server's tree differs: %v: %s", err, out)
	}
	sameModesAndTimes(t, filepath.Join(filepath.Dir(archive), "src"), rg.remote("src"))

	// The watcher reports changes in the order made: once a file made
	// on the server after the unpack shows, every echo of it arrived.
	write(t, rg.remote("after"), "x")
	within(t, 10*time.Second, "a file made on the server after the unpack", func() bool { return shows(t, rg.mnt, "after") })

	before = rg.h.Stats().Requests
	n := 0
	err := filepath.WalkDir(rg.local("src"), func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if _, err := os.Lstat(p); err != nil {
			return err
		}
		n++
		return nil
	})
	if err != nil || n != entries {
		t.Fatalf("walk of the unpacked tree: %d entries, %v; want %d", n, err, entries)
	}
	if got := rg.requestsSince(before); len(got) > 0 {
		t.Errorf("walking the tree the mount made sent %s; want nothing", countsString(got))
	}

	// Someone else's change to a file the mount made shows, once the
	// echo of the mount's own is over: the file is appended to on the
	// server until a stat through the mount shows the server's size.
	f := rg.remote("src/d2/f3")
	testenv.Eventually(t, "a change on the server of a file the mount made", func() bool {
		fh, err := os.OpenFile(f, os.O_APPEND|os.O_WRONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		_, err = fh.Write([]byte("theirs\n"))
		if cerr := fh.Close(); err != nil || cerr != nil {
			t.Fatal(err, cerr)
		}
		want, _ := os.Stat(f)
		return testenv.PollFor(time.Second, func() bool {
			got, err := os.Stat(rg.local("src/d2/f3"))
			return err == nil && got.Size() == want.Size()
		})
	})

	// Someone else's change in a directory the mount made shows.
	if err := os.Mkdir(rg.local("mine"), 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(rg.local("mine/theirs")); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("a name in a new directory: %v", err)
	}
	// The watcher watches a new directory once it has seen it made: what
	// is made in it before is not reported (inotifywait's limit).
	write(t, rg.remote("after-mine"), "x")
	within(t, 10*time.Second, "a file made on the server after mine", func() bool { return shows(t, rg.mnt, "after-mine") })
	write(t, rg.remote("mine/theirs"), "theirs")
	within(t, 10*time.Second, "a file made on the server in a directory the mount made", func() bool {
		return content(rg.local("mine/theirs")) == "theirs"
	})
	if err := os.Remove(rg.remote("mine/theirs")); err != nil {
		t.Fatal(err)
	}
	within(t, 10*time.Second, "a file removed on the server in a directory the mount made", func() bool {
		return gone(rg.local("mine/theirs"))
	})

	before = rg.h.Stats().Requests
	if out, err := exec.Command("rm", "-rf", rg.local("src")).CombinedOutput(); err != nil {
		t.Fatalf("rm -rf: %v: %s", err, out)
	}
	got := rg.requestsSince(before)
	t.Logf("rm -rf: %s", countsString(got))
	for typ, n := range got {
		switch {
		case typ == "REMOVE" && n <= uint64(4*6):
		case typ == "RMDIR" && n <= 1+4:
		default:
			t.Errorf("rm -rf of the tree the mount made sent %d %s; want one REMOVE or RMDIR per name", n, typ)
		}
	}
	if !gone(rg.remote("src")) {
		t.Fatal("src left on the server")
	}
}

// sameModesAndTimes fails unless every file below want has the same
// mode and mtime (in seconds, as SFTP carries them) below got: tar sets
// them after writing, so they also show whether the mount applied them
// after the writes.
func sameModesAndTimes(t *testing.T, want, got string) {
	t.Helper()
	err := filepath.WalkDir(want, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(want, p)
		w, err := os.Lstat(p)
		if err != nil {
			return err
		}
		g, err := os.Lstat(filepath.Join(got, rel))
		if err != nil {
			return err
		}
		if w.Mode() != g.Mode() || w.ModTime().Unix() != g.ModTime().Unix() {
			t.Errorf("%s: server has %v %v, want %v %v", rel, g.Mode(), g.ModTime(), w.Mode(), w.ModTime())
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
