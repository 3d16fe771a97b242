package watch

import (
	"bytes"
	"errors"
	"io"
	"math/rand"
	"os/exec"
	"reflect"
	"strings"
	"testing"
	"testing/iotest"

	"sshfsm/internal/namespace"
)

const root = "/srv/tree"

// hostile are names that a line-, space- or escape-based format would
// get wrong.
var hostile = []string{
	"plain", "with space", " leading", "trailing ", "new\nline", "\n", "tab\there",
	`back\slash`, `\n`, "non-utf8-\xff\xfe", "CREATE /srv/tree/x", "\x01ctl", "ünïcödé",
	"'", `"`, "$(id)", "-", "...", "a,b", "ISDIR",
}

func record(events, path string) string { return events + " " + path + "\x00" }

// parse feeds out to a parser through r and returns what it emitted.
func parse(t *testing.T, r io.Reader) ([]namespace.Change, *parser, error) {
	t.Helper()
	var got []namespace.Change
	p := newParser(root, func(c namespace.Change) { got = append(got, c) })
	err := p.read(r)
	return got, p, err
}

func TestParseHostileNames(t *testing.T) {
	var out strings.Builder
	out.WriteString("motd from a login script\n" + marker + "\n")
	var want []namespace.Change
	for _, name := range hostile {
		out.WriteString(record("CREATE", root+"/"+name))
		out.WriteString(record("MODIFY", root+"/dir with space/"+name))
		out.WriteString(record("DELETE,ISDIR", root+"/"+name))
		want = append(want,
			namespace.Change{Path: name, Kind: namespace.ChangeCreated},
			namespace.Change{Path: "dir with space/" + name, Kind: namespace.ChangeData},
			namespace.Change{Path: name, Kind: namespace.ChangeRemoved, Dir: true})
	}
	readers := map[string]func(string) io.Reader{
		"whole":    func(s string) io.Reader { return strings.NewReader(s) },
		"one byte": func(s string) io.Reader { return iotest.OneByteReader(strings.NewReader(s)) },
		"random":   func(s string) io.Reader { return &chunkReader{data: []byte(s), rnd: rand.New(rand.NewSource(1))} },
	}
	for name, mk := range readers {
		got, p, err := parse(t, mk(out.String()))
		if err != nil || p.bad != 0 {
			t.Fatalf("%s: err %v, %d bad records", name, err, p.bad)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s reads:\ngot  %+v\nwant %+v", name, got, want)
		}
	}
}

// chunkReader returns data in pieces of random sizes.
type chunkReader struct {
	data []byte
	rnd  *rand.Rand
}

func (c *chunkReader) Read(p []byte) (int, error) {
	if len(c.data) == 0 {
		return 0, io.EOF
	}
	n := min(len(p), len(c.data), 1+c.rnd.Intn(40))
	copy(p, c.data[:n])
	c.data = c.data[n:]
	return n, nil
}

func TestParseEvents(t *testing.T) {
	cases := []struct {
		rec  string
		want []namespace.Change
	}{
		{record("CREATE", root+"/a"), []namespace.Change{{Path: "a", Kind: namespace.ChangeCreated}}},
		{record("CREATE,ISDIR", root+"/d/e"), []namespace.Change{{Path: "d/e", Kind: namespace.ChangeCreated, Dir: true}}},
		{record("MOVED_TO", root+"/a"), []namespace.Change{{Path: "a", Kind: namespace.ChangeCreated}}},
		{record("DELETE", root+"/a"), []namespace.Change{{Path: "a", Kind: namespace.ChangeRemoved}}},
		{record("MOVED_FROM,ISDIR", root+"/a"), []namespace.Change{{Path: "a", Kind: namespace.ChangeRemoved, Dir: true}}},
		{record("MODIFY", root+"/a"), []namespace.Change{{Path: "a", Kind: namespace.ChangeData}}},
		{record("CLOSE_WRITE,CLOSE", root+"/a"), []namespace.Change{{Path: "a", Kind: namespace.ChangeData}}},
		{record("ATTRIB", root+"/a"), []namespace.Change{{Path: "a", Kind: namespace.ChangeAttr}}},
		{record("ATTRIB,ISDIR", root+"/"), []namespace.Change{{Path: "", Kind: namespace.ChangeAttr, Dir: true}}},
		{record("DELETE_SELF", root+"/d/"), []namespace.Change{{Path: "d", Kind: namespace.ChangeRemoved, Dir: true}}},
		{record("MOVE_SELF", root+"/d/"), []namespace.Change{{Path: "d", Kind: namespace.ChangeRemoved, Dir: true}}},
		{record("Q_OVERFLOW", ""), []namespace.Change{{Kind: namespace.ChangeTree, Dir: true}}},
		{record("UNMOUNT", root+"/mnt/"), []namespace.Change{{Path: "mnt", Kind: namespace.ChangeTree, Dir: true}}},
		{record("SOMETHING_NEW", root+"/a"), []namespace.Change{{Path: "a", Kind: namespace.ChangeTree, Dir: true}}},
		{record("IGNORED", root+"/d/"), nil},
		{record("CLOSE_NOWRITE,CLOSE", root+"/a"), nil},
	}
	for _, c := range cases {
		got, p, err := parse(t, strings.NewReader(marker+"\n"+c.rec))
		if err != nil || p.bad != 0 || !reflect.DeepEqual(got, c.want) {
			t.Errorf("%q: got %+v (err %v, %d bad), want %+v", c.rec, got, err, p.bad, c.want)
		}
	}
}

