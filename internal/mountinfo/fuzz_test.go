package mountinfo

import (
	"fmt"
	"strings"
	"testing"
)

// escape writes s as the kernel writes a mountinfo field: blanks, newline
// and backslash as \ooo (mangle in fs/proc_namespace.c).
func escape(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case ' ', '\t', '\n', '\\':
			fmt.Fprintf(&b, `\%03o`, c)
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

// FuzzMountinfo: a mount line the kernel prints for any mount point and
// source reads back as them; any other line parses without panicking, to
// a mount with a device, a mount point and a type or to none; Unescape
// never makes a string longer.
func FuzzMountinfo(f *testing.F) {
	f.Add("/home/u/mnt dir", "u@h:/srv/a b\\c", "36 25 0:48 / /mnt rw,relatime - fuse.sshfsm h: rw")
	f.Add("/m\n", "", `1 2 3:4 / /a\040b rw shared:1 - ext4 /dev/x rw`)
	f.Fuzz(func(t *testing.T, point, source, line string) {
		if point == "" || source == "" || strings.ContainsRune(point+source, 0) {
			return
		}
		l := "36 25 0:48 / " + escape(point) + " rw,nosuid shared:7 - fuse.sshfsm " + escape(source) + " rw,user_id=0"
		m, ok := parse(l)
		if !ok || m.Point != point || m.Source != source || m.FSType != "fuse.sshfsm" || m.Super != "rw,user_id=0" {
			t.Fatalf("%q parsed as %+v, %v", l, m, ok)
		}
		if m, ok := parse(line); ok && (m.FSType == "" || m.Dev == "" || m.Point == "") {
			t.Fatalf("%q parsed as %+v", line, m)
		}
		if u := Unescape(line); len(u) > len(line) {
			t.Fatalf("Unescape(%q) = %q", line, u)
		}
	})
}
