package main

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"sshfsm/internal/control"
	"sshfsm/internal/testenv"
	"sshfsm/internal/watch"
)

// watchOf returns the change detection state of host name in mnt's status.
func watchOf(t *testing.T, mnt, name string) (state, detail string) {
	t.Helper()
	for _, b := range statusJSON(t, mnt).Branches {
		for _, h := range b.Hosts {
			if h.Name == name {
				return h.Watch, h.WatchDetail
			}
		}
	}
	t.Fatalf("no host %s in the status of %s", name, mnt)
	return "", ""
}

// waitWatch waits up to 15 s for host name of mnt to reach state.
func waitWatch(t *testing.T, mnt, name, state string) string {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		got, detail := watchOf(t, mnt, name)
		if got == state {
			return detail
		}
		if time.Now().After(deadline) {
			t.Fatalf("change detection of %s is %q (%s), want %q", name, got, detail, state)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// pushedWithin writes data to remote and fails unless local reads it within
// a second.
func pushedWithin(t *testing.T, remote, local, data string) {
	t.Helper()
	if _, err := os.Lstat(local); !os.IsNotExist(err) {
		t.Fatalf("%s before it was made: %v", local, err)
	}
	if err := os.WriteFile(remote, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	for {
		if b, err := os.ReadFile(local); err == nil && string(b) == data {
			return
		}
		if time.Since(start) > time.Second {
			t.Fatalf("%s not seen at %s within a second", remote, local)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// serverWatchers counts the watchers running on this machine for dir.
func serverWatchers(dir string) int { return len(serverWatcherEvents(dir)) }

// serverWatcherEvents returns the events (-e) each watcher process on the
// server (this machine) watching dir asks for.
func serverWatcherEvents(dir string) []string {
	var events []string
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		st, err2 := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil || err2 != nil || strings.Contains(string(st), ") Z ") {
			continue
		}
		args := strings.Split(strings.TrimRight(string(b), "\x00"), "\x00")
		if strings.HasSuffix(args[0], "inotifywait") && args[len(args)-1] == dir {
			ev := ""
			if i := slices.Index(args, "-e"); i >= 0 && i+1 < len(args) {
				ev = args[i+1]
			}
			events = append(events, ev)
		}
	}
	return events
}

// Changes made on the server show in the mount within a second although
// it trusts what it saw for a minute; the status says so; the watcher ends
// on the server with the mount. With watch=no, the status says it is off.
func TestWatchSingleHost(t *testing.T) {
	privateRuntime(t)
	h, ssh := sshHost(t)
	mnt := mountAt(t, mountpoint(t), h.Alias+":"+h.Dir, append(ssh, "-o", "cache_timeout=60")...)
	if got := waitWatch(t, mnt, h.Alias, control.WatchActive); got != "" {
		t.Errorf("detail %q", got)
	}
	if ev := serverWatcherEvents(h.Dir); len(ev) != 1 || strings.Contains(ev[0], "modify") {
		t.Errorf("watchers on the server, by events: %q", ev)
	}
	pushedWithin(t, filepath.Join(h.Dir, "new"), filepath.Join(mnt, "new"), "pushed")
	r := sshfsm(t, 10*time.Second, "status", mnt)
	if !strings.Contains(r.stdout, "\n    change detection: active\n") {
		t.Errorf("status:\n%s", r.stdout)
	}

	off := mountAt(t, mountpoint(t), h.Alias+":"+h.Dir, append(ssh, "-o", "watch=no")...)
	if state, detail := watchOf(t, off, h.Alias); state != control.WatchOff || detail != "watch=no" {
		t.Errorf("watch=no: %q %q", state, detail)
	}
	if r := sshfsm(t, 10*time.Second, "status", off); !strings.Contains(r.stdout, "\n    change detection: off: watch=no\n") {
		t.Errorf("status:\n%s", r.stdout)
	}

	writes := mountAt(t, mountpoint(t), h.Alias+":"+h.Dir, append(ssh, "-o", "watch=writes")...)
	waitWatch(t, writes, h.Alias, control.WatchActive)
	if ev := serverWatcherEvents(h.Dir); len(ev) != 2 || !slices.ContainsFunc(ev, func(e string) bool { return strings.Contains(e, "modify") }) {
		t.Errorf("watch=writes: watchers on the server, by events: %q", ev)
	}

	for _, m := range []string{mnt, off, writes} {
		if err := testenv.Unmount(m); err != nil {
			t.Fatal(err)
		}
		waitGone(t, m)
	}
	deadline := time.Now().Add(5 * time.Second)
	for serverWatchers(h.Dir) > 0 {
		if time.Now().After(deadline) {
			t.Fatalf("%d watchers left on the server after the unmount", serverWatchers(h.Dir))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// A union branch, a graft and a graft served by replicas: each change
// shows at its own place in the mount, and one host of the replica set
// watches for both.
func TestWatchBranches(t *testing.T) {
	testenv.RequireFUSE(t)
	privateRuntime(t)
	hosts, cfg := testenv.StartHosts(t, 3)
	a, b, c := hosts[0], hosts[1], hosts[2]
	mnt := mountAt(t, mountpoint(t), a.Alias+":"+a.Dir, "-F", cfg, "-o", "cache_timeout=60",
		"g="+b.Alias+":"+b.Dir, "r="+c.Alias+","+b.Alias+":"+c.Dir)
	for _, h := range []*testenv.Host{a, b, c} {
		waitWatch(t, mnt, h.Alias, control.WatchActive)
	}
	var replica control.Branch
	for _, br := range statusJSON(t, mnt).Branches {
		if strings.HasPrefix(br.Name, "r=") {
			replica = br
		}
	}
	if len(replica.Hosts) != 2 || replica.Hosts[0].Watch != control.WatchActive ||
		replica.Hosts[1].Watch != control.WatchStandby || !strings.Contains(replica.Hosts[1].WatchDetail, c.Alias) {
		t.Errorf("replica set: %+v", replica.Hosts)
	}
	pushedWithin(t, filepath.Join(a.Dir, "x"), filepath.Join(mnt, "x"), "union")
	pushedWithin(t, filepath.Join(b.Dir, "y"), filepath.Join(mnt, "g", "y"), "graft")
	pushedWithin(t, filepath.Join(c.Dir, "z"), filepath.Join(mnt, "r", "z"), "replica")
	if n := serverWatchers(c.Dir); n != 1 {
		t.Errorf("%d watchers of the replicated directory", n)
	}
}

// The states the status reports are the watcher's.
func TestWatchStates(t *testing.T) {
	for _, s := range [][2]string{{string(watch.Starting), control.WatchStarting}, {string(watch.Active), control.WatchActive},
		{string(watch.Partial), control.WatchPartial}, {string(watch.Off), control.WatchOff}} {
		if s[0] != s[1] {
			t.Errorf("watch state %q is %q in the status", s[0], s[1])
		}
	}
}
