// Package mountinfo reads the mounts this process sees from
// /proc/self/mountinfo.
package mountinfo

import (
	"bufio"
	"os"
	"strconv"
	"strings"
)

// Mount is one line of /proc/self/mountinfo.
type Mount struct {
	Point   string // mount point
	Dev     string // major:minor of the filesystem's device
	FSType  string // e.g. fuse.sshfsm
	Source  string // e.g. user@host:/dir
	Options string // per-mount options, e.g. rw,nosuid,nodev
	Super   string // superblock options
}

// Path is the file this package reads.
const Path = "/proc/self/mountinfo"

// All lists the mounts this process sees, in mount order.
func All() ([]Mount, error) {
	f, err := os.Open(Path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []Mount
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		if m, ok := parse(sc.Text()); ok {
			out = append(out, m)
		}
	}
	return out, sc.Err()
}

// At returns the mount whose mount point is dir (the last one, when mounts
// are stacked).
func At(dir string) (Mount, bool) {
	ms, err := All()
	if err != nil {
		return Mount{}, false
	}
	for i := len(ms) - 1; i >= 0; i-- {
		if ms[i].Point == dir {
			return ms[i], true
		}
	}
	return Mount{}, false
}

// parse reads one line: id parent major:minor root point options
// [optional fields...] - fstype source superoptions, separated by one
// space each. The kernel escapes only space, tab, newline and backslash in
// a field: any other blank (\r, \f, U+00A0) belongs to it.
func parse(line string) (Mount, bool) {
	f := strings.Split(line, " ")
	sep := -1
	for i := 6; i < len(f); i++ {
		if f[i] == "-" {
			sep = i
			break
		}
	}
	if sep < 0 || sep+2 >= len(f) || f[2] == "" || f[4] == "" || f[sep+1] == "" {
		return Mount{}, false
	}
	m := Mount{Point: Unescape(f[4]), Dev: f[2], Options: f[5], FSType: f[sep+1], Source: Unescape(f[sep+2])}
	if sep+3 < len(f) {
		m.Super = f[sep+3]
	}
	return m, true
}

// Unescape decodes the \ooo octal escapes of mountinfo fields.
func Unescape(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+4 <= len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}
