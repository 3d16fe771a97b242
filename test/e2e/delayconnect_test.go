package e2e

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"sshfsm/internal/netproxy"
	"sshfsm/internal/testenv"
)

// statErr is the error of a stat through the mount, which must return.
func statErr(t *testing.T, p string) error {
	t.Helper()
	var err error
	within(t, 0, "stat of "+p, func() error { _, err = os.Stat(p); return nil })
	return err
}

// readsBack polls until p reads as want through the mount.
func readsBack(t *testing.T, p, want string) {
	t.Helper()
	eventually(t, 0, "reading "+p, func() error {
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if string(b) != want {
			return fmt.Errorf("read %q, want %q", b, want)
		}
		return nil
	})
}

// TestDelayConnectHostDown: with delay_connect the mount is made while the
// host refuses connections; an access then fails with EHOSTUNREACH, and
// once the host answers, accesses work, with no remount.
func TestDelayConnectHostDown(t *testing.T) {
	h := testenv.StartHost(t, "127.0.0.2")
	if err := os.WriteFile(filepath.Join(h.Dir, "f"), []byte("hello"), 0o644); err != nil {
		t.Fatal(err)
	}
	h.Kill()
	m := mount(t, h, mountSpec{opts: []string{"delay_connect"}})
	if err := statErr(t, m.Path("f")); !errors.Is(err, syscall.EHOSTUNREACH) {
		t.Fatalf("stat while the host refuses connections: %v; want EHOSTUNREACH", err)
	}
	if err := h.Restart(); err != nil {
		t.Fatal(err)
	}
	readsBack(t, m.Path("f"), "hello")
}

// TestDelayConnectHostSilent: with delay_connect the mount is made while
// connections to the host go nowhere; an access then fails with
// ETIMEDOUT instead of hanging, and once the link carries data again,
// accesses work.
func TestDelayConnectHostSilent(t *testing.T) {
	h := testenv.StartHost(t, "127.0.0.2")
	if err := os.WriteFile(filepath.Join(h.Dir, "f"), []byte("hello"), 0o644); err != nil {
		t.Fatal(err)
	}
	p, ssh, dest := proxied(t, h, netproxy.Options{})
	p.Blackhole(true)
	m := mount(t, h, mountSpec{sshArgs: ssh, dest: dest, opts: []string{"delay_connect", "timeout=3"}})
	if err := statErr(t, m.Path("f")); !errors.Is(err, syscall.ETIMEDOUT) {
		t.Fatalf("stat while the link is silent: %v; want ETIMEDOUT", err)
	}
	p.Blackhole(false)
	readsBack(t, m.Path("f"), "hello")
}

// TestDelayConnectHostUp: with delay_connect and the host up, the mount
// does not connect (sshfsm status says so); the first access does, and
// the mount works as any other.
func TestDelayConnectHostUp(t *testing.T) {
	h := testenv.StartHost(t, "127.0.0.2")
	if err := os.WriteFile(filepath.Join(h.Dir, "f"), []byte("hello"), 0o644); err != nil {
		t.Fatal(err)
	}
	m := mount(t, h, mountSpec{opts: []string{"delay_connect"}})
	hosts := status(t, m.Dir).Branches[0].Hosts
	if len(hosts) != 1 || !strings.Contains(hosts[0].Detail, "not connected yet") {
		t.Errorf("status before any access: %+v; want the host not connected yet", hosts)
	}
	if err := os.WriteFile(m.Path("g"), []byte("written"), 0o644); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(m.RemotePath("g")); err != nil || string(b) != "written" {
		t.Errorf("the server holds g: %q, %v", b, err)
	}
	readsBack(t, m.Path("f"), "hello")
	if hosts := status(t, m.Dir).Branches[0].Hosts; len(hosts) != 1 || hosts[0].State != "up" {
		t.Errorf("status after the first access: %+v; want the host up", hosts)
	}
}

