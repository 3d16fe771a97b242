package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"sshfsm/internal/netproxy"
	"sshfsm/internal/testenv"
)

// TestSlowLinkMutationsWithinTimeout makes changes that take the server
// several requests one after another (a rename over an open file, an
// unlink of an open file, mkdir -p, a symlink and its lchown, a chown of
// the owner alone, a truncate and utimes by path, a hard link, a create
// with a chmod) on a link that is slow but alive: each round trip takes
// most of the timeout, so that any one server request is answered in
// time, but two one after another are not. Every request of the kernel
// must still be answered within the timeout as a whole (the watchdog's
// limit): the steps of one change share its deadline, and a change whose
// steps do not fit fails (ETIMEDOUT) rather than waiting one timeout per
// step. A change reported made must be on the server.
func TestSlowLinkMutationsWithinTimeout(t *testing.T) {
	const timeout = 2 * time.Second
	h := testenv.StartHost(t, "127.0.0.9")
	for _, d := range []string{"over", "open", "own", "trunc", "link", "sym"} {
		if err := os.MkdirAll(filepath.Join(h.Dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{"over/a", "over/b", "open/f", "own/f", "trunc/f", "link/target"} {
		writeServerFile(t, filepath.Join(h.Dir, f), 4096, 5)
	}
	for _, l := range []string{"old", "probe"} {
		if err := os.Symlink("target", filepath.Join(h.Dir, "sym", l)); err != nil {
			t.Fatal(err)
		}
	}
	p, sshArgs, dest := proxied(t, h, netproxy.Options{})
	m := mount(t, h, mountSpec{sshArgs: sshArgs, dest: dest,
		opts: []string{fmt.Sprintf("timeout=%g", timeout.Seconds())}})
	t.Cleanup(func() { testenv.AbortFUSE(m.Dir) }) // releases any call still waiting
	// Everything to be changed is looked up and listed first: the changes
	// then cost only their own server requests.
	for _, d := range []string{"", "over", "open", "own", "trunc", "link", "sym"} {
		if _, err := os.ReadDir(m.Path(d)); err != nil {
			t.Fatal(err)
		}
	}
	openB, err := os.Open(m.Path("over", "b"))
	if err != nil {
		t.Fatal(err)
	}
	defer openB.Close()
	openF, err := os.Open(m.Path("open", "f"))
	if err != nil {
		t.Fatal(err)
	}
	defer openF.Close()
	wd := startWatchdog(t, m, timeout)

	// A round trip of 85% of the timeout: one request fits, and two one
	// after another outlast the watchdog's limit by more than its poll.
	rtt := timeout * 85 / 100
	uid := os.Getuid()
	then := time.Date(2001, 2, 3, 4, 5, 6, 0, time.UTC)
	type change struct {
		what  string
		do    func() error
		check func() error // on the server, when do succeeded
	}
	changes := []change{
		{"rename over an open file", func() error { return os.Rename(m.Path("over", "a"), m.Path("over", "b")) },
			func() error { return serverGone(m.RemotePath("over", "a")) }},
		{"unlink an open file", func() error { return os.Remove(m.Path("open", "f")) },
			func() error { return serverGone(m.RemotePath("open", "f")) }},
		{"mkdir -p", func() error { return os.MkdirAll(m.Path("deep", "a", "b", "c"), 0o755) },
			func() error { _, err := os.Stat(m.RemotePath("deep", "a", "b", "c")); return err }},
		{"symlink", func() error { return os.Symlink("target", m.Path("sym", "l")) },
			func() error { _, err := os.Lstat(m.RemotePath("sym", "l")); return err }},
		{"lchown of a symlink", func() error { return os.Lchown(m.Path("sym", "old"), uid, -1) }, nil},
		{"chown of the owner alone", func() error { return os.Chown(m.Path("own", "f"), uid, -1) }, nil},
		{"truncate by path", func() error { return os.Truncate(m.Path("trunc", "f"), 100) },
			func() error { return serverSize(m.RemotePath("trunc", "f"), 100) }},
		{"utimes by path", func() error { return os.Chtimes(m.Path("trunc", "f"), then, then) },
			func() error { return serverMtime(m.RemotePath("trunc", "f"), then) }},
		{"hard link", func() error { return os.Link(m.Path("link", "target"), m.Path("link", "second")) },
			func() error { _, err := os.Lstat(m.RemotePath("link", "second")); return err }},
		{"create, chmod and close", func() error {
			f, err := os.OpenFile(m.Path("new"), os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
			if err != nil {
				return err
			}
			if err := f.Chmod(0o640); err != nil {
				f.Close()
				return err
			}
			return f.Close()
		}, func() error { return serverMode(m.RemotePath("new"), 0o640) }},
	}
	made := 0
	for i, c := range changes {
		// Each change starts on a link that works: a request given up
		// by the one before may have cost its channel, and the first
		// channel, which runs the commands (lchown), may be redialling.
		p.SetOptions(netproxy.Options{})
		testenv.EventuallyNoError(t, "a create and an lchown on the fast link", func() error {
			if err := os.WriteFile(m.Path(fmt.Sprintf("probe-%d", i)), nil, 0o644); err != nil {
				return err
			}
			return os.Lchown(m.Path("sym", "probe"), uid, -1)
		})
		p.SetOptions(netproxy.Symmetric(rtt/2, 0))
		start := time.Now()
		var err error
		within(t, testenv.Patience(), c.what, func() error { err = c.do(); return nil })
		t.Logf("%s: %v after %v", c.what, err, time.Since(start).Round(time.Millisecond))
		if err == nil && c.check != nil {
			made++
			if cerr := c.check(); cerr != nil {
				t.Errorf("%s succeeded, but the server does not show it: %v", c.what, cerr)
			}
		}
	}
	age, kind := wd.oldest()
	t.Logf("%d of %d changes made; oldest request seen %v (%s)", made, len(changes), age.Round(time.Millisecond), kind)
	p.SetOptions(netproxy.Options{})
	testenv.EventuallyNoError(t, "a create once the link is fast again", func() error {
		return os.WriteFile(m.Path("after"), []byte("x"), 0o644)
	})
}

func serverGone(p string) error {
	if _, err := os.Lstat(p); !os.IsNotExist(err) {
		return fmt.Errorf("%s still there (%v)", p, err)
	}
	return nil
}

func serverSize(p string, want int64) error {
	fi, err := os.Stat(p)
	if err != nil {
		return err
	}
	if fi.Size() != want {
		return fmt.Errorf("%s has size %d, want %d", p, fi.Size(), want)
	}
	return nil
}

func serverMtime(p string, want time.Time) error {
	fi, err := os.Stat(p)
	if err != nil {
		return err
	}
	if !fi.ModTime().Equal(want) {
		return fmt.Errorf("%s has mtime %v, want %v", p, fi.ModTime(), want)
	}
	return nil
}

func serverMode(p string, want os.FileMode) error {
	fi, err := os.Stat(p)
	if err != nil {
		return err
	}
	if fi.Mode().Perm() != want {
		return fmt.Errorf("%s has mode %v, want %v", p, fi.Mode().Perm(), want)
	}
	return nil
}
