package mountinfo

import (
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

func TestParse(t *testing.T) {
	cases := []struct {
		line string
		want Mount
		ok   bool
	}{
		{`36 35 98:0 / /mnt/my\040dir rw,nosuid shared:1 - fuse.sshfsm h:/a\134b rw,user_id=0`,
			Mount{Point: "/mnt/my dir", Dev: "98:0", Options: "rw,nosuid", FSType: "fuse.sshfsm", Source: `h:/a\b`, Super: "rw,user_id=0"}, true},
		{`36 35 98:0 / /x ro - ext4 /dev/vda`, Mount{Point: "/x", Dev: "98:0", Options: "ro", FSType: "ext4", Source: "/dev/vda"}, true},
		{`36 35 98:0 / /x ro ext4 /dev/vda`, Mount{}, false},
		// The kernel escapes only space, tab, newline and backslash: other
		// blanks are part of the field.
		{"36 35 0:48 / /mnt/a\u00a0b\fc rw - fuse.sshfsm h:/d\re rw",
			Mount{Point: "/mnt/a\u00a0b\fc", Dev: "0:48", Options: "rw", FSType: "fuse.sshfsm", Source: "h:/d\re", Super: "rw"}, true},
		{``, Mount{}, false},
	}
	for _, c := range cases {
		got, ok := parse(c.line)
		if ok != c.ok || got != c.want {
			t.Errorf("parse(%q) = %+v, %v; want %+v, %v", c.line, got, ok, c.want, c.ok)
		}
	}
}

func TestAllSeesRoot(t *testing.T) {
	ms, err := All()
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := At("/"); !ok || len(ms) == 0 {
		t.Errorf("no mount at / among %d mounts", len(ms))
	}
}

// A mount point whose name holds blanks the kernel does not escape is
// found where it is mounted (as root, where tmpfs can be mounted).
func TestAtOddBlanks(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("mounting tmpfs needs root")
	}
	dir := filepath.Join(t.TempDir(), "mnt\u00a0with\fblanks\r")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mount("sshfsm-test", dir, "tmpfs", 0, "size=64k"); err != nil {
		t.Skipf("cannot mount tmpfs: %v", err)
	}
	t.Cleanup(func() { _ = unix.Unmount(dir, unix.MNT_DETACH) })
	m, ok := At(dir)
	if !ok || m.FSType != "tmpfs" || m.Source != "sshfsm-test" {
		t.Errorf("At(%q) = %+v, %v", dir, m, ok)
	}
}

func TestUnescape(t *testing.T) {
	for in, want := range map[string]string{
		`/mnt/plain`:         "/mnt/plain",
		`/mnt/with\040space`: "/mnt/with space",
		`/mnt/tab\011x`:      "/mnt/tab\tx",
		`/mnt/back\134sl`:    `/mnt/back\sl`,
	} {
		if got := Unescape(in); got != want {
			t.Errorf("Unescape(%q) = %q, want %q", in, got, want)
		}
	}
	if got := Unescape(`/mnt/a\040b\134c\011`); got != "/mnt/a b\\c\t" {
		t.Errorf("unescape = %q", got)
	}
	if got := Unescape(`/x\04`); got != `/x\04` {
		t.Errorf("short escape = %q", got)
	}
	if m, ok := At("/proc"); !ok || m.FSType != "proc" {
		t.Errorf("At(/proc) = %+v, %v", m, ok)
	}
	if _, ok := At("/proc/self"); ok {
		t.Error("At(/proc/self) = true")
	}
}
