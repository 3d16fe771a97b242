package fusefs

import (
	"os"
	"testing"

	"sshfsm/internal/namespace"
	"sshfsm/internal/testenv"
)

// TestEndedWhenAborted: Options.Ended stays open while the mount serves,
// and is closed once its FUSE connection is aborted from outside,
// although the mount is still in the mount table.
func TestEndedWhenAborted(t *testing.T) {
	o := defaultOpts()
	o.Ended = make(chan struct{})
	tm := mountWith(t, o, nil)
	mustWrite(t, tm.path("f"), []byte("x"))
	if _, err := os.Stat(tm.path("f")); err != nil {
		t.Fatal(err)
	}
	if isClosed(o.Ended) {
		t.Fatal("Ended is closed while the mount serves")
	}
	if err := testenv.AbortFUSE(tm.mnt); err != nil {
		t.Fatalf("aborting the connection: %v", err)
	}
	testenv.Eventually(t, "Ended closed after the abort", func() bool { return isClosed(o.Ended) })
}

// TestEndedWhenUnmountedFromOutside: Options.Ended is closed once the
// mount is unmounted by someone else than its server.
func TestEndedWhenUnmountedFromOutside(t *testing.T) {
	testenv.RequireFUSE(t)
	o := defaultOpts()
	o.Ended = make(chan struct{})
	mnt := t.TempDir()
	srv, err := Mount(mnt, namespace.Single(newRemote(t, t.TempDir())), o, MountOptions{FsName: "test", Subtype: "sshfsm"})
	if err != nil {
		t.Fatalf("Mount: %v", err)
	}
	if _, err := os.ReadDir(mnt); err != nil {
		t.Fatal(err)
	}
	if isClosed(o.Ended) {
		t.Fatal("Ended is closed while the mount serves")
	}
	if err := testenv.Unmount(mnt); err != nil {
		t.Fatalf("unmounting from outside: %v", err)
	}
	testenv.Eventually(t, "Ended closed after the unmount", func() bool { return isClosed(o.Ended) })
	testenv.Returns(t, "the server's Wait", srv.Wait)
}

func isClosed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}
