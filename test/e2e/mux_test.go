package e2e

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"sshfsm/internal/control"
	"sshfsm/internal/testenv"
)

// muxMount mounts the binary with args (branches and options, the
// mountpoint is added) and unmounts when the test ends. It returns the
// mount and what the command printed.
func muxMount(t *testing.T, first *testenv.Host, args ...string) (*Mount, string) {
	t.Helper()
	testenv.RequireFUSE(t)
	m := &Mount{Dir: filepath.Join(t.TempDir(), "mnt"), Host: first, args: args}
	if err := os.Mkdir(m.Dir, 0o755); err != nil {
		t.Fatal(err)
	}
	bin := binary(t) // building it first is not part of the wait
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, bin, append(args, m.Dir)...).CombinedOutput()
	if err != nil || !testenv.MountedAt(m.Dir) {
		t.Fatalf("sshfsm %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	t.Cleanup(func() { m.unmount(t) })
	return m, string(out)
}

func writeFiles(t *testing.T, files map[string]string) {
	t.Helper()
	for p, body := range files {
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func names(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatalf("readdir %s: %v", dir, err)
	}
	var out []string
	for _, e := range ents {
		out = append(out, e.Name())
	}
	return out
}

func readString(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatalf("read %s: %v", p, err)
	}
	return string(b)
}

func exists(p string) bool {
	_, err := os.Lstat(p)
	return err == nil
}

// The first scenario of the original SSHFS-MUX article: a home directory
// and a project directory of one login node, seen as one directory.
func TestSeedHomeAndProject(t *testing.T) {
	hosts, cfg := testenv.StartHosts(t, 1)
	login1 := hosts[0]
	home, project := filepath.Join(login1.Dir, "home"), filepath.Join(login1.Dir, "project")
	writeFiles(t, map[string]string{
		filepath.Join(home, "data1", "job.sh"):        "#!/bin/sh\n",
		filepath.Join(home, "notes.txt"):              "home notes\n",
		filepath.Join(project, "data2", "input.dat"):  "input\n",
		filepath.Join(project, "notes.txt"):           "project notes\n",
		filepath.Join(project, "data1", "result.out"): "result\n",
	})
	big := make([]byte, 4<<20)
	for i := range big {
		big[i] = byte(i * 7)
	}
	writeFiles(t, map[string]string{filepath.Join(project, "data2", "big.bin"): string(big)})
	m, _ := muxMount(t, login1, "-F", cfg, "-o", "max_conns=2", login1.Alias+":"+home, login1.Alias+":"+project)
	// Both branches live on login1: one connection (and at most one
	// password prompt) serves both. The second channel opens when work
	// needs it: a large sequential read through the second branch; two
	// channels per branch would make three sessions here.
	if got, err := os.ReadFile(m.Path("data2", "big.bin")); err != nil || !bytes.Equal(got, big) {
		t.Fatalf("big.bin: %d bytes, %v", len(got), err)
	}
	eventually(t, 10*time.Second, "both channels up", func() error {
		sessions := 0
		for _, c := range children(m.daemonPID()) {
			if strings.Contains(cmdline(c), "sftp") {
				sessions++
			}
		}
		if sessions != 2 {
			return fmt.Errorf("%d ssh sessions, want max_conns=2 shared by both branches", sessions)
		}
		return nil
	})

	if got, want := names(t, m.Dir), []string{"data1", "data2", "notes.txt"}; !slices.Equal(got, want) {
		t.Fatalf("root: %v, want %v", got, want)
	}
	// The higher branch (home) wins a name both hold; directories merge.
	if got := readString(t, m.Path("notes.txt")); got != "home notes\n" {
		t.Errorf("notes.txt: %q, want home's", got)
	}
	if got, want := names(t, m.Path("data1")), []string{"job.sh", "result.out"}; !slices.Equal(got, want) {
		t.Errorf("merged data1: %v, want %v", got, want)
	}
	if got := readString(t, m.Path("data2", "input.dat")); got != "input\n" {
		t.Errorf("data2/input.dat: %q", got)
	}
	// A new file goes to the first branch that has its parent (epff).
	if err := os.WriteFile(m.Path("data2", "output.dat"), []byte("out\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if !exists(filepath.Join(project, "data2", "output.dat")) || exists(filepath.Join(home, "data2")) {
		t.Error("data2/output.dat was not created in the project branch only")
	}
	if err := os.WriteFile(m.Path("new.txt"), []byte("new\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if !exists(filepath.Join(home, "new.txt")) || exists(filepath.Join(project, "new.txt")) {
		t.Error("new.txt was not created in the home branch only")
	}
	// Removing a name both branches hold removes both: nothing reappears.
	if err := os.Remove(m.Path("notes.txt")); err != nil {
		t.Fatal(err)
	}
	if exists(filepath.Join(home, "notes.txt")) || exists(filepath.Join(project, "notes.txt")) || exists(m.Path("notes.txt")) {
		t.Error("notes.txt survived its removal in some branch")
	}
	// A move into a directory another branch holds: the file ends up there
	// in the mount's view and nowhere else.
	if out, err := exec.Command("mv", m.Path("new.txt"), m.Path("data2", "moved.txt")).CombinedOutput(); err != nil {
		t.Fatalf("mv into data2: %v: %s", err, out)
	}
	if readString(t, m.Path("data2", "moved.txt")) != "new\n" || exists(m.Path("new.txt")) ||
		exists(filepath.Join(home, "new.txt")) || exists(filepath.Join(project, "new.txt")) {
		t.Error("mv into data2 did not move the file")
	}
}

// The load-balancing scenario: FOO and BAR of one shared project tree,
// each through its own gateway, under one directory.
func TestSeedGraftsThroughTwoGateways(t *testing.T) {
	hosts, cfg := testenv.StartHosts(t, 2)
	gw1, gw2 := hosts[0], hosts[1]
	project := filepath.Join(t.TempDir(), "PROJECT") // the storage both gateways see
	foo := bytes.Repeat([]byte("F"), 3<<20)
	bar := bytes.Repeat([]byte("B"), 5<<20)
	writeFiles(t, map[string]string{
		filepath.Join(project, "FOO", "foo.bin"): string(foo),
		filepath.Join(project, "BAR", "bar.bin"): string(bar),
		filepath.Join(project, "BAZ", "other"):   "not mounted\n",
	})
	m, _ := muxMount(t, gw1, "-F", cfg,
		"FOO="+gw1.Alias+":"+filepath.Join(project, "FOO"),
		"BAR="+gw2.Alias+":"+filepath.Join(project, "BAR"))

	if got, want := names(t, m.Dir), []string{"BAR", "FOO"}; !slices.Equal(got, want) {
		t.Fatalf("root: %v, want %v", got, want)
	}
	if got := readString(t, m.Path("FOO", "foo.bin")); got != string(foo) {
		t.Error("FOO/foo.bin differs")
	}
	if got := readString(t, m.Path("BAR", "bar.bin")); got != string(bar) {
		t.Error("BAR/bar.bin differs")
	}
	// Each gateway served its own directory's bytes.
	st := status(t, m.Dir)
	served := map[string]uint64{}
	for _, b := range st.Branches {
		for _, h := range b.Hosts {
			served[h.Name] += h.BytesRead
		}
	}
	if served[gw1.Alias] < uint64(len(foo)) || served[gw2.Alias] < uint64(len(bar)) ||
		served[gw1.Alias] >= uint64(len(foo)+len(bar)) {
		t.Errorf("bytes read per gateway %v: want FOO's from %s and BAR's from %s", served, gw1.Alias, gw2.Alias)
	}
	// Grafts are separate trees: a rename between them is EXDEV.
	err := os.Rename(m.Path("FOO", "foo.bin"), m.Path("BAR", "foo.bin"))
	if !errors.Is(err, syscall.EXDEV) {
		t.Errorf("rename between grafts: %v, want EXDEV", err)
	}
}

// status asks the daemon of mnt for its status.
func status(t *testing.T, mnt string) control.Status {
	t.Helper()
	out, err := exec.Command(binary(t), "status", "--json", mnt).Output()
	if err != nil {
		t.Fatalf("sshfsm status: %v", err)
	}
	var st control.Status
	if err := json.Unmarshal(out, &st); err != nil {
		t.Fatalf("status json: %v\n%s", err, out)
	}
	return st
}

// A host unreachable at mount time: the mount comes up with the others and
// says so; its files appear once it answers, without a remount. With
// require_all the same mount fails.
func TestUnreachableAtMount(t *testing.T) {
	hosts, cfg := testenv.StartHosts(t, 2)
	h1, h2 := hosts[0], hosts[1]
	writeFiles(t, map[string]string{
		filepath.Join(h1.Dir, "one.txt"): "1\n",
		filepath.Join(h2.Dir, "two.txt"): "2\n",
	})
	h2.Kill()
	args := []string{"-F", cfg, h1.Alias + ":" + h1.Dir, h2.Alias + ":" + h2.Dir}

	dir := filepath.Join(t.TempDir(), "strict")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(binary(t), append(append([]string{"-o", "require_all"}, args...), dir)...).CombinedOutput()
	if code := exitCode(err); code != 3 || !strings.Contains(string(out), "cannot connect to "+h2.Alias) || testenv.MountedAt(dir) {
		t.Errorf("require_all with %s down: exit %d, mounted %v: %s", h2.Alias, code, testenv.MountedAt(dir), out)
	}

	m, out2 := muxMount(t, h1, args...)
	if !strings.Contains(out2, "warning: "+h2.Alias+" is unreachable") {
		t.Errorf("no warning naming %s: %q", h2.Alias, out2)
	}
	if got := names(t, m.Dir); !slices.Equal(got, []string{"one.txt"}) {
		t.Fatalf("with %s down: %v", h2.Alias, got)
	}
	if err := h2.Restart(); err != nil {
		t.Fatal(err)
	}
	eventually(t, 20*time.Second, h2.Alias+"'s files appearing", func() error {
		if got := names(t, m.Dir); !slices.Equal(got, []string{"one.txt", "two.txt"}) {
			return fmt.Errorf("root lists %v", got)
		}
		return nil
	})
	if got := readString(t, m.Path("two.txt")); got != "2\n" {
		t.Errorf("two.txt: %q", got)
	}
}

// A host lost while mounted: the union keeps answering from the other
// branch without waiting for the lost one's timeout, and the lost host's
// names come back when it does.
func TestHostLostWhileMounted(t *testing.T) {
	hosts, cfg := testenv.StartHosts(t, 2)
	h1, h2 := hosts[0], hosts[1]
	writeFiles(t, map[string]string{
		filepath.Join(h1.Dir, "one.txt"): "1\n",
		filepath.Join(h2.Dir, "two.txt"): "2\n",
	})
	m, _ := muxMount(t, h1, "-F", cfg, "-o", "timeout=600", h1.Alias+":"+h1.Dir, h2.Alias+":"+h2.Dir)
	if got := names(t, m.Dir); !slices.Equal(got, []string{"one.txt", "two.txt"}) {
		t.Fatalf("root: %v", got)
	}
	h2.Kill()
	// Well under the 600s timeout (the waits below end at testenv.Patience):
	// the lost branch is skipped, not waited for.
	eventually(t, 8*time.Second, h2.Alias+"'s files vanishing", func() error {
		if got := names(t, m.Dir); !slices.Equal(got, []string{"one.txt"}) {
			return fmt.Errorf("root lists %v", got)
		}
		return nil
	})
	within(t, 5*time.Second, "reading one.txt while "+h2.Alias+" is down", func() error {
		if got := readString(t, m.Path("one.txt")); got != "1\n" {
			return fmt.Errorf("one.txt: %q", got)
		}
		return nil
	})
	if err := h2.Restart(); err != nil {
		t.Fatal(err)
	}
	eventually(t, 20*time.Second, h2.Alias+"'s files returning", func() error {
		if got := names(t, m.Dir); !slices.Equal(got, []string{"one.txt", "two.txt"}) {
			return fmt.Errorf("root lists %v", got)
		}
		return nil
	})
}

// A replica set of two gateways to one tree: a large read completes with
// the right bytes while the gateway serving it is killed.
func TestReplicaSetSurvivesGatewayLoss(t *testing.T) {
	hosts, cfg := testenv.StartHosts(t, 2)
	gw1, gw2 := hosts[0], hosts[1]
	shared := t.TempDir()
	data := make([]byte, 96<<20)
	for i := range data {
		data[i] = byte(i*131 + i>>20)
	}
	writeFiles(t, map[string]string{filepath.Join(shared, "big.bin"): string(data)})
	m, _ := muxMount(t, gw1, "-F", cfg, gw1.Alias+","+gw2.Alias+":"+shared)

	f, err := os.Open(m.Path("big.bin"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.CopyN(h, f, 16<<20); err != nil {
		t.Fatal(err)
	}
	// Kill the gateway that served the most so far: the open file is on it.
	var busiest *testenv.Host
	var most uint64
	for _, b := range status(t, m.Dir).Branches {
		for _, hs := range b.Hosts {
			for _, gw := range hosts {
				if gw.Alias == hs.Name && hs.BytesRead >= most {
					busiest, most = gw, hs.BytesRead
				}
			}
		}
	}
	if busiest == nil || most == 0 {
		t.Fatal("status shows no gateway serving the read")
	}
	busiest.Kill()
	within(t, 60*time.Second, "reading the rest with one gateway lost", func() error {
		_, err := io.Copy(h, f)
		return err
	})
	if !bytes.Equal(h.Sum(nil), sha256Sum(data)) {
		t.Fatal("bytes read through the replica set differ from the file")
	}
}

func sha256Sum(b []byte) []byte {
	s := sha256.Sum256(b)
	return s[:]
}

func exitCode(err error) int {
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode()
	}
	if err != nil {
		return -1
	}
	return 0
}

// Three hosts in one mountpoint: a union of two and a graft of the third,
// each serving its own files; status lists all three up.
func TestThreeHosts(t *testing.T) {
	hosts, cfg := testenv.StartHosts(t, 3)
	for i, h := range hosts {
		writeFiles(t, map[string]string{filepath.Join(h.Dir, fmt.Sprintf("h%d.txt", i+1)): h.Alias + "\n"})
	}
	m, _ := muxMount(t, hosts[0], "-F", cfg,
		hosts[0].Alias+":"+hosts[0].Dir, hosts[1].Alias+":"+hosts[1].Dir, "third="+hosts[2].Alias+":"+hosts[2].Dir)
	if got, want := names(t, m.Dir), []string{"h1.txt", "h2.txt", "third"}; !slices.Equal(got, want) {
		t.Fatalf("root: %v, want %v", got, want)
	}
	for p, want := range map[string]string{
		m.Path("h1.txt"): hosts[0].Alias + "\n", m.Path("h2.txt"): hosts[1].Alias + "\n",
		m.Path("third", "h3.txt"): hosts[2].Alias + "\n",
	} {
		if got := readString(t, p); got != want {
			t.Errorf("%s: %q, want %q", p, got, want)
		}
	}
	up := map[string]bool{}
	for _, b := range status(t, m.Dir).Branches {
		for _, h := range b.Hosts {
			up[h.Name] = h.State == control.StateUp
		}
	}
	for _, h := range hosts {
		if !up[h.Alias] {
			t.Errorf("status: %s not up: %v", h.Alias, up)
		}
	}
}
