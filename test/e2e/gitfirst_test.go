package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"sshfsm/internal/testenv"
)

// git runs git in dir (no user or system configuration) and returns its
// standard output.
func git(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-c", "safe.directory=*", "-c", "user.name=t",
		"-c", "user.email=t@example.com", "-c", "gc.auto=0"}, args...)...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null",
		"GIT_OPTIONAL_LOCKS=0")
	out, err := cmd.Output()
	if err != nil {
		var stderr []byte
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = ee.Stderr
		}
		t.Fatalf("git %s in %s: %v\n%s", strings.Join(args, " "), dir, err, stderr)
	}
	return string(out)
}

// mountBytesRead sums the file data the mount read from its hosts.
func mountBytesRead(t *testing.T, mnt string) uint64 {
	t.Helper()
	var sum uint64
	for _, b := range status(t, mnt).Branches {
		for _, h := range b.Hosts {
			sum += h.BytesRead
		}
	}
	return sum
}

// mountRequests sums the mount's requests of each type over its hosts.
func mountRequests(t *testing.T, mnt string) map[string]uint64 {
	t.Helper()
	sum := map[string]uint64{}
	for _, b := range status(t, mnt).Branches {
		for _, h := range b.Hosts {
			for k, v := range h.Requests {
				sum[k] += v
			}
		}
	}
	return sum
}

// A checkout made and indexed on the server looks unchanged to git at
// first contact through the mount: the inode numbers, change times and
// sizes git recorded on the server are those the mount shows, so git
// reads no tracked file. So does it after a remount that answers from the
// listings the first mount kept on disk: they keep the server's numbers.
// Then git through the mount and git on the server agree both ways. A few
// dozen files in a few directories tell git's own opens from a read of
// the checkout; each of them larger than twice everything below .git
// tells git's own reads from a read of any tracked file.
func TestGitCheckoutMadeOnServerIsCleanAtFirstContact(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git not installed")
	}
	h := testenv.StartHost(t, "127.0.0.2")
	repo := filepath.Join(h.Dir, "repo")
	const dirs, files = 3, 16
	const trackedSize = 64 << 10      // about; git packs the repeated lines into a few bytes
	old := time.Now().Add(-time.Hour) // no entry of the index is racily clean
	for d := range dirs {
		dir := filepath.Join(repo, fmt.Sprintf("pkg%d", d), "sub")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		for f := range files {
			p := filepath.Join(dir, fmt.Sprintf("file%02d.go", f))
			body := fmt.Sprintf("package p%d // %d\n", d, f) + strings.Repeat("// the same line, packed small\n", trackedSize/31)
			if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.Chtimes(p, old, old); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := os.WriteFile(filepath.Join(repo, "README"), []byte("top\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	os.Chtimes(filepath.Join(repo, "README"), old, old)
	git(t, h.Dir, "init", "-q", "--template=", repo) // no sample hooks below .git
	git(t, repo, "add", "-A")
	git(t, repo, "commit", "-q", "-m", "first")
	git(t, repo, "repack", "-a", "-d", "-q") // few files under .git
	git(t, repo, "prune-packed")
	if out := git(t, repo, "status", "--porcelain"); out != "" {
		t.Fatalf("on the server: %q", out)
	}
	gitFiles, gitBytes := 0, int64(0)
	filepath.Walk(filepath.Join(repo, ".git"), func(_ string, fi os.FileInfo, err error) error {
		if err == nil && fi.Mode().IsRegular() {
			gitFiles++
			gitBytes += fi.Size()
		}
		return nil
	})
	// git opens and reads some of its own files twice (the index, config).
	gitOpens, gitReads := 2*gitFiles, 2*gitBytes
	if gitOpens*2 > dirs*files {
		t.Fatalf("%d files below .git: too many to tell git's opens from the checkout's", gitFiles)
	}
	if gitReads >= trackedSize {
		t.Fatalf("%d bytes below .git: too many to tell git's reads from a tracked file's", gitBytes)
	}

	// Every open and every byte read of a clean git status is one of
	// git's own files: reading the tracked ones would open each of them,
	// more than git's own, and any one of them holds more bytes than all
	// of git's own twice over.
	cleanStatus := func(m *Mount, when string) {
		t.Helper()
		before, readBefore := mountRequests(t, m.Dir), mountBytesRead(t, m.Dir)
		if out := git(t, m.Path("repo"), "status", "--porcelain"); out != "" {
			t.Errorf("%s: %q, want clean", when, out)
		}
		if opens := mountRequests(t, m.Dir)["OPEN"] - before["OPEN"]; opens > uint64(gitOpens) {
			t.Errorf("%s opened %d files on the server; .git holds %d, the checkout %d more",
				when, opens, gitFiles, dirs*files+1)
		}
		if read := mountBytesRead(t, m.Dir) - readBefore; read > uint64(gitReads) {
			t.Errorf("%s read %d bytes of file data from the server; .git holds %d, each tracked file about %d",
				when, read, gitBytes, trackedSize)
		}
	}
	cacheDir := "cache_dir=" + filepath.Join(t.TempDir(), "cache")
	first := mount(t, h, mountSpec{opts: []string{cacheDir}})
	cleanStatus(first, "first git status through the mount")
	first.unmount(t)
	// The remount answers from the listings the first one kept on disk;
	// immutable, they answer without being listed again.
	again := mount(t, h, mountSpec{opts: []string{cacheDir, "cache=immutable"}})
	if st := status(t, again.Dir).Meta; st == nil || st.LoadedEntries == 0 {
		t.Fatalf("the remount loaded no listings: %+v", st)
	}
	cleanStatus(again, "git status after a remount")
	again.unmount(t)

	m := mount(t, h, mountSpec{opts: []string{cacheDir}})
	through := m.Path("repo")
	if out := git(t, through, "diff"); out != "" {
		t.Errorf("git diff through the mount: %q", out)
	}
	git(t, through, "add", "-A")
	if out := git(t, repo, "status", "--porcelain"); out != "" {
		t.Errorf("git status on the server after git add through the mount: %q", out)
	}
	if out := git(t, through, "status", "--porcelain"); out != "" {
		t.Errorf("git status through the mount after git status on the server: %q", out)
	}

	// A change made through the mount shows both ways, and once staged
	// through the mount the server agrees.
	changed := filepath.Join(through, "pkg2", "sub", "file07.go")
	if err := os.WriteFile(changed, []byte("package p2 // changed\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	const want = " M pkg2/sub/file07.go\n"
	if out := git(t, through, "status", "--porcelain"); out != want {
		t.Errorf("after a write through the mount: %q, want %q", out, want)
	}
	if out := git(t, repo, "status", "--porcelain"); out != want {
		t.Errorf("on the server after a write through the mount: %q, want %q", out, want)
	}
	git(t, through, "add", "-A")
	const staged = "M  pkg2/sub/file07.go\n"
	if out := git(t, repo, "status", "--porcelain"); out != staged {
		t.Errorf("on the server after git add through the mount: %q, want %q", out, staged)
	}
	if out := git(t, through, "status", "--porcelain"); out != staged {
		t.Errorf("through the mount after git add through the mount: %q, want %q", out, staged)
	}
}
