package testenv

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/hanwen/go-fuse/v2/fs"
)

func TestMountedAt(t *testing.T) {
	if !MountedAt("/proc") {
		t.Error("/proc not seen as mounted")
	}
	dir := t.TempDir()
	if MountedAt(dir) {
		t.Errorf("%s seen as mounted", dir)
	}
	if err := Unmount(dir); err != nil {
		t.Errorf("Unmount of a plain directory: %v", err)
	}
}

func TestUnmountFUSE(t *testing.T) {
	RequireFUSE(t)
	src, mnt := t.TempDir(), filepath.Join(t.TempDir(), "mnt with space")
	if err := os.Mkdir(mnt, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(src, "f"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	root, err := fs.NewLoopbackRoot(src)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := fs.Mount(mnt, root, &fs.Options{})
	if err != nil {
		t.Fatal(err)
	}
	UnmountAtCleanup(t, mnt)
	if err := WaitMounted(mnt, 5*time.Second); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(mnt, "f")); err != nil || string(b) != "x" {
		t.Fatalf("read through the mount: %q %v", b, err)
	}
	// A busy mount (open file) still goes away: the lazy fallback detaches it.
	f, err := os.Open(filepath.Join(mnt, "f"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := Unmount(mnt); err != nil {
		t.Fatal(err)
	}
	if MountedAt(mnt) {
		t.Fatal("still mounted after Unmount")
	}
	f.Close()
	done := make(chan struct{})
	go func() { srv.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("FUSE server did not end after unmount")
	}
}