// A record that does not parse is a lost event: anything may have changed.
func TestParseGarbage(t *testing.T) {
	lost := namespace.Change{Kind: namespace.ChangeTree, Dir: true}
	garbage := []string{
		"no-space-at-all\x00",
		" " + root + "/a\x00",                   // no events
		"create " + root + "/a\x00",             // not inotifywait's spelling
		"CREATE,,MODIFY " + root + "/a\x00",     // empty event name
		"CREATE " + root + "\x00",               // the root without its '/'
		"CREATE /srv/treehouse/a\x00",           // outside, sharing a prefix
		"CREATE /etc/passwd\x00",                // outside
		"CREATE " + root + "/../etc/passwd\x00", // escapes
		"CREATE " + root + "/a/./b\x00",
		"CREATE " + root + "//a\x00",
		"CREATE relative/a\x00",
		"CREATE " + root + "/" + strings.Repeat("n", 300) + "\x00", // a name longer than NAME_MAX
	}
	for _, g := range garbage {
		got, p, err := parse(t, strings.NewReader(marker+"\n"+g+record("CREATE", root+"/next")))
		want := []namespace.Change{lost, {Path: "next", Kind: namespace.ChangeCreated}}
		if err != nil || p.bad != 1 || !reflect.DeepEqual(got, want) {
			t.Errorf("%q: got %+v (err %v, %d bad), want %+v", g, got, err, p.bad, want)
		}
	}
}

func TestParseOversizedRecord(t *testing.T) {
	huge := record("CREATE", root+"/"+strings.Repeat("x/", maxRecord))
	in := marker + "\n" + huge + record("DELETE", root+"/after")
	got, p, err := parse(t, iotest.HalfReader(strings.NewReader(in)))
	want := []namespace.Change{{Kind: namespace.ChangeTree, Dir: true}, {Path: "after", Kind: namespace.ChangeRemoved}}
	if err != nil || p.bad != 1 || !reflect.DeepEqual(got, want) {
		t.Fatalf("got %+v (err %v, %d bad), want %+v", got, err, p.bad, want)
	}
	if cap(p.buf) > maxRecord {
		t.Errorf("buffer grew to %d bytes", cap(p.buf))
	}
}

func TestParseMarker(t *testing.T) {
	// Without the marker nothing counts, however much looks like records.
	got, _, err := parse(t, strings.NewReader("This service allows sftp connections only.\n"+record("CREATE", root+"/a")))
	if !errors.Is(err, errNoMarker) || len(got) != 0 {
		t.Errorf("no marker: %+v, %v", got, err)
	}
	// The marker must be a whole line.
	got, _, err = parse(t, strings.NewReader("x"+marker+"\n"+record("CREATE", root+"/a")))
	if !errors.Is(err, errNoMarker) || len(got) != 0 {
		t.Errorf("marker inside a line: %+v, %v", got, err)
	}
	// An endless line before the marker is dropped, not kept.
	noise := bytes.Repeat([]byte{'#'}, 3*maxRecord)
	got, p, err := parse(t, io.MultiReader(bytes.NewReader(noise), strings.NewReader("\n"+marker+"\n"+record("CREATE", root+"/a"))))
	if err != nil || len(got) != 1 || cap(p.buf) > maxRecord {
		t.Errorf("long noise: %+v, %v, buffer %d", got, err, cap(p.buf))
	}
}

// The watched directory itself going away ends the read: inotifywait would
// go on watching nothing.
func TestParseRootGone(t *testing.T) {
	for _, ev := range []string{"DELETE_SELF", "MOVE_SELF", "UNMOUNT"} {
		in := marker + "\n" + record("DELETE", root+"/a") + record(ev, root+"/") + record("CREATE", root+"/late")
		got, _, err := parse(t, strings.NewReader(in))
		want := []namespace.Change{{Path: "a", Kind: namespace.ChangeRemoved}, {Kind: namespace.ChangeTree, Dir: true}}
		if !errors.Is(err, errGone) || !reflect.DeepEqual(got, want) {
			t.Errorf("%s: got %+v, %v", ev, got, err)
		}
	}
}

func TestParseReadError(t *testing.T) {
	boom := errors.New("boom")
	_, _, err := parse(t, io.MultiReader(strings.NewReader(marker+"\n"), iotest.ErrReader(boom)))
	if !errors.Is(err, boom) {
		t.Errorf("got %v", err)
	}
}

// quote must give sh back every string as one word.
func TestQuote(t *testing.T) {
	for _, s := range hostile {
		out, err := exec.Command("sh", "-c", "printf '%s' "+quote(s)).Output()
		if err != nil || string(out) != s {
			t.Errorf("%q came back as %q (%v)", s, out, err)
		}
	}
}

// The probe's file system line: GNU and BusyBox stat print the magic in
// hex without 0x; anything else, or no line, is no network file system.
func TestNetworkFSOf(t *testing.T) {
	for out, want := range map[string]string{
		marker + "\nsshfsm-fs bd00bd0\n": "Lustre",
		"sshfsm-fs 6969":                 "NFS",
		"motd\nsshfsm-fs 65735546\n":     "FUSE",
		"sshfsm-fs 0x47504653\n":         "GPFS",
		"sshfsm-fs ef53\n":               "", // ext4
		"sshfsm-fs 58465342\n":           "", // XFS
		"sshfsm-fs UNKNOWN\n":            "",
		marker + "\n":                    "",
		"fs 6969\n":                      "",
	} {
		if got := networkFSOf(out); got != want {
			t.Errorf("networkFSOf(%q) = %q, want %q", out, got, want)
		}
	}
}
