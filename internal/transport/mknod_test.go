package transport

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"sshfsm/internal/remote"
)

// runScript runs a remote command script with the local sh, as
// remoteLine makes the server's sh run it, and returns its output and
// exit status.
func runScript(t *testing.T, script string) (string, int) {
	t.Helper()
	line, err := remoteLine(script)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("sh", "-c", line)
	cmd.Dir = t.TempDir() // where a "pwned" file would appear
	out, err := cmd.CombinedOutput()
	if _, err := os.Stat(filepath.Join(cmd.Dir, "pwned")); err == nil {
		t.Fatalf("the script ran part of a name as a command: %q", script)
	}
	status := 0
	if ee, ok := err.(*exec.ExitError); ok {
		status = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return string(out), status
}

func TestMknodCommandMakesFIFOs(t *testing.T) {
	dir := t.TempDir()
	for _, name := range append(hostileNames, `dq"$(touch pwned)`) {
		p := filepath.Join(dir, name)
		out, status := runScript(t, mknodCommand(p, syscall.S_IFIFO|0o640, 0))
		if status != 0 || !strings.HasPrefix(out, mknodMarker+"\n") {
			t.Fatalf("mkfifo %q: status %d, output %q", name, status, out)
		}
		var st unix.Stat_t
		if err := unix.Lstat(p, &st); err != nil {
			t.Fatalf("%q: %v", name, err)
		}
		if st.Mode != syscall.S_IFIFO|0o640 {
			t.Errorf("%q: mode %o, want fifo 0640", name, st.Mode)
		}
		if _, status := runScript(t, mknodCommand(p, syscall.S_IFIFO|0o640, 0)); status != mknodExists {
			t.Errorf("%q again: status %d, want %d (exists)", name, status, mknodExists)
		}
	}
}

func TestMknodCommandMakesSocketsAndDevices(t *testing.T) {
	dir := t.TempDir()
	_, py := exec.LookPath("python3")
	_, pl := exec.LookPath("perl")
	if py == nil || pl == nil {
		p := filepath.Join(dir, "sock'et")
		out, status := runScript(t, mknodCommand(p, syscall.S_IFSOCK|0o751, 0))
		if status != 0 {
			t.Fatalf("socket: status %d, output %q", status, out)
		}
		var st unix.Stat_t
		if err := unix.Lstat(p, &st); err != nil || st.Mode != syscall.S_IFSOCK|0o751 {
			t.Errorf("socket: mode %o (%v), want socket 0751", st.Mode, err)
		}
	}
	if os.Geteuid() != 0 {
		t.Skip("device nodes need root")
	}
	p := filepath.Join(dir, "dev ice")
	dev := uint32(unix.Mkdev(259, 70000))
	if out, status := runScript(t, mknodCommand(p, syscall.S_IFBLK|0o600, dev)); status != 0 {
		t.Fatalf("mknod: status %d, output %q", status, out)
	}
	var st unix.Stat_t
	if err := unix.Lstat(p, &st); err != nil || st.Mode != syscall.S_IFBLK|0o600 || st.Rdev != uint64(dev) {
		t.Errorf("block device: mode %o rdev %d:%d (%v), want block 0600 259:70000",
			st.Mode, unix.Major(st.Rdev), unix.Minor(st.Rdev), err)
	}
}

func TestLinkAttrCommandChangesTheLinkItself(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "target")
	if err := os.WriteFile(target, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	var before unix.Stat_t
	if err := unix.Stat(target, &before); err != nil {
		t.Fatal(err)
	}
	for _, name := range append(hostileNames, `dq"$(touch pwned)`) {
		p := filepath.Join(dir, "link "+name)
		if err := os.Symlink("target", p); err != nil {
			t.Fatal(err)
		}
		at, mt := time.Unix(1_100_000_000, 123456789), time.Unix(1_200_000_000, 987654321)
		a := remote.SetAttr{Atime: &at, Mtime: &mt}
		uid, gid := uint32(os.Geteuid()), uint32(os.Getegid())
		if uid == 0 {
			uid, gid = 123, 456
		}
		a.UID, a.GID = &uid, &gid
		if out, status := runScript(t, linkAttrCommand(p, a)); status != 0 {
			t.Fatalf("%q: status %d, output %q", name, status, out)
		}
		var st unix.Stat_t
		if err := unix.Lstat(p, &st); err != nil {
			t.Fatal(err)
		}
		if st.Uid != uid || st.Gid != gid || st.Mtim != unix.NsecToTimespec(mt.UnixNano()) || st.Atim != unix.NsecToTimespec(at.UnixNano()) {
			t.Errorf("%q: owner %d:%d, atime %v, mtime %v; want %d:%d, %v, %v", name, st.Uid, st.Gid, st.Atim, st.Mtim, uid, gid, at, mt)
		}
	}
	var after unix.Stat_t
	if err := unix.Stat(target, &after); err != nil {
		t.Fatal(err)
	}
	if after.Mtim != before.Mtim || after.Uid != before.Uid {
		t.Errorf("the target changed: mtime %v -> %v, uid %d -> %d", before.Mtim, after.Mtim, before.Uid, after.Uid)
	}
	if _, status := runScript(t, linkAttrCommand(target, remote.SetAttr{})); status != linkAttrNotLink {
		t.Errorf("a regular file: status %d, want %d (not a link)", status, linkAttrNotLink)
	}
}

func TestErrnoOfMessage(t *testing.T) {
	for msg, want := range map[string]syscall.Errno{
		"mknod: ./x: Operation not permitted":                   syscall.EPERM,
		"mkfifo: cannot create fifo './x': File exists":         syscall.EEXIST,
		"PermissionError: [Errno 13] Permission denied":         syscall.EACCES,
		"chown: cannot access './x': No such file or directory": syscall.ENOENT,
	} {
		if got, ok := errnoOfMessage(msg); !ok || got != want {
			t.Errorf("%q: %v, %v; want %v", msg, got, ok, want)
		}
	}
	if _, ok := errnoOfMessage("something else"); ok {
		t.Error("an unknown message matched")
	}
}
