package main

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/pkg/sftp"

	"sshfsm/internal/config"
	"sshfsm/internal/testenv"
)

// sshHost starts a throwaway sshd and returns it with the sshfsm arguments
// that reach it.
func sshHost(t *testing.T) (*testenv.Host, []string) {
	t.Helper()
	testenv.RequireFUSE(t)
	h := testenv.StartHost(t, "")
	return h, h.SSHArgs()
}

// serving lists the sshfsm processes that still run (testenv.Alive) whose
// command line holds mnt. A
// child of one of them is left out: it is a fork about to run another
// program (ssh), and still shows sshfsm's command line.
func serving(mnt string) []int {
	parents := map[int]int{}
	dirs, _ := os.ReadDir("/proc")
	for _, d := range dirs {
		pid, err := strconv.Atoi(d.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", d.Name(), "cmdline"))
		if err != nil || bytes.HasPrefix(b, []byte("go\x00")) {
			continue
		}
		args := strings.Split(string(b), "\x00")
		if filepath.Base(args[0]) == "sshfsm" && strings.Contains(string(b), mnt) {
			st, err := os.ReadFile(filepath.Join("/proc", d.Name(), "stat"))
			if i := bytes.LastIndexByte(st, ')'); err == nil && i > 0 && testenv.Alive(pid) {
				if f := strings.Fields(string(st[i+1:])); len(f) > 1 {
					parents[pid], _ = strconv.Atoi(f[1])
				}
			}
		}
	}
	var pids []int
	for pid, parent := range parents {
		if _, forked := parents[parent]; !forked {
			pids = append(pids, pid)
		}
	}
	sort.Ints(pids)
	return pids
}

// waitGone waits until no sshfsm process serves mnt.
func waitGone(t *testing.T, mnt string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for len(serving(mnt)) > 0 {
		if time.Now().After(deadline) {
			t.Fatalf("sshfsm for %s still runs: pids %v", mnt, serving(mnt))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// mountpoint returns a fresh directory that is unmounted at cleanup.
func mountpoint(t *testing.T) string {
	t.Helper()
	mnt := filepath.Join(t.TempDir(), "mnt")
	if err := os.Mkdir(mnt, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := testenv.Unmount(mnt); err != nil {
			t.Error(err)
		}
		for _, pid := range serving(mnt) {
			syscall.Kill(pid, syscall.SIGKILL)
		}
	})
	return mnt
}

func TestRemoteErrors(t *testing.T) {
	h, ssh := sshHost(t)
	file := filepath.Join(h.Dir, "plain")
	if err := os.WriteFile(file, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	empty := filepath.Join(t.TempDir(), "known_hosts")
	if err := os.WriteFile(empty, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		args []string
		code config.ExitCode
		want string
	}{
		{"missing dir", []string{h.Alias + ":" + h.Dir + "/nope"}, config.ExitRemoteDir,
			"remote directory " + h.Alias + ":" + h.Dir + "/nope does not exist"},
		{"file", []string{h.Alias + ":" + file}, config.ExitRemoteDir, "is not a directory"},
		{"auth", []string{"nosuchuser@" + h.Alias + ":"}, config.ExitAuth,
			"authentication to " + h.Alias + " failed: "},
		{"host key", []string{"-o", "UserKnownHostsFile=" + empty + ",StrictHostKeyChecking=yes", h.Alias + ":"},
			config.ExitAuth, "host key verification failed for " + h.Alias},
	}
	for _, tc := range cases {
		for _, mode := range []string{"daemon", "foreground"} {
			args := append(append(append([]string{}, ssh...), tc.args...), mountpoint(t))
			if mode == "foreground" {
				args = append(args, "-f")
			}
			r := sshfsm(t, 20*time.Second, args...)
			t.Logf("%s, %s: %s", tc.name, mode, strings.TrimSpace(r.stderr))
			expectFailure(t, r, tc.code, tc.want)
		}
	}
}

func TestDaemonMount(t *testing.T) {
	h, ssh := sshHost(t)
	if err := os.WriteFile(filepath.Join(h.Dir, "hello"), []byte("hi\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	mnt := mountpoint(t)
	dest := h.Alias + ":" + h.Dir
	r := sshfsm(t, 20*time.Second, append(ssh, dest, mnt)...)
	if r.code != 0 || r.stderr != "" {
		t.Fatalf("mount: exit %d, stderr %q", r.code, r.stderr)
	}
	// The command returns only once the mount works.
	if b, err := os.ReadFile(filepath.Join(mnt, "hello")); err != nil || string(b) != "hi\n" {
		t.Fatalf("read through the mount: %q, %v", b, err)
	}
	if err := os.WriteFile(filepath.Join(mnt, "new"), []byte("w"), 0o644); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(h.Dir, "new")); err != nil || string(b) != "w" {
		t.Errorf("write through the mount: %q, %v", b, err)
	}
	if src, typ := mountSource(mnt); src != dest || typ != "fuse.sshfsm" {
		t.Errorf("mount table: source %q type %q, want %q fuse.sshfsm", src, typ, dest)
	}
	if len(serving(mnt)) != 1 {
		t.Errorf("sshfsm processes serving: %v, want one", serving(mnt))
	}

	again := sshfsm(t, 20*time.Second, append(ssh, dest, mnt)...)
	expectFailure(t, again, config.ExitMountpoint, "is already a mountpoint (fuse.sshfsm); unmount it first (fusermount3 -u "+mnt+")")

	if out, err := exec.Command("fusermount3", "-u", mnt).CombinedOutput(); err != nil {
		t.Fatalf("fusermount3 -u: %v: %s", err, out)
	}
	waitGone(t, mnt)
}

// mountSource returns the source and type of the mount at mnt.
func mountSource(mnt string) (source, fstype string) {
	b, _ := os.ReadFile("/proc/self/mountinfo")
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) < 5 || f[4] != mnt {
			continue
		}
		for i := range f {
			if f[i] == "-" && i+2 < len(f) {
				return f[i+2], f[i+1]
			}
		}
	}
	return "", ""
}

func TestSignalsUnmount(t *testing.T) {
	_, ssh := sshHost(t)
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT} {
		mnt := mountpoint(t)
		cmd := exec.Command(binary(t), append(ssh, "-f", "sshfsm-test-127-0-0-2:", mnt)...)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		if err := testenv.WaitMounted(mnt, 10*time.Second); err != nil {
			cmd.Process.Kill()
			cmd.Wait()
			t.Fatalf("%v; stderr %q", err, stderr.String())
		}
		if _, err := os.ReadDir(mnt); err != nil {
			t.Errorf("readdir: %v", err)
		}
		// Mounted is not ready: the root is verified and status started
		// after the kernel shows the mount. A signal before that undoes
		// the mount and fails (TestSignalWhileConnecting).
		for deadline := time.Now().Add(10 * time.Second); sshfsm(t, 5*time.Second, "status", mnt).code != 0; {
			if time.Now().After(deadline) {
				cmd.Process.Kill()
				cmd.Wait()
				t.Fatalf("%v: status of the mount does not answer; stderr %q", sig, stderr.String())
			}
			time.Sleep(20 * time.Millisecond)
		}
		cmd.Process.Signal(sig)
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("%v: exit %v, stderr %q", sig, err, stderr.String())
			}
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			t.Fatalf("%v: foreground sshfsm did not exit", sig)
		}
		if testenv.MountedAt(mnt) {
			t.Errorf("%v: still mounted after exit", sig)
		}
	}
}

