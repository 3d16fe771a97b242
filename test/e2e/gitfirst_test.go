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
// reads no tracked file. Then git through the mount and git on the server
// agree both ways.
func TestGitCheckoutMadeOnServerIsCleanAtFirstContact(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git not installed")
	}
	h := testenv.StartHost(t, "127.0.0.2")
	repo := filepath.Join(h.Dir, "repo")
	const dirs, files = 8, 40
	old := time.Now().Add(-time.Hour) // no entry of the index is racily clean
	for d := range dirs {
		dir := filepath.Join(repo, fmt.Sprintf("pkg%d", d), "sub")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		for f := range files {
			p := filepath.Join(dir, fmt.Sprintf("file%02d.go", f))
			if err := os.WriteFile(p, []byte(fmt.Sprintf("package p%d // %d\n", d, f)), 0o644); err != nil {
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
	git(t, h.Dir, "init", "-q", repo)
	git(t, repo, "add", "-A")
	git(t, repo, "commit", "-q", "-m", "first")
	git(t, repo, "repack", "-a", "-d", "-q") // few files under .git
	git(t, repo, "prune-packed")
	if out := git(t, repo, "status", "--porcelain"); out != "" {
		t.Fatalf("on the server: %q", out)
	}
	gitFiles := 0
	filepath.Walk(filepath.Join(repo, ".git"), func(_ string, fi os.FileInfo, err error) error {
		if err == nil && fi.Mode().IsRegular() {
			gitFiles++
		}
		return nil
	})
	if gitFiles*2 > dirs*files {
		t.Fatalf("%d files below .git: too many to tell git's opens from the checkout's", gitFiles)
	}

	m := mount(t, h, mountSpec{})
	through := m.Path("repo")
	before := mountRequests(t, m.Dir)
	if out := git(t, through, "status", "--porcelain"); out != "" {
		t.Errorf("first git status through the mount: %q, want clean", out)
	}
	after := mountRequests(t, m.Dir)
	// Every open of the first contact is one of git's own files: reading
	// the tracked ones would open each of them.
	if opens := after["OPEN"] - before["OPEN"]; opens > uint64(gitFiles) {
		t.Errorf("first git status opened %d files on the server; .git holds %d, the checkout %d more",
			opens, gitFiles, dirs*files+1)
	}
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
	changed := filepath.Join(through, "pkg3", "sub", "file07.go")
	if err := os.WriteFile(changed, []byte("package p3 // changed\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	const want = " M pkg3/sub/file07.go\n"
	if out := git(t, through, "status", "--porcelain"); out != want {
		t.Errorf("after a write through the mount: %q, want %q", out, want)
	}
	if out := git(t, repo, "status", "--porcelain"); out != want {
		t.Errorf("on the server after a write through the mount: %q, want %q", out, want)
	}
	git(t, through, "add", "-A")
	const staged = "M  pkg3/sub/file07.go\n"
	if out := git(t, repo, "status", "--porcelain"); out != staged {
		t.Errorf("on the server after git add through the mount: %q, want %q", out, staged)
	}
	if out := git(t, through, "status", "--porcelain"); out != staged {
		t.Errorf("through the mount after git add through the mount: %q, want %q", out, staged)
	}
}
