package watch

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math/rand"
	"reflect"
	"strings"
	"testing"
	"testing/iotest"

	"sshfsm/internal/namespace"
)

// parsed is what a parser made of one stream.
type parsed struct {
	changes []namespace.Change
	bad     int
	err     error
}

// parseSmall parses stream from r with a small buffer and record bound,
// so that short inputs reach the paths of long records.
func parseSmall(r io.Reader) parsed {
	var got parsed
	p := newParser(root, func(c namespace.Change) { got.changes = append(got.changes, c) })
	p.buf, p.limit = make([]byte, 0, 16), 64
	got.err = p.read(r)
	got.bad = p.bad
	return got
}

// FuzzWatchOutput feeds the parser of inotifywait's output (a login
// script's noise, the marker, records) with anything a server may send.
// It must never panic, end only with its own errors, report only paths
// inside the watched tree made of valid names, and make the same changes
// of a stream however its reads split it.
func FuzzWatchOutput(f *testing.F) {
	f.Add([]byte("motd\n"), []byte(record("CREATE", root+"/a")+record("DELETE,ISDIR", root+"/d/")+
		record("MODIFY", root+"/dir with space/new\nline")), int64(1))
	f.Add([]byte(""), []byte(record("Q_OVERFLOW", "")+record("CREATE", root+"/../etc")+"tail without NUL"), int64(2))
	f.Add([]byte(strings.Repeat("#", 200)+"\n"), []byte(record("CREATE", root+"/"+strings.Repeat("x/", 40))+
		record("DELETE_SELF", root+"/")+record("CREATE", root+"/late")), int64(3))
	f.Fuzz(func(t *testing.T, noise, body []byte, seed int64) {
		stream := string(noise) + "\n" + marker + "\n" + string(body)
		whole := parseSmall(strings.NewReader(stream))
		if whole.err != nil && !errors.Is(whole.err, errGone) && !errors.Is(whole.err, errNoMarker) {
			t.Fatalf("unexpected error %v", whole.err)
		}
		for _, c := range whole.changes {
			if err := namespace.ValidPath(c.Path); err != nil {
				t.Fatalf("change of %q: %v", c.Path, err)
			}
			if c.Kind < namespace.ChangeAttr || c.Kind > namespace.ChangeTree || c.Kind == namespace.ChangeTree && !c.Dir {
				t.Fatalf("change %+v", c)
			}
		}
		if errors.Is(whole.err, errGone) {
			last := whole.changes[len(whole.changes)-1]
			if last.Path != "" || last.Kind != namespace.ChangeTree {
				t.Fatalf("the tree gone, last change %+v", last)
			}
		}
		if n := bytes.Count(body, []byte{0}) + 1; len(whole.changes) > n {
			t.Fatalf("%d changes from %d records", len(whole.changes), n)
		}
		for name, r := range map[string]io.Reader{
			"one byte": iotest.OneByteReader(strings.NewReader(stream)),
			"random":   &chunkReader{data: []byte(stream), rnd: rand.New(rand.NewSource(seed))},
		} {
			got := parseSmall(r)
			if fmt.Sprint(got.err) != fmt.Sprint(whole.err) || got.bad != whole.bad ||
				!reflect.DeepEqual(got.changes, whole.changes) {
				t.Fatalf("%s reads: %+v\nwhole: %+v", name, got, whole)
			}
		}
	})
}

// FuzzWatchProbe: the probe's output names a known network file system,
// and only through the line that carries its tag.
func FuzzWatchProbe(f *testing.F) {
	f.Add(marker + "\nsshfsm-fs bd00bd0\n")
	f.Add("motd\nsshfsm-fs 0x65735546\n")
	f.Add("sshfsm-fs ef53")
	f.Fuzz(func(t *testing.T, out string) {
		name := networkFSOf(out)
		if name == "" {
			return
		}
		if !strings.Contains(out, fsTag) {
			t.Fatalf("%q read as %s without the tag", out, name)
		}
		found := false
		for _, n := range networkFS {
			found = found || n == name
		}
		if !found {
			t.Fatalf("%q read as unknown %q", out, name)
		}
	})
}
