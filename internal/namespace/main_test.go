package namespace_test

import (
	"context"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/pkg/sftp"

	"sshfsm/internal/fusefs"
	"sshfsm/internal/namespace"
	"sshfsm/internal/remote"
	"sshfsm/internal/testenv"
	"sshfsm/internal/transport"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// dial serves dir through the real transport over an in-process SFTP
// server (a read-only one if ro).
func dial(t testing.TB, name, dir string, ro bool) remote.Remote {
	t.Helper()
	var opts []sftp.ServerOption
	if ro {
		opts = append(opts, sftp.ReadOnly())
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	h, err := transport.Dial(ctx, transport.Options{
		Host: name, Dir: dir, Conns: 1, Timeout: 5 * time.Second, Reconnect: true,
		Dialer: testenv.SFTPDialer(dir, opts...),
	})
	if err != nil {
		t.Fatalf("transport.Dial %s: %v", name, err)
	}
	t.Cleanup(func() { h.Close() })
	return h.Remote()
}

// plant creates the entries of spec below dir: "d/" a directory, "f=text"
// a file, "l@target" a symlink (parents are created as needed).
func plant(t testing.TB, dir string, spec ...string) {
	t.Helper()
	for _, e := range spec {
		var err error
		switch {
		case strings.HasSuffix(e, "/"):
			err = os.MkdirAll(filepath.Join(dir, e), 0o755)
		case strings.Contains(e, "="):
			p, text, _ := strings.Cut(e, "=")
			if err = os.MkdirAll(filepath.Dir(filepath.Join(dir, p)), 0o755); err == nil {
				err = os.WriteFile(filepath.Join(dir, p), []byte(text), 0o644)
			}
		case strings.Contains(e, "@"):
			p, target, _ := strings.Cut(e, "@")
			if err = os.MkdirAll(filepath.Dir(filepath.Join(dir, p)), 0o755); err == nil {
				err = os.Symlink(target, filepath.Join(dir, p))
			}
		default:
			t.Fatalf("bad spec entry %q", e)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
}

// tree describes dir in plant's notation, sorted.
func tree(t testing.TB, dir string) []string {
	t.Helper()
	out := []string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == dir {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		switch {
		case d.Type()&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			out = append(out, rel+"@"+target)
		case d.IsDir():
			out = append(out, rel+"/")
		default:
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			out = append(out, rel+"="+string(b))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(out)
	return out
}

// errnoOf maps err as the FUSE layer's translator does.
func errnoOf(err error) syscall.Errno { return fusefs.Errno(err) }

// flaky wraps a remote with a Health the test sets. While down, every
// call is counted and hangs until its context ends, as a call to an
// unreachable host would wait for its timeout.
type flaky struct {
	remote.Remote
	mu      sync.Mutex // guards up and changed
	up      bool
	changed chan struct{}
	hung    atomic.Int64 // calls made while down
}

func newFlaky(r remote.Remote) *flaky {
	return &flaky{Remote: r, up: true, changed: make(chan struct{})}
}

func (f *flaky) Up() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.up
}

func (f *flaky) Changed() <-chan struct{} {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.changed
}

// set changes the state and fires Changed (also when the state stays:
// a reconnect of one channel).
func (f *flaky) set(up bool) {
	f.mu.Lock()
	f.up = up
	close(f.changed)
	f.changed = make(chan struct{})
	f.mu.Unlock()
}

// hang blocks a call made while down until ctx ends.
func (f *flaky) hang(ctx context.Context) error {
	if f.Up() {
		return nil
	}
	f.hung.Add(1)
	<-ctx.Done()
	return ctx.Err()
}

func (f *flaky) Lstat(ctx context.Context, p string) (remote.Attr, error) {
	if err := f.hang(ctx); err != nil {
		return remote.Attr{}, err
	}
	return f.Remote.Lstat(ctx, p)
}

func (f *flaky) Stat(ctx context.Context, p string) (remote.Attr, error) {
	if err := f.hang(ctx); err != nil {
		return remote.Attr{}, err
	}
	return f.Remote.Stat(ctx, p)
}

func (f *flaky) ReadDir(ctx context.Context, p string) ([]remote.DirEntry, error) {
	if err := f.hang(ctx); err != nil {
		return nil, err
	}
	return f.Remote.ReadDir(ctx, p)
}

func (f *flaky) Readlink(ctx context.Context, p string) (string, error) {
	if err := f.hang(ctx); err != nil {
		return "", err
	}
	return f.Remote.Readlink(ctx, p)
}

func (f *flaky) Open(ctx context.Context, p string, flags int, perm uint32) (remote.File, error) {
	if err := f.hang(ctx); err != nil {
		return nil, err
	}
	return f.Remote.Open(ctx, p, flags, perm)
}

func (f *flaky) Mkdir(ctx context.Context, p string, perm uint32) error {
	return cmpOr(f.hang(ctx), func() error { return f.Remote.Mkdir(ctx, p, perm) })
}

func (f *flaky) Remove(ctx context.Context, p string) error {
	return cmpOr(f.hang(ctx), func() error { return f.Remote.Remove(ctx, p) })
}

func (f *flaky) Rmdir(ctx context.Context, p string) error {
	return cmpOr(f.hang(ctx), func() error { return f.Remote.Rmdir(ctx, p) })
}

func (f *flaky) Rename(ctx context.Context, o, n string, noReplace bool) error {
	return cmpOr(f.hang(ctx), func() error { return f.Remote.Rename(ctx, o, n, noReplace) })
}

func (f *flaky) Symlink(ctx context.Context, target, p string) error {
	return cmpOr(f.hang(ctx), func() error { return f.Remote.Symlink(ctx, target, p) })
}

func (f *flaky) Link(ctx context.Context, o, n string) error {
	return cmpOr(f.hang(ctx), func() error { return f.Remote.Link(ctx, o, n) })
}

func (f *flaky) SetAttr(ctx context.Context, p string, a remote.SetAttr) error {
	return cmpOr(f.hang(ctx), func() error { return f.Remote.SetAttr(ctx, p, a) })
}

func (f *flaky) StatFS(ctx context.Context, p string) (remote.StatFS, error) {
	if err := f.hang(ctx); err != nil {
		return remote.StatFS{}, err
	}
	return f.Remote.StatFS(ctx, p)
}

func cmpOr(err error, then func() error) error {
	if err != nil {
		return err
	}
	return then()
}

// fixedFS wraps a remote with a fixed statfs answer.
type fixedFS struct {
	remote.Remote
	s remote.StatFS
}

func (f fixedFS) StatFS(ctx context.Context, p string) (remote.StatFS, error) { return f.s, nil }

// readAll reads the file p of ns.
func readAll(t testing.TB, ns remote.Remote, p string) string {
	t.Helper()
	ctx := context.Background()
	f, err := ns.Open(ctx, p, os.O_RDONLY, 0)
	if err != nil {
		t.Fatalf("open %s: %v", p, err)
	}
	defer f.Close(ctx)
	var out []byte
	buf := make([]byte, 4096)
	for off := int64(0); ; {
		n, err := f.ReadAt(ctx, buf, off)
		out = append(out, buf[:n]...)
		off += int64(n)
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("read %s: %v", p, err)
		}
	}
	return string(out)
}

// names returns the names of a listing.
func names(ents []remote.DirEntry) []string {
	out := []string{}
	for _, e := range ents {
		out = append(out, e.Name)
	}
	return out
}

var _ = namespace.NameMax
