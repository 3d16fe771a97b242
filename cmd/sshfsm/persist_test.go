package main

import (
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"sshfsm/internal/control"
)

// findNames lists every name below dir.
func findNames(t *testing.T, dir string) []string {
	t.Helper()
	out, err := exec.Command("find", dir, "-print0").Output()
	if err != nil {
		t.Fatalf("find %s: %v", dir, err)
	}
	names := strings.Split(strings.TrimSuffix(string(out), "\x00"), "\x00")
	slices.Sort(names)
	return names
}

// listingRequests sums the host's requests that list or stat.
func listingRequests(t *testing.T, st control.Status) map[string]uint64 {
	t.Helper()
	out := map[string]uint64{}
	for _, k := range []string{"OPENDIR", "READDIR", "STAT", "LSTAT", "exec"} {
		out[k] = onlyHost(t, st).Requests[k]
	}
	return out
}

// SIGTERM ends the daemon after it wrote the listings it learned; the
// next mount of the same tree (cache=immutable) walks it from them
// without a request, and says so in its status.
func TestDaemonPersistsListings(t *testing.T) {
	privateRuntime(t)
	h, ssh := sshHost(t)
	dirs := 1
	for i := range 5 {
		sub := filepath.Join(h.Dir, fmt.Sprintf("d%d", i), "sub")
		if err := os.MkdirAll(sub, 0o755); err != nil {
			t.Fatal(err)
		}
		dirs += 2
		for j := range 3 {
			if err := os.WriteFile(filepath.Join(sub, fmt.Sprintf("f%d", j)), []byte("x"), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	cacheDir := filepath.Join(t.TempDir(), "cache")
	mnt := mountpoint(t)
	args := append(ssh, "-o", "cache=immutable,cache_dir="+cacheDir, h.Alias+":"+h.Dir, mnt)
	if r := sshfsm(t, 20*time.Second, args...); r.code != 0 {
		t.Fatalf("mount: exit %d, stderr %q", r.code, r.stderr)
	}
	names := findNames(t, mnt)
	pids := serving(mnt)
	if len(pids) != 1 {
		t.Fatalf("daemons %v", pids)
	}
	if err := syscall.Kill(pids[0], syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	waitGone(t, mnt)
	snaps, _ := filepath.Glob(filepath.Join(cacheDir, "meta", "*"))
	if len(snaps) != 1 {
		t.Fatalf("snapshots after SIGTERM: %v", snaps)
	}
	if fi, err := os.Stat(filepath.Join(cacheDir, "meta")); err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("snapshot directory: %v, %v", fi, err)
	}

	if r := sshfsm(t, 20*time.Second, args...); r.code != 0 {
		t.Fatalf("remount: exit %d, stderr %q", r.code, r.stderr)
	}
	st := statusJSON(t, mnt)
	if st.Meta == nil || st.Meta.Mode != "immutable" || st.Meta.LoadedDirs != dirs || st.Meta.SnapshotAgeSeconds < 0 {
		t.Fatalf("status metadata %+v, want %d listings loaded", st.Meta, dirs)
	}
	// The change watcher's start runs a command on the host (its probe):
	// counted before the walk, it is not taken for one of the walk's.
	waitWatch(t, mnt, h.Alias, control.WatchActive)
	before := listingRequests(t, statusJSON(t, mnt))
	if again := findNames(t, mnt); !slices.Equal(again, names) {
		t.Errorf("remount shows %d names, the first mount %d", len(again), len(names))
	}
	if after := listingRequests(t, statusJSON(t, mnt)); !maps.Equal(after, before) {
		t.Errorf("find on the remount sent requests: before %v, after %v", before, after)
	}
	r := sshfsm(t, 10*time.Second, "status", mnt)
	if want := fmt.Sprintf("metadata immutable: %d listings", dirs); !strings.Contains(r.stdout, want) {
		t.Errorf("status lacks %q:\n%s", want, r.stdout)
	}
}
