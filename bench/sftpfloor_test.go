package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sshfsm/internal/testenv"
)

// TestSFTPFloor: the floor's bare client unpacks the tree on a real sshd
// as tar does (byte for byte, modes and times), and removes it whole.
func TestSFTPFloor(t *testing.T) {
	hosts, cfg := testenv.StartHosts(t, 1)
	h := hosts[0]
	tmp := t.TempDir()
	src := filepath.Join(tmp, "src")
	tree, err := genTree(src, specFor(60))
	if err != nil {
		t.Fatal(err)
	}
	ws := &writesEnv{tree: tree, src: src, tarball: filepath.Join(tmp, "src.tar"), cfg: cfg}
	if err := writeTar(src, ws.tarball); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	link := writeLink{alias: h.Alias}
	dst := filepath.Join(h.Dir, "untar")
	if err := os.Mkdir(dst, 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := ws.floorRun(ctx, link, opByID(t, "untar"), dst); err != nil {
		t.Fatal(err)
	}
	if err := ws.verifyUntar(ctx, dst); err != nil {
		t.Fatal(err)
	}
	if _, err := ws.floorRun(ctx, link, opByID(t, "rm"), dst); err != nil {
		t.Fatal(err)
	}
	if err := verifyGone(ws, ctx, dst); err != nil {
		t.Fatal(err)
	}

	// Both ways of listing: one find, and directory by directory.
	if err := os.Mkdir(dst, 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := ws.floorRun(ctx, link, opByID(t, "untar"), dst); err != nil {
		t.Fatal(err)
	}
	c, err := dialBareSFTP(ctx, cfg, h.Alias, filepath.Join(t.TempDir(), "s"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.close()
	ents, ok := c.listTree(ctx, dst)
	if want := ws.tree.files + ws.tree.dirs; !ok || len(ents) != want {
		t.Fatalf("listTree: %d entries (ok %v), want %d", len(ents), ok, want)
	}
	for i, e := range ents {
		if e.dir {
			for _, later := range ents[i+1:] {
				if strings.HasPrefix(later.name, e.name+"/") {
					t.Fatalf("listTree lists %s after its directory", later.name)
				}
			}
		}
	}
	if err := c.removeTree(dst); err != nil {
		t.Fatal(err)
	}
	if err := verifyGone(ws, ctx, dst); err != nil {
		t.Fatal(err)
	}
}

func opByID(t *testing.T, id string) writeOp {
	for _, op := range writeOps {
		if op.id == id {
			if !op.floored {
				t.Fatalf("op %s has no SFTP floor", id)
			}
			return op
		}
	}
	t.Fatalf("no op %s", id)
	return writeOp{}
}
