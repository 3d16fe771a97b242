package watch

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	gofs "github.com/hanwen/go-fuse/v2/fs"

	"sshfsm/internal/testenv"
	"sshfsm/internal/transport"
)

// shows reports whether the mount's directory dir lists name.
func shows(t *testing.T, dir, name string) bool {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatalf("readdir %s: %v", dir, err)
	}
	return slices.ContainsFunc(ents, func(e os.DirEntry) bool { return e.Name() == name })
}

func content(p string) string {
	b, err := os.ReadFile(p)
	if err != nil {
		return "error: " + err.Error()
	}
	return string(b)
}

func gone(p string) bool {
	_, err := os.Lstat(p)
	return errors.Is(err, fs.ErrNotExist)
}

func write(t *testing.T, p, data string) {
	t.Helper()
	if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

// Every kind of change made on the server directly shows in the mount
// within a second, although the mount trusts what it saw for a minute.
func TestChangesShowWithinASecond(t *testing.T) {
	th := testenv.StartHost(t, "127.0.0.2")
	for _, f := range []string{"mod", "del", "old", "trunc", "mode", "new\nline"} {
		write(t, th.Dir+"/"+f, "original "+f)
	}
	if err := os.Mkdir(th.Dir+"/rmdir", 0o755); err != nil {
		t.Fatal(err)
	}
	rg := newRig(t, th, cacheFor, Options{})
	st := rg.waitState(t, Active, 15*time.Second)
	t.Logf("watches set up in %v", st.Setup)

	// What the mount sees first, and then caches for a minute.
	for _, f := range []string{"mod", "del", "old", "trunc", "new\nline"} {
		if got := content(rg.local(f)); got != "original "+f {
			t.Fatalf("%q: %q", f, got)
		}
	}
	for _, p := range []string{"created", "new", "made", "made/inner", "sp ace", "back\\slash", "\xff\xfe"} {
		if !gone(rg.local(p)) {
			t.Fatalf("%q exists before it was made", p)
		}
	}
	fi, err := os.Stat(rg.local("mode"))
	if err != nil || fi.Mode().Perm() != 0o644 {
		t.Fatalf("mode: %v %v", fi, err)
	}
	if !shows(t, rg.mnt, "del") || shows(t, rg.mnt, "created") {
		t.Fatal("first listing")
	}

	steps := []struct {
		name   string
		change func()
		seen   func() bool
	}{
		{"modify, same size", func() { write(t, rg.remote("mod"), "modified mod") },
			func() bool { return content(rg.local("mod")) == "modified mod" }},
		{"create", func() { write(t, rg.remote("created"), "fresh") },
			func() bool { return content(rg.local("created")) == "fresh" && shows(t, rg.mnt, "created") }},
		{"delete", func() { os.Remove(rg.remote("del")) },
			func() bool { return gone(rg.local("del")) && !shows(t, rg.mnt, "del") }},
		{"rename", func() { os.Rename(rg.remote("old"), rg.remote("new")) },
			func() bool {
				return gone(rg.local("old")) && content(rg.local("new")) == "original old" &&
					shows(t, rg.mnt, "new") && !shows(t, rg.mnt, "old")
			}},
		{"truncate", func() { truncateClosed(t, rg.remote("trunc"), 3) },
			func() bool { return content(rg.local("trunc")) == "ori" }},
		{"chmod", func() { os.Chmod(rg.remote("mode"), 0o600) },
			func() bool { fi, err := os.Stat(rg.local("mode")); return err == nil && fi.Mode().Perm() == 0o600 }},
		{"mkdir", func() { os.Mkdir(rg.remote("made"), 0o755) },
			func() bool {
				fi, err := os.Stat(rg.local("made"))
				// The lookup of inner caches its absence.
				return err == nil && fi.IsDir() && shows(t, rg.mnt, "made") && gone(rg.local("made/inner"))
			}},
		{"file in the new directory", func() { write(t, rg.remote("made/inner"), "inside") },
			func() bool { return content(rg.local("made/inner")) == "inside" }},
		{"rmdir", func() { os.Remove(rg.remote("rmdir")) },
			func() bool { return gone(rg.local("rmdir")) && !shows(t, rg.mnt, "rmdir") }},
		{"hostile names", func() {
			for _, n := range []string{"sp ace", "back\\slash", "\xff\xfe"} {
				write(t, rg.remote(n), n)
			}
			write(t, rg.remote("new\nline"), "changed")
		}, func() bool {
			return content(rg.local("sp ace")) == "sp ace" && content(rg.local("back\\slash")) == "back\\slash" &&
				content(rg.local("\xff\xfe")) == "\xff\xfe" && content(rg.local("new\nline")) == "changed"
		}},
	}
	for _, s := range steps {
		s.change()
		d := within(t, time.Second, s.name, s.seen)
		t.Logf("%s: seen after %v", s.name, d.Round(time.Millisecond))
	}
	if st := rg.w.Status()[0]; st.State != Active || st.Changes == 0 {
		t.Errorf("status %+v", st)
	}
}

// truncateClosed truncates p to size through a descriptor opened for
// writing and closes it, as truncate(1) and editors do.
func truncateClosed(t *testing.T, p string, size int64) {
	t.Helper()
	f, err := os.OpenFile(p, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(size); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

// openLog mounts a watched tree holding "log", reads it through the mount,
// and opens it on the server for appending.
func openLog(t *testing.T, o Options) (*rig, *os.File) {
	t.Helper()
	th := testenv.StartHost(t, "127.0.0.2")
	write(t, th.Dir+"/log", "line 0\n")
	rg := newRig(t, th, cacheFor, o)
	rg.waitState(t, Active, 15*time.Second)
	if got := content(rg.local("log")); got != "line 0\n" {
		t.Fatalf("first read: %q", got)
	}
	f, err := os.OpenFile(rg.remote("log"), os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	return rg, f
}

// By default a file written in place on the server shows its new contents
// once its writer closes it, and the mount's own writes, each a write(2)
// on the server, reach no watcher at all.
func TestWritesShowAtClose(t *testing.T) {
	rg, f := openLog(t, Options{})
	if _, err := f.WriteString("line 1\n"); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	d := within(t, time.Second, "append, closed", func() bool { return content(rg.local("log")) == "line 0\nline 1\n" })
	t.Logf("append seen %v after the close", d.Round(time.Millisecond))

	out, err := os.Create(rg.local("out"))
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	block := make([]byte, 4096)
	writeSynced := func() {
		t.Helper()
		if _, err := out.Write(block); err != nil {
			t.Fatal(err)
		}
		if err := out.Sync(); err != nil { // each write reaches the server on its own
			t.Fatal(err)
		}
	}
	writeSynced()
	time.Sleep(200 * time.Millisecond) // the creation's records pass
	before := rg.paths.Load()
	for range 100 {
		writeSynced()
	}
	time.Sleep(200 * time.Millisecond)
	if n := rg.paths.Load() - before; n != 0 {
		t.Errorf("100 writes through the mount reached it back as %d changed paths", n)
	}
}

// With Options.Writes, a file written in place and kept open, and a
// truncation by path, show within a second.
func TestWritesOption(t *testing.T) {
	rg, f := openLog(t, Options{Writes: true})
	defer f.Close()
	for i := 1; i <= 3; i++ {
		if _, err := fmt.Fprintf(f, "line %d\n", i); err != nil {
			t.Fatal(err)
		}
		want := content(rg.remote("log"))
		d := within(t, time.Second, fmt.Sprintf("append %d, kept open", i), func() bool { return content(rg.local("log")) == want })
		t.Logf("append %d seen after %v", i, d.Round(time.Millisecond))
	}
	if err := os.Truncate(rg.remote("log"), 3); err != nil {
		t.Fatal(err)
	}
	within(t, time.Second, "truncate(2)", func() bool { return content(rg.local("log")) == "lin" })
}

// The median delay from a change on the server to the mount seeing it.
func TestLatency(t *testing.T) {
	th := testenv.StartHost(t, "127.0.0.2")
	write(t, th.Dir+"/f", "version 00")
	rg := newRig(t, th, cacheFor, Options{})
	rg.waitState(t, Active, 15*time.Second)
	if content(rg.local("f")) != "version 00" {
		t.Fatal("first read")
	}
	var ds []time.Duration
	for i := 1; i <= 20; i++ {
		want := fmt.Sprintf("version %02d", i)
		write(t, rg.remote("f"), want)
		start := time.Now()
		for content(rg.local("f")) != want {
			if time.Since(start) > time.Second {
				t.Fatalf("change %d not seen within a second", i)
			}
			time.Sleep(time.Millisecond)
		}
		ds = append(ds, time.Since(start))
	}
	slices.Sort(ds)
	t.Logf("remote change to mount: median %v, min %v, max %v (20 changes, window %v)",
		ds[len(ds)/2].Round(100*time.Microsecond), ds[0].Round(100*time.Microsecond),
		ds[len(ds)-1].Round(100*time.Microsecond), DefaultWindow)
}

// A tree of 2 000 directories: the watcher sets a watch on each before it
// reports anything, in the background.
func TestSetupLargeTree(t *testing.T) {
	th := testenv.StartHost(t, "127.0.0.2")
	for i := range 40 {
		for j := range 50 {
			if err := os.MkdirAll(fmt.Sprintf("%s/d%d/e%d", th.Dir, i, j), 0o755); err != nil {
				t.Fatal(err)
			}
		}
	}
	rg := newRig(t, th, cacheFor, Options{})
	st := rg.waitState(t, Active, 60*time.Second)
	t.Logf("watches on 2040 directories set up in %v (%v from the start, probe included)",
		st.Setup.Round(time.Millisecond), time.Since(rg.started).Round(time.Millisecond))
	if !gone(rg.local("d39/e49/x")) {
		t.Fatal("x exists")
	}
	write(t, rg.remote("d39/e49/x"), "deep")
	within(t, time.Second, "a file deep down", func() bool { return content(rg.local("d39/e49/x")) == "deep" })
}

// Without inotifywait on the server, the status says why and the cache
// timeouts rule as before.
func TestWithoutInotifywait(t *testing.T) {
	th := testenv.StartHost(t, "127.0.0.2")
	rg := newRig(t, th, time.Second, Options{program: "/nonexistent/inotifywait"})
	st := rg.waitState(t, Off, 10*time.Second)
	if !strings.Contains(st.Detail, "not found") || st.Host != th.Alias {
		t.Errorf("status %+v", st)
	}
	if !gone(rg.local("later")) {
		t.Fatal("later exists")
	}
	write(t, rg.remote("later"), "x")
	d := within(t, 5*time.Second, "a file made on the server, after the timeouts", func() bool { return content(rg.local("later")) == "x" })
	t.Logf("seen after %v (timeouts 1s)", d.Round(time.Millisecond))
	// A reconnect (a loaded machine's channel timing out) makes the
	// watcher probe again, passing through Starting: it must end Off
	// again, having pushed nothing.
	if st := rg.waitState(t, Off, testenv.Patience()); st.Changes != 0 {
		t.Errorf("status %+v", st)
	}
}

// A server that gives SFTP and no shell cannot run the watcher.
func TestSFTPOnlyServer(t *testing.T) {
	th := testenv.StartHostWith(t, testenv.Options{Addr: "127.0.0.2", SFTPOnly: true})
	rg := newRig(t, th, cacheFor, Options{})
	st := rg.waitState(t, Off, 10*time.Second)
	if !strings.Contains(st.Detail, "SFTP only") {
		t.Errorf("status %+v", st)
	}
}

// A host reached without ssh runs no commands; the watcher gives up for
// good.
func TestWithoutSSH(t *testing.T) {
	dir := t.TempDir()
	h, err := transport.Dial(context.Background(), transport.Options{Host: "inprocess", Dir: dir,
		Dialer: testenv.SFTPDialer(dir)})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	w := New([]Target{{Candidates: []Candidate{hostCandidate("inprocess", h)}}}, Options{})
	w.Start()
	done := make(chan struct{})
	go func() {
		w.wg.Wait() // every runner returned (the coalescer is stopped by Close)
		close(done)
	}()
	deadline := time.Now().Add(5 * time.Second)
	for w.Status()[0].State != Off {
		if time.Now().After(deadline) {
			t.Fatalf("status %+v", w.Status()[0])
		}
		time.Sleep(10 * time.Millisecond)
	}
	if st := w.Status()[0]; !strings.Contains(st.Detail, "without ssh") {
		t.Errorf("status %+v", st)
	}
	w.Close()
	<-done
}

// masterSSH returns the pid of this process's ssh child that is the
// multiplexing master of host (channel slot 0).
func masterSSH(t *testing.T, host string) int {
	t.Helper()
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err1 := os.ReadFile("/proc/" + e.Name() + "/stat")
		cmd, err2 := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err1 != nil || err2 != nil {
			continue
		}
		s := string(stat)
		fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
		if len(fields) > 1 && fields[1] == strconv.Itoa(os.Getpid()) &&
			strings.Contains(string(cmd), "-oControlMaster=yes") && strings.Contains(string(cmd), host) {
			return pid
		}
	}
	t.Fatal("no ssh master found")
	return 0
}

// The watcher comes back after its connection is lost and re-established
// (the local ssh killed, then the whole sshd), each time with the watcher
// of the lost connection gone from the server, and none is left once it is
// closed.
func TestReconnect(t *testing.T) {
	th := testenv.StartHost(t, "127.0.0.2")
	rg := newRig(t, th, cacheFor, Options{minBackoff: 50 * time.Millisecond})
	rg.waitState(t, Active, 15*time.Second)
	root := rg.h.Root()
	first := watchers(root)
	if len(first) != 1 {
		t.Fatalf("watchers on the server: %v", first)
	}
	breaks := []struct {
		name string
		cut  func()
	}{
		{"local ssh killed", func() { syscall.Kill(masterSSH(t, th.Alias), syscall.SIGKILL) }},
		{"sshd restarted", func() {
			if err := th.Restart(); err != nil {
				t.Fatal(err)
			}
		}},
	}
	for i, b := range breaks {
		before := watchers(root)
		b.cut()
		within(t, 10*time.Second, b.name+": the watcher notices", func() bool { return rg.w.Status()[0].State != Active })
		within(t, 20*time.Second, b.name+": the watcher comes back", func() bool {
			ws := watchers(root)
			return rg.w.Status()[0].State == Active && len(ws) == 1 && !slices.Contains(before, ws[0])
		})
		name := fmt.Sprintf("after%d", i)
		if !gone(rg.local(name)) {
			t.Fatalf("%s exists", name)
		}
		write(t, rg.remote(name), "pushed")
		within(t, time.Second, b.name+": a change after the reconnect", func() bool { return content(rg.local(name)) == "pushed" })
	}
	if n := rg.h.Stats().Requests["watch"]; n != 3 {
		t.Errorf("%d watcher commands, want 3", n)
	}
	rg.w.Close()
	noWatcherLeft(t, root)
}

// limitedInotifywait writes a script that runs inotifywait in a user
// namespace whose inotify watch limit is n (as fs.inotify.max_user_watches
// would be on the server), skipping the test where the machine has no
// user namespaces.
func limitedInotifywait(t *testing.T, n int) string {
	t.Helper()
	if out, err := exec.Command("unshare", "-U", "-r", "sh", "-c", "echo 1 > /proc/sys/user/max_inotify_watches").CombinedOutput(); err != nil {
		t.Skipf("cannot lower the inotify watch limit in a user namespace here: %v %s", err, out)
	}
	p := filepath.Join(t.TempDir(), "inotifywait")
	script := fmt.Sprintf("#!/bin/sh\nexec unshare -U -r sh -c 'echo %d > /proc/sys/user/max_inotify_watches && exec inotifywait \"$@\"' sh \"$@\"\n", n)
	if err := os.WriteFile(p, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

// A tree with more directories than the server lets a user watch: the
// watcher is off, says why, and the timeouts apply.
func TestWatchLimit(t *testing.T) {
	th := testenv.StartHost(t, "127.0.0.2")
	for i := range 10 {
		if err := os.Mkdir(fmt.Sprintf("%s/d%d", th.Dir, i), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	rg := newRig(t, th, time.Second, Options{program: limitedInotifywait(t, 5)})
	st := rg.waitState(t, Off, 10*time.Second)
	if !strings.Contains(st.Detail, "max_user_watches") {
		t.Errorf("status %+v", st)
	}
	if n := rg.logs.Count("inotify watch limit"); n != 1 {
		t.Errorf("the limit is logged %d times", n)
	}
	write(t, rg.remote("d1/f"), "x")
	within(t, 5*time.Second, "a change, after the timeouts", func() bool { return content(rg.local("d1/f")) == "x" })
}

// New directories beyond the limit are not watched: the watcher says it
// is partial, and goes on pushing the changes of the others.
func TestWatchLimitPartial(t *testing.T) {
	th := testenv.StartHost(t, "127.0.0.2")
	if err := os.Mkdir(th.Dir+"/old", 0o755); err != nil {
		t.Fatal(err)
	}
	rg := newRig(t, th, cacheFor, Options{program: limitedInotifywait(t, 3)})
	rg.waitState(t, Active, 10*time.Second)
	for i := range 3 {
		if err := os.Mkdir(fmt.Sprintf("%s/new%d", th.Dir, i), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	st := rg.waitState(t, Partial, 5*time.Second)
	if !strings.Contains(st.Detail, "max_user_watches") {
		t.Errorf("status %+v", st)
	}
	if !gone(rg.local("old/f")) {
		t.Fatal("old/f exists")
	}
	write(t, rg.remote("old/f"), "x")
	within(t, time.Second, "a change in a watched directory", func() bool { return content(rg.local("old/f")) == "x" })
}

// The watched directory removed on the server: the watcher stops, and
// starts again once it is back.
func TestWatchedDirectoryRemoved(t *testing.T) {
	th := testenv.StartHost(t, "127.0.0.2")
	rg := newRig(t, th, cacheFor, Options{minBackoff: 50 * time.Millisecond})
	rg.waitState(t, Active, 15*time.Second)
	root := rg.h.Root()
	if err := os.Rename(root, root+".away"); err != nil {
		t.Fatal(err)
	}
	st := rg.waitState(t, Off, 5*time.Second)
	t.Logf("status while away: %+v", st)
	if err := os.Rename(root+".away", root); err != nil {
		t.Fatal(err)
	}
	rg.waitState(t, Active, 10*time.Second)
	if ws := watchers(root); len(ws) != 1 {
		t.Errorf("watchers on the server: %v", ws)
	}
	if !gone(rg.local("back")) {
		t.Fatal("back exists")
	}
	write(t, rg.remote("back"), "x")
	within(t, time.Second, "a change once back", func() bool { return content(rg.local("back")) == "x" })
}

// A burst of 10 000 new files (a checkout) reaches the mount in a few
// batches, and the changes after it are not held up.
func TestBurst(t *testing.T) {
	th := testenv.StartHost(t, "127.0.0.2")
	for d := range 20 {
		if err := os.Mkdir(fmt.Sprintf("%s/d%d", th.Dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	rg := newRig(t, th, cacheFor, Options{})
	rg.waitState(t, Active, 15*time.Second)
	for d := range 20 { // listed, and so cached for a minute
		if ents, err := os.ReadDir(rg.local(fmt.Sprintf("d%d", d))); err != nil || len(ents) != 0 {
			t.Fatalf("d%d: %d entries, %v", d, len(ents), err)
		}
	}
	start := time.Now()
	for d := range 20 {
		for f := range 500 {
			write(t, fmt.Sprintf("%s/d%d/f%d", th.Dir, d, f), "x")
		}
	}
	made := time.Since(start)
	d := within(t, 5*time.Second, "10 000 new files", func() bool {
		for d := range 20 {
			ents, err := os.ReadDir(rg.local(fmt.Sprintf("d%d", d)))
			if err != nil || len(ents) != 500 {
				return false
			}
		}
		return true
	})
	t.Logf("10 000 files made in %v; all listed %v later; %d batches of %d paths in all",
		made.Round(time.Millisecond), d.Round(time.Millisecond), rg.batches.Load(), rg.paths.Load())
	if n := rg.batches.Load(); n > int64(made/DefaultWindow)+10 {
		t.Errorf("%d batches for a burst of %v", n, made)
	}
	write(t, rg.remote("after"), "x")
	within(t, time.Second, "a change after the burst", func() bool { return content(rg.local("after")) == "x" })
}

// The echo of a directory the mount made comes back while a process works
// in it: the directory's entry stays (some kernels unhash a directory
// whose entry is invalidated, and getcwd fails there), and the process
// goes on working there.
func TestWorkingDirectoryKeepsItsEntry(t *testing.T) {
	th := testenv.StartHost(t, "127.0.0.2")
	rg := newRig(t, th, cacheFor, Options{})
	rg.waitState(t, Active, 15*time.Second)
	for i := range 3 {
		dir := rg.local(fmt.Sprintf("work%d", i))
		if err := os.Mkdir(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		// The echo of the mkdir arrives while the helper waits.
		cmd := exec.Command(os.Args[0])
		cmd.Env = append(os.Environ(), getcwdEnv+"="+dir)
		out, err := cmd.CombinedOutput()
		if err != nil || string(out) != dir+"\n" {
			t.Fatalf("getcwd in a new directory: %q, %v", out, err)
		}
		if _, err := os.Stat(rg.remote(fmt.Sprintf("work%d/here", i))); err != nil {
			t.Fatal(err)
		}
	}
	if rg.w.Status()[0].Changes == 0 {
		t.Error("no echo came back")
	}
}

// fuseOver mounts a loopback FUSE file system over dir, holding what dir
// held, until the test ends: a tree the server keeps on a file system of
// the kind networkFS lists.
func fuseOver(t *testing.T, dir string) {
	t.Helper()
	testenv.RequireFUSE(t)
	under := t.TempDir()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if err := os.Rename(filepath.Join(dir, e.Name()), filepath.Join(under, e.Name())); err != nil {
			t.Fatal(err)
		}
	}
	root, err := gofs.NewLoopbackRoot(under)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := gofs.Mount(dir, root, &gofs.Options{}); err != nil {
		t.Fatal(err)
	}
	testenv.UnmountAtCleanup(t, dir)
	if err := testenv.WaitMounted(dir, 5*time.Second); err != nil {
		t.Fatal(err)
	}
}

// A tree on a network file system of the server (FUSE here) is not
// watched by default, and the status says why and how to watch it; the
// timeouts apply. With Options.Network it is watched, and a change made on
// the server through that file system shows within a second.
func TestNetworkFileSystem(t *testing.T) {
	th := testenv.StartHost(t, "127.0.0.2")
	fuseOver(t, th.Dir)
	write(t, th.Dir+"/f", "first")

	t.Run("default", func(t *testing.T) {
		rg := newRig(t, th, time.Second, Options{})
		st := rg.waitState(t, Off, 10*time.Second)
		if !strings.Contains(st.Detail, "on FUSE on the server") || !strings.Contains(st.Detail, "watch=yes") {
			t.Fatalf("status %+v", st)
		}
		if n := len(watchers(th.Dir)); n != 0 {
			t.Errorf("%d watchers run on the server", n)
		}
		if got := content(rg.local("f")); got != "first" {
			t.Fatalf("first read: %q", got)
		}
		write(t, rg.remote("f"), "second")
		within(t, 5*time.Second, "a change after the timeouts", func() bool { return content(rg.local("f")) == "second" })
		if st := rg.w.Status()[0]; st.State != Off || st.Changes != 0 {
			t.Errorf("status %+v", st)
		}
	})

	t.Run("network", func(t *testing.T) {
		rg := newRig(t, th, cacheFor, Options{Network: true})
		rg.waitState(t, Active, 15*time.Second)
		if got := content(rg.local("f")); got != "second" {
			t.Fatalf("first read: %q", got)
		}
		write(t, rg.remote("f"), "third!")
		d := within(t, time.Second, "a change through the server's FUSE", func() bool { return content(rg.local("f")) == "third!" })
		t.Logf("seen after %v", d.Round(time.Millisecond))
	})
}