func TestDaemonSIGTERM(t *testing.T) {
	h, ssh := sshHost(t)
	mnt := mountpoint(t)
	r := sshfsm(t, 20*time.Second, append(ssh, h.Alias+":", mnt)...)
	if r.code != 0 {
		t.Fatalf("mount: exit %d, stderr %q", r.code, r.stderr)
	}
	pids := serving(mnt)
	if len(pids) != 1 {
		t.Fatalf("serving processes %v, want one", pids)
	}
	// A busy mount still goes away (lazily).
	f, err := os.Open(mnt)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	syscall.Kill(pids[0], syscall.SIGTERM)
	waitGone(t, mnt)
	if testenv.MountedAt(mnt) {
		t.Error("still mounted after SIGTERM")
	}
}

// TestMountHelper mounts the way mount(8) does for an fstab line: through
// mount.fuse3, which runs "sshfsm SOURCE MOUNTPOINT -o OPTIONS" without PATH.
func TestMountHelper(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("mount(8) with a fuse helper needs root")
	}
	if _, err := exec.LookPath("mount.fuse3"); err != nil {
		t.Skip("mount.fuse3 is not installed")
	}
	h, _ := sshHost(t)
	mnt := mountpoint(t)
	opts := strings.Join([]string{"_netdev", "nofail", "noauto", "x-systemd.automount", "rw", "nosuid",
		"Port=" + strconv.Itoa(h.Port), "IdentityFile=" + h.IdentityFile, "IdentitiesOnly=yes",
		"UserKnownHostsFile=" + h.KnownHosts, "BatchMode=yes", "reconnect", "allow_other"}, ",")
	source := binary(t) + "#" + h.User + "@" + h.Addr + ":" + h.Dir
	out, err := exec.Command("mount", "-t", "fuse", "-o", opts, source, mnt).CombinedOutput()
	if err != nil {
		t.Fatalf("mount: %v: %s", err, out)
	}
	if src, typ := mountSource(mnt); typ != "fuse.sshfsm" || src != h.User+"@"+h.Addr+":"+h.Dir {
		t.Errorf("mount table: %q %q", src, typ)
	}
	if _, err := os.ReadDir(mnt); err != nil {
		t.Error(err)
	}
	if out, err := exec.Command("umount", mnt).CombinedOutput(); err != nil {
		t.Fatalf("umount: %v: %s", err, out)
	}
	waitGone(t, mnt)
}

