package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"sshfsm/internal/testenv"
)

// rm -rf of a tree made on the server, met by a fresh mount in its default
// mode, sends what the protocol needs and little more: per name one
// REMOVE or RMDIR, per directory its listing; rm's lookups and stats are
// answered by the listings.
func TestRemoveTreeMadeOnServerRequests(t *testing.T) {
	h := testenv.StartHost(t, "127.0.0.2")
	const dirs, files = 4, 10
	top := filepath.Join(h.Dir, "tree")
	var nd, nf uint64 = 1, 0
	for i := 0; i < dirs; i++ {
		d := filepath.Join(top, fmt.Sprintf("d%d", i), "sub")
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		nd += 2
		for j := 0; j < files; j++ {
			for _, p := range []string{filepath.Dir(d), d} {
				if err := os.WriteFile(filepath.Join(p, fmt.Sprintf("f%d", j)), []byte("x\n"), 0o644); err != nil {
					t.Fatal(err)
				}
				nf++
			}
		}
	}
	m := mount(t, h, mountSpec{})
	before := mountRequests(t, m.Dir)
	if out, err := exec.Command("rm", "-rf", m.Path("tree")).CombinedOutput(); err != nil {
		t.Fatalf("rm -rf: %v: %s", err, out)
	}
	after := mountRequests(t, m.Dir)
	sent := map[string]uint64{}
	var parts []string
	for k, v := range after {
		if n := v - before[k]; n > 0 {
			sent[k] = n
			parts = append(parts, fmt.Sprintf("%s %d", k, n))
		}
	}
	sort.Strings(parts)
	t.Logf("rm -rf of %d files in %d directories sent: %s", nf, nd, strings.Join(parts, ", "))
	if _, err := os.Lstat(top); !os.IsNotExist(err) {
		t.Fatalf("tree left on the server: %v", err)
	}
	want := map[string]uint64{"REMOVE": nf, "RMDIR": nd}
	for typ, n := range want {
		if sent[typ] != n {
			t.Errorf("rm -rf sent %d %s, want %d", sent[typ], typ, n)
		}
	}
	// Anything else is the directories' listings: a one-level tree
	// listing each, or OPENDIR, READDIRs and CLOSE; never one request
	// per name.
	var other uint64
	for typ, n := range sent {
		if _, ok := want[typ]; !ok {
			other += n
		}
	}
	if other > 4*nd {
		t.Errorf("rm -rf sent %d requests besides its removals, want at most %d (four per directory)", other, 4*nd)
	}
}
