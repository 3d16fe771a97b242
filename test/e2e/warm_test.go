package e2e

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"sshfsm/internal/netproxy"
	"sshfsm/internal/testenv"
)

// warmTree writes dirs directories of files small files each below root,
// plus one large file; it returns the bytes of the small files.
func warmTree(t *testing.T, root string, dirs, files int, large int) int64 {
	t.Helper()
	var small int64
	for d := range dirs {
		dir := filepath.Join(root, fmt.Sprintf("d%02d", d), "sub")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		for f := range files {
			data := bytes.Repeat([]byte{byte(f)}, 100*f+1)
			if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("f%03d", f)), data, 0o644); err != nil {
				t.Fatal(err)
			}
			small += int64(len(data))
		}
	}
	if err := os.WriteFile(filepath.Join(root, "large.bin"), make([]byte, large), 0o644); err != nil {
		t.Fatal(err)
	}
	return small
}

func runWarm(t *testing.T, args ...string) (string, int) {
	t.Helper()
	cmd := exec.Command(binary(t), append([]string{"warm"}, args...)...)
	out, err := cmd.CombinedOutput()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("sshfsm warm: %v", err)
	}
	return string(out), code
}

// sshfsm warm lists a tree and, with --content, reads the files up to
// --max-size through the mount: the host serves their bytes, not the
// larger file's.
func TestWarm(t *testing.T) {
	h := testenv.StartHost(t, "127.0.0.2")
	const dirs, files, large = 6, 20, 4 << 20
	small := warmTree(t, filepath.Join(h.Dir, "tree"), dirs, files, large)
	m := mount(t, h, mountSpec{})

	out, code := runWarm(t, m.Path("tree"))
	want := fmt.Sprintf("done: %d directories, %d files", 1+2*dirs, dirs*files+1)
	if code != 0 || !strings.Contains(out, want) {
		t.Fatalf("warm: exit %d, output %q; want 0 and %q", code, out, want)
	}
	before := hostBytesRead(t, m.Dir)
	out, code = runWarm(t, "--content", "--max-size", "64K", m.Path("tree"))
	want = fmt.Sprintf("read %d of %d files", dirs*files, dirs*files)
	if code != 0 || !strings.Contains(out, want) {
		t.Fatalf("warm --content: exit %d, output %q; want 0 and %q", code, out, want)
	}
	got := hostBytesRead(t, m.Dir) - before
	if got < uint64(small) || got >= uint64(small)+large/2 {
		t.Errorf("warm --content --max-size 64K: the host served %d bytes; the small files hold %d, the large one %d", got, small, large)
	}
}

// hostBytesRead is the file data the mount's only host served so far.
func hostBytesRead(t *testing.T, mnt string) uint64 {
	t.Helper()
	st := status(t, mnt)
	return st.Branches[0].Hosts[0].BytesRead
}

// What warm refuses: paths outside sshfsm mounts, bad switches.
func TestWarmRefuses(t *testing.T) {
	for _, c := range []struct {
		args []string
		code int
		msg  string
	}{
		{[]string{t.TempDir()}, 2, "is not inside an sshfsm mount"},
		{[]string{"/nonexistent/path"}, 1, "no such file or directory"},
		{[]string{"--max-size", "1M", "/"}, 1, "--max-size applies to --content"},
		{nil, 1, "needs at least one path"},
	} {
		out, code := runWarm(t, c.args...)
		if code != c.code || !strings.Contains(out, c.msg) {
			t.Errorf("warm %q: exit %d, %q; want %d and %q", c.args, code, out, c.code, c.msg)
		}
	}
}

// Ctrl-C stops warm at once with exit status 130, saying so; the mount
// keeps working.
func TestWarmInterrupted(t *testing.T) {
	h := testenv.StartHost(t, "127.0.0.2")
	warmTree(t, filepath.Join(h.Dir, "tree"), 40, 50, 1)
	p, err := netproxy.Listen("127.0.0.1:0", net.JoinHostPort(h.Addr, strconv.Itoa(h.Port)), netproxy.Symmetric(5*time.Millisecond, 0))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	cfg := filepath.Join(t.TempDir(), "ssh_config")
	if err := os.WriteFile(cfg, []byte(h.ConfigBlockVia("warm-slow", "127.0.0.1", p.Port())), 0o600); err != nil {
		t.Fatal(err)
	}
	m := mount(t, h, mountSpec{sshArgs: []string{"-F", cfg}, dest: "warm-slow:" + h.Dir})

	cmd := exec.Command(binary(t), "warm", "--content", "--jobs", "2", m.Path("tree"))
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(500 * time.Millisecond)
	sent := time.Now()
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	err = cmd.Wait()
	took := time.Since(sent)
	ee, ok := err.(*exec.ExitError)
	if !ok || ee.ExitCode() != 130 || !strings.Contains(out.String(), "stopped") {
		t.Fatalf("warm after SIGINT: %v, output %q; want exit 130 and a stopped summary", err, out.String())
	}
	if took > 2*time.Second {
		t.Errorf("warm took %v to stop after SIGINT", took)
	}
	if _, err := os.ReadFile(m.Path("tree", "d00", "sub", "f001")); err != nil {
		t.Errorf("the mount after an interrupted warm: %v", err)
	}
}
