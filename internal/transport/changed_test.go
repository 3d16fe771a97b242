package transport

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"sshfsm/internal/remote"
	"sshfsm/internal/testenv"
)

// A change listing reports, as tree paths below the listed directory,
// the names whose ctime is within the age asked (a file written, a name
// added or removed shows through its directory), and nothing older. The
// ctime of the old names is set by the server's own clock, as is the age:
// a rename of a whole old tree into place keeps it out of the window
// except for the directory it came into.
func TestListChanged(t *testing.T) {
	th := testenv.StartHost(t, "127.0.0.2")
	top := filepath.Join(th.Dir, "top 'q' $x")
	old := filepath.Join(th.Dir, "old")
	must(t, os.MkdirAll(filepath.Join(old, "quiet\nname", "deep"), 0o755))
	must(t, os.WriteFile(filepath.Join(old, "quiet\nname", "deep", "f"), []byte("x"), 0o644))
	must(t, os.WriteFile(filepath.Join(old, "written"), []byte("x"), 0o644))
	must(t, os.MkdirAll(filepath.Join(th.Dir, "elsewhere"), 0o755))
	h := dialSSH(t, th, nil)
	r := h.Remote().(remote.ChangeLister)
	// Everything is new: a long window reports it all.
	var all []string
	must(t, r.ListChanged(bg, "old", time.Hour, func(p string, age time.Duration) {
		all = append(all, p)
		if age > time.Minute {
			t.Errorf("%q changed %v ago, want less than a minute", p, age)
		}
	}))
	slices.Sort(all)
	want := []string{"old", "old/quiet\nname", "old/quiet\nname/deep", "old/quiet\nname/deep/f", "old/written"}
	if !slices.Equal(all, want) {
		t.Errorf("within an hour: %q, want %q", all, want)
	}
	// The window's start is the server's now minus the age: wait until
	// the tree is out of a short one, then change a few names.
	window := 1500 * time.Millisecond
	testenv.Eventually(t, "the tree older than the window", func() bool {
		n := 0
		must(t, r.ListChanged(bg, "old", window, func(string, time.Duration) { n++ }))
		return n == 0
	})
	must(t, os.WriteFile(filepath.Join(old, "written"), []byte("y"), 0o644))
	must(t, os.WriteFile(filepath.Join(old, "quiet\nname", "deep", "new"), []byte("y"), 0o644))
	must(t, os.Rename(old, top))
	var got []string
	must(t, r.ListChanged(bg, strings.TrimPrefix(top, th.Dir+"/"), window, func(p string, _ time.Duration) { got = append(got, p) }))
	slices.Sort(got)
	base := filepath.Base(top)
	want = []string{base, base + "/quiet\nname/deep", base + "/quiet\nname/deep/new", base + "/written"}
	if !slices.Equal(got, want) {
		t.Errorf("after the changes: %q, want %q", got, want)
	}
}

// A host that runs no commands cannot list changes.
func TestListChangedUnsupported(t *testing.T) {
	th := testenv.StartHostWith(t, testenv.Options{Addr: "127.0.0.3", SFTPOnly: true})
	h := dialSSH(t, th, nil)
	err := h.Remote().(remote.ChangeLister).ListChanged(bg, "", time.Hour, func(string, time.Duration) { t.Error("reported a path") })
	if !errors.Is(err, remote.ErrTreeUnsupported) {
		t.Errorf("SFTP-only host: %v", err)
	}
}

// The output of a change listing is hostile: paths that leave the listed
// directory, times that are not, and a listing cut short fail it whole.
func TestReadChanged(t *testing.T) {
	const head = changedMarker + "\n1000.5\n"
	for _, c := range []struct {
		out    string
		marked bool
		want   []changedPath
		bad    bool
	}{
		{"motd\n" + head + "1000.5 \x00990.25 a\x001001 a/b c\x00", true,
			[]changedPath{{"d", 0}, {"d/a", 10250 * time.Millisecond}, {"d/a/b c", 0}}, false},
		{head, true, nil, false},
		{"no marker\n", false, nil, false},
		{changedMarker + "\n%s.%N\n", true, nil, true},
		{head + "1 ../x\x00", true, nil, true},
		{head + "1 /etc\x00", true, nil, true},
		{head + "1 a/../../x\x00", true, nil, true},
		{head + "1 a//b\x00", true, nil, true},
		{head + "NaN a\x00", true, nil, true},
		{head + "a\x00", true, nil, true},
		{head + "1 a\x00cut", true, nil, true},
	} {
		marked, got, err := readChanged(strings.NewReader(c.out), "d")
		if marked != c.marked || (err != nil) != c.bad || !slices.Equal(got, c.want) {
			t.Errorf("%q: %v %v %v; want marked %v, %v, failure %v", c.out, marked, got, err, c.marked, c.want, c.bad)
		}
	}
}
