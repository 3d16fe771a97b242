package e2e

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"sshfsm/internal/testenv"
)

// The examples of docs/systemd are tested as far as a machine without
// systemd as PID 1 allows: systemd-analyze verifies the unit files, and
// each mount they describe is made by mount(8) itself, with the options
// as written, in a mount namespace where the test binary is
// /usr/local/bin/sshfsm (mount(8) runs helpers with a fixed PATH). What
// systemd alone does (the automount point, the idle timeout, ordering
// after the network) is not run here.

// systemdDoc is the path of a file of docs/systemd.
func systemdDoc(name string) string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "docs", "systemd", name)
}

// unitKeys reads a unit file's keys as "Section.Key" → value.
func unitKeys(t *testing.T, path string) map[string]string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	keys := map[string]string{}
	section := ""
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		switch {
		case line == "" || strings.HasPrefix(line, "#"):
		case strings.HasPrefix(line, "["):
			section = strings.Trim(line, "[]")
		default:
			k, v, _ := strings.Cut(line, "=")
			keys[section+"."+k] = v
		}
	}
	return keys
}

// fstabEntries reads the fields of the entries of an fstab file.
func fstabEntries(t *testing.T, path string) [][]string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out [][]string
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) > 0 && !strings.HasPrefix(f[0], "#") {
			out = append(out, f)
		}
	}
	return out
}

// TestSystemdUnitsVerify: systemd-analyze finds nothing to say about the
// example units, which are named after their mountpoint and agree with
// the first example fstab entry.
func TestSystemdUnitsVerify(t *testing.T) {
	mount, auto := systemdDoc("mnt-data.mount"), systemdDoc("mnt-data.automount")
	m, a := unitKeys(t, mount), unitKeys(t, auto)
	if m["Mount.Where"] != "/mnt/data" || a["Automount.Where"] != "/mnt/data" || m["Mount.Type"] != "fuse.sshfsm" {
		t.Errorf("units: Where %q and %q, Type %q; want /mnt/data (their names) and fuse.sshfsm",
			m["Mount.Where"], a["Automount.Where"], m["Mount.Type"])
	}
	e := fstabEntries(t, systemdDoc("fstab"))[0]
	opts := strings.Split(e[3], ",")
	for _, o := range strings.Split(m["Mount.Options"], ",") {
		if !strings.Contains(","+e[3]+",", ","+o+",") {
			t.Errorf("fstab entry %s lacks option %s of mnt-data.mount", e[1], o)
		}
	}
	if e[0] != m["Mount.What"] || e[1] != m["Mount.Where"] || e[2] != m["Mount.Type"] ||
		!strings.Contains(e[3], "x-systemd.idle-timeout="+a["Automount.TimeoutIdleSec"]) || opts[0] != "noauto" {
		t.Errorf("fstab entry %q does not say what the units say (%v, %v)", e, m, a)
	}
	if _, err := exec.LookPath("systemd-analyze"); err != nil {
		t.Skip("systemd-analyze is not installed")
	}
	// verify reads the files where they are and writes nothing.
	cmd := exec.Command("systemd-analyze", "verify", mount, auto)
	out, err := cmd.CombinedOutput()
	if err != nil || len(out) > 0 {
		t.Errorf("systemd-analyze verify: %v\n%s", err, out)
	}
}

// TestFstabExamplesMount: each mount of docs/systemd (the fstab entries,
// and what systemd runs for mnt-data.mount: mount What Where -t Type -o
// Options) is made by mount(8) with the options as written, sshfsm says
// nothing about _netdev, noauto or x-systemd.*, the files show, and
// umount ends the daemon.
func TestFstabExamplesMount(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("mount(8) with a fuse helper needs root")
	}
	for _, tool := range []string{"mount.fuse3", "unshare"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s is not installed", tool)
		}
	}
	testenv.RequireFUSE(t)
	h := testenv.StartHost(t, "127.0.0.2")
	if err := os.WriteFile(filepath.Join(h.Dir, "f"), []byte("hello\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	bin := binary(t)
	real, err := filepath.EvalSymlinks(bin)
	if err != nil {
		t.Fatal(err)
	}
	binDir := t.TempDir()
	if err := os.Symlink(real, filepath.Join(binDir, "sshfsm")); err != nil {
		t.Fatal(err)
	}
	// The example's host and key become the test host's.
	source := h.User + "@" + h.Addr + ":" + h.Dir
	options := func(opts string) string {
		var out []string
		for _, o := range strings.Split(opts, ",") {
			if !strings.HasPrefix(o, "IdentityFile=") {
				out = append(out, o)
			}
		}
		return strings.Join(append(out, "IdentityFile="+h.IdentityFile, "IdentitiesOnly=yes",
			"Port="+strconv.Itoa(h.Port), "UserKnownHostsFile="+h.KnownHosts), ",")
	}

	// Each example mounts at mnt with a shell command.
	type example struct {
		name  string
		mount func(t *testing.T, mnt string) string
	}
	var examples []example
	for _, e := range fstabEntries(t, systemdDoc("fstab")) {
		examples = append(examples, example{"fstab " + e[1], func(t *testing.T, mnt string) string {
			fstab := filepath.Join(t.TempDir(), "fstab")
			line := strings.Join([]string{source, mnt, e[2], options(e[3]), "0", "0"}, " ")
			if err := os.WriteFile(fstab, []byte(line+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			return "mount --fstab " + shellQuote(fstab) + " " + shellQuote(mnt)
		}})
	}
	u := unitKeys(t, systemdDoc("mnt-data.mount"))
	examples = append(examples, example{"mnt-data.mount", func(t *testing.T, mnt string) string {
		return "mount " + shellQuote(source) + " " + shellQuote(mnt) + " -t " + shellQuote(u["Mount.Type"]) +
			" -o " + shellQuote(options(u["Mount.Options"]))
	}})

	for _, ex := range examples {
		t.Run(strings.ReplaceAll(ex.name, "/", "_"), func(t *testing.T) {
			mnt := filepath.Join(t.TempDir(), "mnt")
			if err := os.Mkdir(mnt, 0o755); err != nil {
				t.Fatal(err)
			}
			mountCmd := ex.mount(t, mnt)
			script := `set -e
trap 'umount -l "$MNT" 2>/dev/null || true' EXIT
mount --bind "$BINDIR" /usr/local/bin
` + mountCmd + `
grep -q " $MNT fuse.sshfsm " /proc/self/mounts || { echo "not a fuse.sshfsm mount"; exit 1; }
echo "read: $(cat "$MNT/f")"
umount "$MNT"
`
			ctx, cancel := context.WithTimeout(context.Background(), 4*testenv.Patience())
			defer cancel()
			cmd := exec.CommandContext(ctx, "unshare", "--mount", "--propagation", "private", "sh", "-c", script)
			cmd.Env = append(os.Environ(), "MNT="+mnt, "BINDIR="+binDir)
			out, err := cmd.CombinedOutput()
			if err != nil || !strings.Contains(string(out), "read: hello") {
				t.Fatalf("%s: %v\n%s", mountCmd, err, out)
			}
			if strings.Contains(string(out), "warning") {
				t.Errorf("%s printed %q; want no warning about mount(8)'s or systemd's options", mountCmd, out)
			}
			if !testenv.PollFor(testenv.Patience(), func() bool { return daemonOf(real, mnt) == 0 }) {
				t.Errorf("the daemon of %s still runs after umount", mnt)
			}
		})
	}
}

// shellQuote quotes s for sh.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
