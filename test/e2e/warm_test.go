package e2e

import (
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"sshfsm/internal/netproxy"
	"sshfsm/internal/testenv"
)

// warmTree writes dirs directories of files small files each below root,
// plus one large file, all dated an hour ago (files modified within the
// last seconds are not kept in the disk cache); it returns the bytes of
// the small files.
func warmTree(t *testing.T, root string, dirs, files int, large int) int64 {
	t.Helper()
	old := time.Now().Add(-time.Hour)
	var small int64
	for d := range dirs {
		dir := filepath.Join(root, fmt.Sprintf("d%02d", d), "sub")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		for f := range files {
			data := bytes.Repeat([]byte{byte(f)}, 100*f+1)
			p := filepath.Join(dir, fmt.Sprintf("f%03d", f))
			if err := os.WriteFile(p, data, 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.Chtimes(p, old, old); err != nil {
				t.Fatal(err)
			}
			small += int64(len(data))
		}
	}
	p := filepath.Join(root, "large.bin")
	if err := os.WriteFile(p, make([]byte, large), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(p, old, old); err != nil {
		t.Fatal(err)
	}
	return small
}

// treeFiles lists the regular files below root, relative to it.
func treeFiles(t *testing.T, root string) []string {
	t.Helper()
	var names []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		rel, err := filepath.Rel(root, p)
		names = append(names, rel)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return names
}

// readAllSame reads the files names below the mount's dir and the
// server's, jobs at a time, and fails unless they are byte-identical; it
// returns the bytes read.
func readAllSame(t *testing.T, m *Mount, dir string, names []string, jobs int) int64 {
	t.Helper()
	var (
		mu    sync.Mutex
		total int64
		errs  []string
		wg    sync.WaitGroup
	)
	next := make(chan string)
	for range jobs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := range next {
				want, err := os.ReadFile(m.RemotePath(dir, n))
				if err != nil {
					mu.Lock()
					errs = append(errs, err.Error())
					mu.Unlock()
					continue
				}
				got, err := os.ReadFile(m.Path(dir, n))
				mu.Lock()
				total += int64(len(got))
				if err != nil || !bytes.Equal(got, want) {
					errs = append(errs, fmt.Sprintf("%s: %d bytes, %v; want the server's %d bytes", n, len(got), err, len(want)))
				}
				mu.Unlock()
			}
		}()
	}
	for _, n := range names {
		next <- n
	}
	close(next)
	wg.Wait()
	if len(errs) > 0 {
		t.Fatalf("reading through the mount, %d files differ from the server's; first: %s", len(errs), errs[0])
	}
	return total
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
// larger file's, and from then on the disk cache serves them.
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

	// What warm read is on local disk: reading it again, through this
	// mount and through a new one (whose kernel caches nothing yet),
	// fetches nothing from the server.
	var names []string
	for _, n := range treeFiles(t, filepath.Join(h.Dir, "tree")) {
		if n != "large.bin" {
			names = append(names, n)
		}
	}
	before = hostBytesRead(t, m.Dir)
	if n := readAllSame(t, m, "tree", names, 4); n != small {
		t.Fatalf("read %d bytes of small files, want %d", n, small)
	}
	if got := hostBytesRead(t, m.Dir) - before; got != 0 {
		t.Errorf("after warm --content, reading the small files again fetched %d bytes from the server", got)
	}
	m.unmount(t)
	m.start(t)
	readAllSame(t, m, "tree", names, 4)
	st := status(t, m.Dir)
	if got := st.Branches[0].Hosts[0].BytesRead; got != 0 {
		t.Errorf("a new mount reading the files warm --content read fetched %d bytes from the server; the disk cache should serve them all", got)
	}
	if st.Disk == nil || st.Disk.HitBytes < small {
		t.Errorf("a new mount reading the files warm --content read: disk cache %+v; want %d bytes or more served from it", st.Disk, small)
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
// keeps working, and what warm fetched before stays in the disk cache:
// a new mount serves it from there, byte for byte as the server has it.
func TestWarmInterrupted(t *testing.T) {
	h := testenv.StartHost(t, "127.0.0.2")
	small := warmTree(t, filepath.Join(h.Dir, "tree"), 40, 50, 1)
	_, sshArgs, dest := proxied(t, h, netproxy.Symmetric(5*time.Millisecond, 0))
	m := mount(t, h, mountSpec{sshArgs: sshArgs, dest: dest})

	cmd := exec.Command(binary(t), "warm", "--content", "--jobs", "2", m.Path("tree"))
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// Interrupt warm once it has read a few files (the smallest hold 1,
	// 101, 201... bytes): that is what must stay cached.
	if !testenv.Poll(func() bool { return hostBytesRead(t, m.Dir) >= 20000 }) {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("warm --content fetched no 20000 bytes in %v: %s", testenv.Patience(), out.String())
	}
	sent := time.Now()
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	err := cmd.Wait()
	took := time.Since(sent)
	ee, ok := err.(*exec.ExitError)
	if !ok || ee.ExitCode() != 130 || !strings.Contains(out.String(), "stopped") {
		t.Fatalf("warm after SIGINT: %v, output %q; want exit 130 and a stopped summary", err, out.String())
	}
	t.Logf("warm stopped %v after SIGINT", took)
	if _, err := os.ReadFile(m.Path("tree", "d00", "sub", "f001")); err != nil {
		t.Errorf("the mount after an interrupted warm: %v", err)
	}

	var read, of int
	if i := strings.Index(out.String(), "; read "); i < 0 {
		t.Fatalf("no files read in the summary of warm: %q", out.String())
	} else if _, err := fmt.Sscanf(out.String()[i:], "; read %d of %d files", &read, &of); err != nil || read == 0 || read >= of {
		t.Fatalf("warm read %d of %d files (%v) before SIGINT; want some and not all: %q", read, of, err, out.String())
	}
	// The daemon fetched what warm read (and the file read just now).
	fetched := int64(hostBytesRead(t, m.Dir))
	names := treeFiles(t, filepath.Join(h.Dir, "tree"))
	m.unmount(t)
	m.start(t)
	total := readAllSame(t, m, "tree", names, 16)
	if total != small+1 {
		t.Fatalf("read %d bytes through the mount, the tree holds %d", total, small+1)
	}
	st := status(t, m.Dir)
	served := int64(st.Branches[0].Hosts[0].BytesRead)
	t.Logf("warm read %d of %d files, the first mount fetched %d bytes; a new mount reading all %d bytes fetched %d, disk cache %+v",
		read, of, fetched, total, served, st.Disk)
	if st.Disk == nil || st.Disk.HitBytes < fetched {
		t.Errorf("the interrupted warm fetched %d bytes; a new mount served %+v from the disk cache, want them all", fetched, st.Disk)
	}
	if served > total-fetched {
		t.Errorf("the interrupted warm fetched %d of %d bytes; a new mount reading them all fetched %d from the server again, want at most %d",
			fetched, total, served, total-fetched)
	}
}
