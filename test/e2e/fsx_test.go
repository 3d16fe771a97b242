package e2e

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"

	"sshfsm/internal/fsx"
	"sshfsm/internal/testenv"
)

// fsxSeeds are the seeds every mount configuration runs; a failure report
// names its seed, and fsx.Run with that seed repeats the same operations.
// SSHFSM_E2E_FSX_SEEDS (comma-separated) replaces them, to repeat a reported
// failure or to explore new sequences.
func fsxSeeds(t *testing.T) []uint64 {
	env := os.Getenv("SSHFSM_E2E_FSX_SEEDS")
	if env == "" {
		return []uint64{1, 2, 3}
	}
	var seeds []uint64
	for _, f := range strings.Split(env, ",") {
		s, err := strconv.ParseUint(strings.TrimSpace(f), 10, 64)
		if err != nil {
			t.Fatalf("SSHFSM_E2E_FSX_SEEDS: %v", err)
		}
		seeds = append(seeds, s)
	}
	return seeds
}

const fsxOps = 3000

func runFsx(t *testing.T, m *Mount, seeds []uint64, kinds []fsx.Kind) {
	for _, seed := range seeds {
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
			dir := m.Path(fmt.Sprintf("fsx-%d", seed))
			if err := os.Mkdir(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			t.Logf("fsx seed %d, %d operations in %s", seed, fsxOps, dir)
			if err := fsx.Run(dir, fsx.Options{Seed: seed, NumOps: fsxOps, Kinds: kinds}); err != nil {
				t.Fatal(err)
			}
			// What fsx left must also be what the server holds.
			local, err := os.ReadFile(m.RemotePath(fmt.Sprintf("fsx-%d", seed), "fsx.data"))
			if os.IsNotExist(err) {
				local, err = os.ReadFile(m.RemotePath(fmt.Sprintf("fsx-%d", seed), "fsx.data.moved"))
			}
			if err != nil {
				t.Fatalf("reading the file on the server: %v", err)
			}
			viaMount, err := os.ReadFile(m.Path(fmt.Sprintf("fsx-%d", seed), "fsx.data"))
			if os.IsNotExist(err) {
				viaMount, err = os.ReadFile(m.Path(fmt.Sprintf("fsx-%d", seed), "fsx.data.moved"))
			}
			if err != nil {
				t.Fatal(err)
			}
			if string(local) != string(viaMount) {
				t.Fatalf("server copy (%d bytes) differs from what the mount shows (%d bytes)", len(local), len(viaMount))
			}
		})
	}
}

func TestFsxDefault(t *testing.T) {
	h := testenv.StartHost(t, "127.0.0.2")
	m := mount(t, h, mountSpec{})
	runFsx(t, m, fsxSeeds(t), nil)
}

func TestFsxOneConnection(t *testing.T) {
	h := testenv.StartHost(t, "127.0.0.3")
	m := mount(t, h, mountSpec{opts: []string{"max_conns=1"}})
	runFsx(t, m, fsxSeeds(t), nil)
}

// TestFsxHugeOffsets includes writes beyond 4 GiB, which SFTP carries as
// 64-bit offsets.
func TestFsxHugeOffsets(t *testing.T) {
	h := testenv.StartHost(t, "127.0.0.2")
	m := mount(t, h, mountSpec{})
	runFsx(t, m, []uint64{4}, append(fsx.DefaultKinds(), fsx.Huge))
}
