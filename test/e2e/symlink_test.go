package e2e

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"sshfsm/internal/testenv"
)

// hostileLinks are links a server can make whose text stays inside the
// mount while the kernel, following the links within them, would climb
// out: dot is a link to ".", so dot/.. is the link's parent directory.
func hostileLinks(t *testing.T, dir string, up string) {
	t.Helper()
	writeFiles(t, map[string]string{filepath.Join(dir, "x"): "inside\n"})
	if err := os.MkdirAll(filepath.Join(dir, "d"), 0o755); err != nil {
		t.Fatal(err)
	}
	for l, target := range map[string]string{
		"dot": ".",
		"esc": "dot/../" + up + "OUTSIDE",
		// As many ".." as dot/: more than the mountpoint's depth, and "/.."
		// is "/".
		"host":  strings.Repeat("dot/", 30) + strings.Repeat("../", 30) + up + "etc/hostname",
		"d/dot": ".",
		"d/ok":  "dot/../x", // d, then its parent: the root's x
	} {
		if err := os.Symlink(target, filepath.Join(dir, l)); err != nil {
			t.Fatal(err)
		}
	}
}

// cannotClimbOut checks, for the links hostileLinks made under the mount's
// directory at, that neither a read nor an append through them reaches
// the client's files, and that a link leading inside still works.
func cannotClimbOut(t *testing.T, m *Mount, at string) {
	t.Helper()
	outside := filepath.Join(filepath.Dir(m.Dir), "OUTSIDE")
	const secret = "client file next to the mountpoint\n"
	writeFiles(t, map[string]string{outside: secret})
	for _, l := range []string{"esc", "host"} {
		p := m.Path(at, l)
		if b, err := os.ReadFile(p); !errors.Is(err, syscall.EACCES) {
			t.Errorf("read %s: %q, %v; want EACCES", p, b, err)
		}
	}
	// Appending only through the link to the test's own file: the
	// other would write to this machine's /etc/hostname before the fix.
	if f, err := os.OpenFile(m.Path(at, "esc"), os.O_WRONLY|os.O_APPEND, 0); err == nil {
		f.WriteString("appended\n")
		f.Close()
		t.Errorf("append to %s/esc: opened", at)
	}
	if b, err := os.ReadFile(m.Path(at, "host")); err == nil {
		if mine, _ := os.ReadFile("/etc/hostname"); string(b) == string(mine) {
			t.Errorf("read %s/host: the client's /etc/hostname", at)
		}
	}
	if got := readString(t, outside); got != secret {
		t.Errorf("client file next to the mountpoint now holds %q", got)
	}
	if got, err := os.Readlink(m.Path(at, "d", "ok")); got != "../x" || err != nil {
		t.Errorf("readlink %s/d/ok: %q, %v; want ../x", at, got, err)
	}
	if got := readString(t, m.Path(at, "d", "ok")); got != "inside\n" {
		t.Errorf("read %s/d/ok: %q, want the root's x", at, got)
	}
}

// TestSymlinksCannotClimbOut: a server's links cannot lead the kernel to
// the client's files, in a plain mount, in a union and in a graft (whose
// tree lies one level below the mount root).
func TestSymlinksCannotClimbOut(t *testing.T) {
	binary(t) // built before muxMount's time limit starts
	hosts, cfg := testenv.StartHosts(t, 1)
	h := hosts[0]

	plain := filepath.Join(h.Dir, "plain")
	hostileLinks(t, plain, "")
	m, _ := muxMount(t, h, "-F", cfg, h.Alias+":"+plain)
	cannotClimbOut(t, m, "")

	upper, lower, graft := filepath.Join(h.Dir, "upper"), filepath.Join(h.Dir, "lower"), filepath.Join(h.Dir, "graft")
	writeFiles(t, map[string]string{filepath.Join(upper, "u"): "upper\n"})
	hostileLinks(t, lower, "")
	hostileLinks(t, graft, "../")
	mux, _ := muxMount(t, h, "-F", cfg, h.Alias+":"+upper, h.Alias+":"+lower, "G="+h.Alias+":"+graft)
	t.Run("union", func(t *testing.T) { cannotClimbOut(t, mux, "") })
	t.Run("graft", func(t *testing.T) { cannotClimbOut(t, mux, "G") })
}
