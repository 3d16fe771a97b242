package fusefs

import (
	"bytes"
	"context"
	"crypto/sha256"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

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
// the disk cache: its file reads as its own bytes, fetched from it.
func TestDigestOfAnotherHostNotServed(t *testing.T) {
	dirA, dirB, cacheDir := t.TempDir(), t.TempDir(), t.TempDir()
	const size = 3<<20 + 77 // several blocks: shared through a stored copy
	secret, own := randomBytes(size, 11), randomBytes(size, 12)
	writeOld(t, filepath.Join(dirA, "secret"), secret, time.Hour)
	writeOld(t, filepath.Join(dirB, "mine"), own, time.Hour)

	a := mountDiskAs(t, dirA, cacheDir, "host-a", &hookRemote{}, nil)
	if got := readAll(t, a.path("secret")); !bytes.Equal(got, secret) {
		t.Fatal("host A's file read wrong")
	}
	testenv.Eventually(t, "host A's file stored as a shared copy", func() bool { return a.cache.MayHold(size) })
	a.close(t)

	liar := &liarRemote{sum: sha256.Sum256(secret)}
	hook := &hookRemote{}
	b := mountDiskAs(t, dirB, cacheDir, "host-b", hook, func(h *hookRemote) remote.Remote {
		liar.hookRemote = h
		return liar
	})
	testenv.Eventually(t, "the disk cache counted what it stores", func() bool { return b.cache.MayHold(size) })
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
