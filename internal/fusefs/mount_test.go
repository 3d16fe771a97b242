package fusefs

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"testing"
	"time"

	"github.com/hanwen/go-fuse/v2/fuse"

	"sshfsm/internal/defaults"
	"sshfsm/internal/namespace"
	"sshfsm/internal/remote"
	"sshfsm/internal/testenv"
	"sshfsm/internal/transport"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// testMount is one mounted filesystem over a fresh remote directory.
type testMount struct {
	mnt, dir string
	srv      *fuse.Server
	logs     *testenv.LogBuffer
}

// defaultOpts are the options the CLI chooses by default, without its
// prefetching and request timeout.
func defaultOpts() Options {
	return Options{
		AttrTimeout: defaults.CacheTimeout, EntryTimeout: defaults.CacheTimeout,
		NegativeTimeout: defaults.CacheTimeout, DirCacheTimeout: defaults.CacheTimeout,
		ContainSymlinks: true,
	}
}

// mountWith mounts a fresh remote directory; wrap, when non-nil, wraps
// the remote (to inject faults).
func mountWith(t *testing.T, o Options, wrap func(remote.Remote) remote.Remote) *testMount {
	t.Helper()
	testenv.RequireFUSE(t)
	tm := &testMount{dir: t.TempDir(), mnt: t.TempDir(), logs: &testenv.LogBuffer{}}
	r := newRemote(t, tm.dir)
	if wrap != nil {
		r = wrap(r)
	}
	if o.TransformSymlinks && o.MountPrefix == "" {
		o.MountPrefix = tm.dir
	}
	o.Logger = slog.New(slog.NewTextHandler(tm.logs, nil))
	srv, err := Mount(tm.mnt, namespace.Single(r), o, MountOptions{FsName: "test", Subtype: "sshfsm"})
	if err != nil {
		t.Fatalf("Mount: %v", err)
	}
	tm.srv = srv
	t.Cleanup(func() {
		tm.unmount(t)
		if t.Failed() {
			t.Logf("filesystem log:\n%s", tm.logs)
		}
	})
	return tm
}

func (tm *testMount) unmount(t *testing.T) {
	var err error
	for i := 0; i < 50; i++ {
		if err = tm.srv.Unmount(); err == nil {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err != nil {
		t.Errorf("Unmount: %v", err)
	}
	if testenv.MountedAt(tm.mnt) {
		_ = testenv.Unmount(tm.mnt)
		t.Errorf("mount left behind at %s", tm.mnt)
	}
}

func (tm *testMount) path(p string) string { return tm.mnt + "/" + p }

// newRemote serves dir through the real transport over an in-process
// SFTP server.
func newRemote(t *testing.T, dir string) remote.Remote {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	h, err := transport.Dial(ctx, transport.Options{
		Host: "inprocess", Dir: dir, Conns: 2,
		Dialer: testenv.SFTPDialer(dir),
	})
	if err != nil {
		t.Fatalf("transport.Dial: %v", err)
	}
	t.Cleanup(func() { h.Close() })
	return h.Remote()
}

func mustWrite(t *testing.T, p string, data []byte) {
	t.Helper()
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

func isErrno(err error, want error) bool { return errors.Is(err, want) }
