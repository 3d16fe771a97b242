package journal

import (
	"context"
	"crypto/sha256"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"sshfsm/internal/testenv"
)

func TestMain(m *testing.M) {
	if os.Getenv(crashChildEnv) != "" {
		os.Exit(crashChild())
	}
	testenv.Main(m)
}

// openJournal opens the journal in dir; it is closed at the end of the
// test unless the test crashed or closed it.
func openJournal(t testing.TB, dir string, mod func(*Options)) (*Journal, []Change) {
	t.Helper()
	o := Options{Dir: dir}
	if mod != nil {
		mod(&o)
	}
	j, changes, err := Open(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = j.Close() })
	return j, changes
}

// crash stops j as kill -9 would leave it: what was committed stays, the
// active segment is not ended, nothing more is written.
func (j *Journal) crash() {
	j.mu.Lock()
	j.closing = true
	j.wake.Signal()
	j.mu.Unlock()
	<-j.stopped
	_ = j.seg.Close()
	_ = j.lock.Close()
}

func appendChange(t testing.TB, j *Journal, c Change) uint64 {
	t.Helper()
	seq, err := j.Append(context.Background(), c)
	if err != nil {
		t.Fatalf("append %s %s: %v", c.Op, c.Path, err)
	}
	return seq
}

// content is the deterministic content named seed.
func content(seed string, n int) []byte {
	s := sha256.Sum256([]byte(seed))
	b := make([]byte, n)
	_, _ = rand.NewChaCha8(s).Read(b)
	return b
}

// segFiles lists the journal's segment files.
func segFiles(t testing.TB, dir string) []string {
	t.Helper()
	m, err := filepath.Glob(filepath.Join(dir, "*"+segSuffix))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func spillFiles(t testing.TB, dir string) []os.DirEntry {
	t.Helper()
	ents, err := os.ReadDir(filepath.Join(dir, spillDirName))
	if err != nil {
		t.Fatal(err)
	}
	return ents
}