// TestDirectPort mounts from an sftp server on plain TCP (directport=).
func TestDirectPort(t *testing.T) {
	testenv.RequireFUSE(t)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "f"), []byte("direct"), 0o644); err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() {
		for {
			conn, err := l.Accept()
			if err != nil {
				return
			}
			srv, err := sftp.NewServer(conn, sftp.WithServerWorkingDirectory(dir))
			if err != nil {
				conn.Close()
				continue
			}
			go func() { srv.Serve(); srv.Close() }()
		}
	}()
	mnt := mountpoint(t)
	port := strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
	r := sshfsm(t, 20*time.Second, "-o", "directport="+port, "127.0.0.1:"+dir, mnt)
	if r.code != 0 {
		t.Fatalf("mount: exit %d, stderr %q", r.code, r.stderr)
	}
	if b, err := os.ReadFile(filepath.Join(mnt, "f")); err != nil || string(b) != "direct" {
		t.Errorf("read: %q, %v", b, err)
	}
	if err := testenv.Unmount(mnt); err != nil {
		t.Fatal(err)
	}
	waitGone(t, mnt)

	r = sshfsm(t, 20*time.Second, "-o", "directport="+strconv.Itoa(freePort(t)), "127.0.0.1:", mnt)
	expectFailure(t, r, config.ExitConnect, "cannot connect to 127.0.0.1: ")
}

// TestDeadMountpoint: a mount whose server was killed is reported as such.
func TestDeadMountpoint(t *testing.T) {
	h, ssh := sshHost(t)
	mnt := mountpoint(t)
	if r := sshfsm(t, 20*time.Second, append(ssh, h.Alias+":", mnt)...); r.code != 0 {
		t.Fatalf("mount: exit %d, stderr %q", r.code, r.stderr)
	}
	for _, pid := range serving(mnt) {
		syscall.Kill(pid, syscall.SIGKILL)
	}
	waitGone(t, mnt)
	r := sshfsm(t, 20*time.Second, append(ssh, h.Alias+":", mnt)...)
	expectFailure(t, r, config.ExitMountpoint, "is a dead mount (transport endpoint is not connected); run fusermount3 -u")
}

// TestSignalWhileConnecting: SIGTERM ends sshfsm -f even while the server
// does not answer.
func TestSignalWhileConnecting(t *testing.T) {
	testenv.RequireFUSEDevice(t)
	port := silentPeer(t)
	mnt := mountpoint(t)
	cmd := exec.Command(binary(t), "-f", "-p", port, "-o", "ConnectTimeout=60,BatchMode=yes", "127.0.0.1:", mnt)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Second)
	cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		cmd.Process.Kill()
		<-done
		t.Fatal("sshfsm -f ignored SIGTERM while connecting")
	}
	expectFailure(t, result{code: cmd.ProcessState.ExitCode(), stderr: stderr.String()},
		config.ExitMount, "interrupted by terminated before the mount was ready")
}

// helperLink is where the mount tests install sshfsm for mount(8): mount
// runs helpers with PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:..., not
// the caller's PATH, and mount.fuse3 finds "sshfsm" for fuse.sshfsm there.
const helperLink = "/usr/local/sbin/sshfsm"

