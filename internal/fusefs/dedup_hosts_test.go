package fusefs

import (
	"bytes"
	"context"
	"crypto/sha256"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"sshfsm/internal/contentcache"
	"sshfsm/internal/remote"
	"sshfsm/internal/testenv"
)

// liarRemote is a branch that answers every digest asked of it with sum,
// whatever its files hold.
type liarRemote struct {
	*hookRemote
	sum  [32]byte
	sums atomic.Int64
}

func (l *liarRemote) SHA256(ctx context.Context, p string) ([32]byte, error) {
	l.sums.Add(1)
	return l.sum, nil
}

func (l *liarRemote) HostName() string { return l.hookRemote.Remote.(hostNamer).HostName() }

// A server that reports, for a file of its own, the digest of a file
// another host served (same size) is not served that host's content from
// the disk cache: its file reads as its own bytes, fetched from it. The
// server holds stored content of that size of its own, so that the mount
// asks it for the digest.
func TestDigestOfAnotherHostNotServed(t *testing.T) {
	dirA, dirB, cacheDir := t.TempDir(), t.TempDir(), t.TempDir()
	const size = 3<<20 + 77 // several blocks: shared through a stored copy
	secret, own := randomBytes(size, 11), randomBytes(size, 12)
	writeOld(t, filepath.Join(dirA, "secret"), secret, time.Hour)
	writeOld(t, filepath.Join(dirB, "mine"), own, time.Hour)
	writeOld(t, filepath.Join(dirB, "other"), randomBytes(size, 13), time.Hour)

	a := mountDiskAs(t, dirA, cacheDir, "host-a", &hookRemote{}, nil)
	if got := readAll(t, a.path("secret")); !bytes.Equal(got, secret) {
		t.Fatal("host A's file read wrong")
	}
	keyA := contentcache.Key{Host: "host-a", Size: size}
	testenv.Eventually(t, "host A's file stored as a shared copy", func() bool { return a.cache.MayHold(keyA) })
	a.close(t)

	liar := &liarRemote{sum: sha256.Sum256(secret)}
	hook := &hookRemote{}
	b := mountDiskAs(t, dirB, cacheDir, "host-b", hook, func(h *hookRemote) remote.Remote {
		liar.hookRemote = h
		return liar
	})
	readAll(t, b.path("other"))
	keyB := contentcache.Key{Host: "host-b", Size: size}
	testenv.Eventually(t, "host B's other file stored as a shared copy", func() bool { return b.cache.MayHold(keyB) })
	if got := readAll(t, b.path("mine")); !bytes.Equal(got, own) {
		t.Errorf("host B's file read as another host's content (equal to A's: %v)", bytes.Equal(got, secret))
	}
	if liar.sums.Load() == 0 {
		t.Error("the mount never asked host B for a digest: the test does not test the lie")
	}
	if len(hook.readsOf("mine")) == 0 {
		t.Error("no READ reached host B for its file")
	}
}

// storedCopyOfSize reports whether the disk cache in cacheDir holds a
// stored copy (content shared by digest) of exactly size bytes.
func storedCopyOfSize(cacheDir string, size int64) bool {
	ds, _ := filepath.Glob(filepath.Join(cacheDir, "content", "o", "*", "*", "d"))
	for _, d := range ds {
		if fi, err := os.Stat(d); err == nil && fi.Size() == size {
			return true
		}
	}
	return false
}

// Whether the disk cache stores another host's content of some size is
// not told to a server: opening a file of that size on a host that has no
// stored content of it asks that host for no digest (the digest command
// it would see is a yes).
func TestStoredSizesOfAnotherHostNotTold(t *testing.T) {
	dirA, dirB, cacheDir := t.TempDir(), t.TempDir(), t.TempDir()
	const size = 2<<20 + 99
	writeOld(t, filepath.Join(dirA, "secret"), randomBytes(size, 21), time.Hour)
	own := randomBytes(size, 22)
	writeOld(t, filepath.Join(dirB, "probe"), own, time.Hour)

	a := mountDiskAs(t, dirA, cacheDir, "host-a", &hookRemote{}, nil)
	readAll(t, a.path("secret"))
	testenv.Eventually(t, "host A's file stored as a shared copy", func() bool { return storedCopyOfSize(cacheDir, size) })
	a.close(t)

	liar := &liarRemote{}
	b := mountDiskAs(t, dirB, cacheDir, "host-b", &hookRemote{}, func(h *hookRemote) remote.Remote {
		liar.hookRemote = h
		return liar
	})
	// Let the new mount's cache count what the directory stores.
	testenv.Eventually(t, "the disk cache counted what it stores", func() bool { return b.cache.Stats().Entries > 0 })
	if got := readAll(t, b.path("probe")); !bytes.Equal(got, own) {
		t.Fatal("host B's file read wrong")
	}
	if n := liar.sums.Load(); n != 0 {
		t.Errorf("host B was asked for %d digests of a file whose size only host A's stored content has", n)
	}
}