// TestNoCheckRoot: a missing remote directory fails the mount, unless
// no_check_root: then the mount is made, accesses fail with ENOENT, and
// once the directory exists its files show.
func TestNoCheckRoot(t *testing.T) {
	testenv.RequireFUSE(t)
	h := testenv.StartHost(t, "127.0.0.2")
	missing := filepath.Join(h.Dir, "later")
	dest := h.Alias + ":" + missing

	dir := filepath.Join(t.TempDir(), "checked")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(binary(t), append(h.SSHArgs(), dest, dir)...).CombinedOutput()
	if code := exitCode(err); code != 5 || !strings.Contains(string(out), "does not exist") || testenv.MountedAt(dir) {
		t.Errorf("mount of a missing directory: exit %d, mounted %v: %s; want exit 5, not mounted", code, testenv.MountedAt(dir), out)
	}

	m := mount(t, h, mountSpec{dest: dest, opts: []string{"no_check_root"}})
	m.Remote = missing
	// A listing, not a lookup: a name found missing stays so in the
	// caches for negative_timeout.
	var listErr error
	within(t, 0, "listing the mount", func() error { _, listErr = os.ReadDir(m.Dir); return nil })
	if !errors.Is(listErr, syscall.ENOENT) {
		t.Fatalf("listing the missing directory: %v; want ENOENT", listErr)
	}
	if err := os.Mkdir(missing, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(missing, "f"), []byte("hello"), 0o644); err != nil {
		t.Fatal(err)
	}
	readsBack(t, m.Path("f"), "hello")
}

// TestDelayConnectSeveralHosts: with delay_connect a union mounts while
// every host is down and asks none of them; the first access connects the
// hosts that answer and shows their files, without the others' and
// without failing for them; a host that comes back joins with no remount.
func TestDelayConnectSeveralHosts(t *testing.T) {
	hosts, cfg := testenv.StartHosts(t, 2)
	h1, h2 := hosts[0], hosts[1]
	writeFiles(t, map[string]string{
		filepath.Join(h1.Dir, "one.txt"): "1\n",
		filepath.Join(h2.Dir, "two.txt"): "2\n",
	})
	h1.Kill()
	h2.Kill()
	m, out := muxMount(t, h1, "-F", cfg, "-o", "delay_connect", h1.Alias+":"+h1.Dir, h2.Alias+":"+h2.Dir)
	if strings.Contains(out, "unreachable") || strings.Contains(out, "cannot connect") {
		t.Errorf("mount printed %q; want no word about the hosts, which it does not ask", out)
	}
	if err := h1.Restart(); err != nil {
		t.Fatal(err)
	}
	within(t, 0, "the first listing", func() error {
		ents, err := os.ReadDir(m.Dir)
		if err != nil {
			return err
		}
		if len(ents) != 1 || ents[0].Name() != "one.txt" {
			return fmt.Errorf("root lists %v, want %s's one.txt alone", ents, h1.Alias)
		}
		return nil
	})
	if err := h2.Restart(); err != nil {
		t.Fatal(err)
	}
	readsBack(t, m.Path("two.txt"), "2\n")
	readsBack(t, m.Path("one.txt"), "1\n")
}

// TestDelayConnectReplicaSet: with delay_connect, a branch served by two
// gateways to the same storage, the first of them down, mounts; the first
// access, a write, goes through the other.
func TestDelayConnectReplicaSet(t *testing.T) {
	hosts, cfg := testenv.StartHosts(t, 2)
	gw1, gw2 := hosts[0], hosts[1]
	shared := t.TempDir()
	gw1.Kill()
	m, _ := muxMount(t, gw1, "-F", cfg, "-o", "delay_connect", gw1.Alias+","+gw2.Alias+":"+shared)
	within(t, 0, "the first write", func() error { return os.WriteFile(m.Path("new"), []byte("written"), 0o644) })
	if b, err := os.ReadFile(filepath.Join(shared, "new")); err != nil || string(b) != "written" {
		t.Errorf("the storage holds %q, %v; want what was written", b, err)
	}
}