// installHelper links the built binary at helperLink until the test ends.
// It never replaces an sshfsm that is already there.
func installHelper(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("mount(8) with a fuse helper needs root")
	}
	if _, err := exec.LookPath("mount.fuse3"); err != nil {
		t.Skip("mount.fuse3 is not installed")
	}
	if _, err := os.Lstat(helperLink); err == nil {
		t.Skipf("%s already exists; not replacing it", helperLink)
	}
	bin := binary(t)
	if err := os.Symlink(bin, helperLink); err != nil {
		t.Skipf("cannot install sshfsm for mount(8): %v", err)
	}
	t.Cleanup(func() {
		if target, err := os.Readlink(helperLink); err == nil && target == bin {
			if err := os.Remove(helperLink); err != nil {
				t.Error(err)
			}
		}
	})
}

// TestMountTypeSshfsm mounts with "mount -t fuse.sshfsm" and from an fstab
// line, as users do, with the options ssh needs in -o.
func TestMountTypeSshfsm(t *testing.T) {
	h, _ := sshHost(t)
	installHelper(t)
	if err := os.WriteFile(filepath.Join(h.Dir, "f"), []byte("typed"), 0o644); err != nil {
		t.Fatal(err)
	}
	source := h.User + "@" + h.Addr + ":" + h.Dir
	sshOpts := "Port=" + strconv.Itoa(h.Port) + ",IdentityFile=" + h.IdentityFile +
		",IdentitiesOnly=yes,UserKnownHostsFile=" + h.KnownHosts + ",BatchMode=yes"
	check := func(how, mnt string) {
		t.Helper()
		if src, typ := mountSource(mnt); typ != "fuse.sshfsm" || src != source {
			t.Errorf("%s: mount table: %q %q", how, src, typ)
		}
		if b, err := os.ReadFile(filepath.Join(mnt, "f")); err != nil || string(b) != "typed" {
			t.Errorf("%s: read %q, %v", how, b, err)
		}
		if out, err := exec.Command("umount", mnt).CombinedOutput(); err != nil {
			t.Fatalf("%s: umount: %v: %s", how, err, out)
		}
		waitGone(t, mnt)
		if testenv.MountedAt(mnt) {
			t.Errorf("%s: still mounted after umount", how)
		}
	}

	mnt := mountpoint(t)
	out, err := exec.Command("mount", "-t", "fuse.sshfsm", "-o", sshOpts+",ro", source, mnt).CombinedOutput()
	if err != nil {
		t.Fatalf("mount -t fuse.sshfsm: %v: %s", err, out)
	}
	if err := os.WriteFile(filepath.Join(mnt, "new"), nil, 0o644); !errors.Is(err, syscall.EROFS) {
		t.Errorf("mount -t fuse.sshfsm -o ro: create: %v, want EROFS", err)
	}
	check("mount -t", mnt)

	fstab := filepath.Join(t.TempDir(), "fstab")
	line := source + " " + mnt + " fuse.sshfsm defaults,_netdev,noauto,nofail,x-systemd.automount," + sshOpts + " 0 0\n"
	if err := os.WriteFile(fstab, []byte(line), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("mount", "--fstab", fstab, mnt).CombinedOutput(); err != nil {
		t.Fatalf("mount from fstab line %q: %v: %s", line, err, out)
	}
	check("fstab", mnt)

	// A failure reaches the user as sshfsm's one line and exit code.
	bad := strings.Replace(sshOpts, "IdentityFile="+h.IdentityFile, "IdentityFile=/nonexistent", 1)
	cmd := exec.Command("mount", "-t", "fuse.sshfsm", "-o", bad, source, mnt)
	out, err = cmd.CombinedOutput()
	if err == nil {
		t.Fatalf("mount with a wrong IdentityFile succeeded")
	}
	if code := cmd.ProcessState.ExitCode(); code != int(config.ExitAuth) || !strings.Contains(string(out), "sshfsm: authentication to "+h.Addr+" failed") {
		t.Errorf("mount with a wrong IdentityFile: exit %d, output %q", code, out)
	}
}

// TestFstabConfigFile mounts what a config file describes from an fstab
// line (config=FILE; the source field is a label): a union branch and a
// graft, the ssh settings in the file.
func TestFstabConfigFile(t *testing.T) {
	h, _ := sshHost(t)
	installHelper(t)
	for dir, name := range map[string]string{"u": "in-union", "g": "in-graft"} {
		if err := os.MkdirAll(filepath.Join(h.Dir, dir), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(h.Dir, dir, name), []byte(name), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	conf := filepath.Join(t.TempDir(), "work.toml")
	dest := h.User + "@" + h.Addr
	body := fmt.Sprintf(`[options]
Port = %d
IdentityFile = %q
IdentitiesOnly = "yes"
UserKnownHostsFile = %q
BatchMode = "yes"

[[branch]]
host = %q
dir = %q

[[branch]]
name = "G"
host = %q
dir = %q
`, h.Port, h.IdentityFile, h.KnownHosts, dest, filepath.Join(h.Dir, "u"), dest, filepath.Join(h.Dir, "g"))
	if err := os.WriteFile(conf, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	mnt := mountpoint(t)
	fstab := filepath.Join(t.TempDir(), "fstab")
	line := "sshfsm " + mnt + " fuse.sshfsm config=" + conf + ",_netdev 0 0\n"
	if err := os.WriteFile(fstab, []byte(line), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("mount", "--fstab", fstab, mnt).CombinedOutput(); err != nil {
		t.Fatalf("mount from fstab line %q: %v: %s", line, err, out)
	}
	for p, want := range map[string]string{"in-union": "in-union", "G/in-graft": "in-graft"} {
		if b, err := os.ReadFile(filepath.Join(mnt, p)); err != nil || string(b) != want {
			t.Errorf("%s: %q, %v", p, b, err)
		}
	}
	if src, typ := mountSource(mnt); typ != "fuse.sshfsm" || src != "sshfsm" {
		t.Errorf("mount table: %q %q, want the fstab line's source and type", src, typ)
	}
	// mount -a finds the line mounted: it does not mount it again.
	if out, err := exec.Command("mount", "--fstab", fstab, "-a").CombinedOutput(); err != nil {
		t.Errorf("mount -a with the line mounted: %v: %s", err, out)
	}
	if out, err := exec.Command("umount", mnt).CombinedOutput(); err != nil {
		t.Fatalf("umount: %v: %s", err, out)
	}
	waitGone(t, mnt)
}

// TestSignalToMountCommandWhileConnecting: SIGINT to the mount command
// (not to its process group) while the server does not answer stops the
// background process too: the command reports the interruption, and
// nothing is mounted later.
func TestSignalToMountCommandWhileConnecting(t *testing.T) {
	testenv.RequireFUSEDevice(t)
	port := silentPeer(t)
	mnt := mountpoint(t)
	cmd := exec.Command(binary(t), "-p", port, "-o", "ConnectTimeout=60,BatchMode=yes", "127.0.0.1:", mnt)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// The background process is started and connecting once ssh runs.
	if !testenv.PollFor(testenv.Patience(), func() bool { return len(sshOf(cmd.Process.Pid)) > 0 }) {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("no ssh started below sshfsm %d; stderr %q", cmd.Process.Pid, stderr.String())
	}
	cmd.Process.Signal(syscall.SIGINT)
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(testenv.Patience()):
		cmd.Process.Kill()
		<-done
		t.Fatal("sshfsm ignored SIGINT while connecting")
	}
	expectFailure(t, result{code: cmd.ProcessState.ExitCode(), stderr: stderr.String()},
		config.ExitMount, "interrupted by interrupt before the mount was ready")
	if testenv.MountedAt(mnt) {
		t.Errorf("%s mounted after the mount command was interrupted", mnt)
	}
}

// sshOf lists the ssh processes among the descendants of pid.
func sshOf(pid int) []int {
	var found []int
	ents, _ := os.ReadDir("/proc")
	parent := map[int]int{}
	comm := map[int]string{}
	for _, e := range ents {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", p))
		if err != nil {
			continue
		}
		s := string(b)
		i := strings.LastIndexByte(s, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(s[i+1:])
		if len(f) < 2 {
			continue
		}
		pp, _ := strconv.Atoi(f[1])
		parent[p], comm[p] = pp, s[strings.IndexByte(s, '(')+1:i]
	}
	for p, c := range comm {
		if c != "ssh" {
			continue
		}
		for q := parent[p]; q > 1; q = parent[q] {
			if q == pid {
				found = append(found, p)
				break
			}
		}
	}
	return found
}
