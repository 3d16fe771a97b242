package transport

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strings"
	"syscall"
	"testing"
	"testing/iotest"

	"sshfsm/internal/namespace"
	"sshfsm/internal/remote"
)

// treeReport is what a tree listing reported: each directory's entries
// and the order of the reports.
type treeReport struct {
	dirs  map[string][]remote.DirEntry
	order []string
	twice []string // directories reported more than once
}

func (r *treeReport) fn(dir string, ents []remote.DirEntry) {
	if r.dirs == nil {
		r.dirs = map[string][]remote.DirEntry{}
	}
	if _, dup := r.dirs[dir]; dup {
		r.twice = append(r.twice, dir)
	}
	r.dirs[dir] = append([]remote.DirEntry(nil), ents...)
	r.order = append(r.order, dir)
}

// parseTree runs the tree parser on stream as listTree does: the
// directories still open are reported only when the stream ended well.
func parseTree(base string, depth, max int, r io.Reader) (*treeReport, error) {
	rep := &treeReport{}
	p := newTreeParser(base, depth, max, rep.fn)
	err := p.read(r)
	if err == nil {
		p.finish()
	}
	return rep, err
}

// FuzzTreeListing feeds the parser of find's output (a login script's
// noise, the marker, then records and error messages) with anything a
// server may send. It must never panic, fail only with its own errors,
// report each directory once, at most depth levels down, with names that
// are one valid file name each and types it knows, read the same from a
// stream delivered a byte at a time, and read back the same listings from
// find's output for them.
func FuzzTreeListing(f *testing.F) {
	rec := func(y, p string) string {
		return "\x01" + y + " 755 0 1 2 10.5 20.25 2049 1234 1 30.1234567890 " + p + "\x00"
	}
	f.Add([]byte(""), []byte(rec("d", "a")+rec("f", "a/1")+rec("d", "a/b")+rec("f", "a/b/2")+rec("f", "c")), false, uint8(2), uint16(100))
	f.Add([]byte("motd\r\n"), []byte(rec("d", "a")+"find: './a': Permission denied\n"+rec("f", "b")), true, uint8(2), uint16(100))
	f.Add([]byte(""), []byte(rec("d", "sp ace\nnl")+rec("f", "sp ace\nnl/\x01 x\\")+rec("D", "door")), false, uint8(1), uint16(2))
	f.Add([]byte(""), []byte("\x01f 644 3 0 0 1.0 2.0 0 0 0 -2.5 no-ino\x00\x01f 644 3 0 0 1.0 2.0 18446744073709551615 18446744073709551615 2 -2.500000000 big\x00"), false, uint8(1), uint16(9))
	f.Add([]byte(""), []byte("\x01f 644 3 0 0 1.0 2.0 1 2 1 3.x bad-ctime\x00"), false, uint8(1), uint16(9))
	f.Fuzz(func(t *testing.T, noise, body []byte, based bool, depth uint8, limit uint16) {
		base := ""
		if based {
			base = "top/dir"
		}
		d, m := int(depth%8), int(limit)
		stream := string(noise) + treeMarker + "\n" + string(body)
		rep, err := parseTree(base, d, m, strings.NewReader(stream))
		if err != nil && !errors.Is(err, errTreeRecord) && !errors.Is(err, errTreeOrder) &&
			!errors.Is(err, remote.ErrTreeTruncated) && !errors.Is(err, io.ErrUnexpectedEOF) {
			t.Fatalf("unexpected error %v", err)
		}
		checkTreeReport(t, rep, base, d, m)

		slow, serr := parseTree(base, d, m, iotest.OneByteReader(strings.NewReader(stream)))
		if fmt.Sprint(serr) != fmt.Sprint(err) || !reflect.DeepEqual(slow, rep) {
			t.Fatalf("read a byte at a time: %v %+v\nwhole: %v %+v", serr, slow, err, rep)
		}
		if err != nil {
			return
		}
		again, err := parseTree(base, d, treeMaxEntries, strings.NewReader(findOutput(rep, base, d)))
		if err != nil || !reflect.DeepEqual(again.dirs, rep.dirs) {
			t.Fatalf("find's output for the listings reads back as %v %+v\nwant %+v", err, again.dirs, rep.dirs)
		}
	})
}

// checkTreeReport checks what holds for every report, whatever the stream.
func checkTreeReport(t *testing.T, rep *treeReport, base string, depth, max int) {
	t.Helper()
	if len(rep.twice) > 0 {
		t.Fatalf("reported more than once: %q", rep.twice)
	}
	n := 0
	for dir, ents := range rep.dirs {
		rel, ok := treeRel(base, dir)
		if !ok || namespace.ValidPath(rel) != nil {
			t.Fatalf("reported directory %q outside %q or not a clean path", dir, base)
		}
		if rel != "" && strings.Count(rel, "/") >= depth {
			t.Fatalf("reported %q, deeper than %d", rel, depth)
		}
		for _, e := range ents {
			if err := namespace.ValidName(e.Name); err != nil {
				t.Fatalf("in %q: %v", dir, err)
			}
			if _, ok := treeLetter(e.Attr.Mode); !ok {
				t.Fatalf("%q/%q: mode %o", dir, e.Name, e.Attr.Mode)
			}
		}
		n += len(ents)
	}
	if n > max {
		t.Fatalf("%d entries reported, at most %d allowed", n, max)
	}
}

// treeRel is dir relative to base.
func treeRel(base, dir string) (string, bool) {
	switch {
	case dir == base:
		return "", true
	case base == "":
		return dir, true
	}
	return strings.CutPrefix(dir, base+"/")
}

// treeLetter is find's %y letter for mode's type.
func treeLetter(mode uint32) (byte, bool) {
	for y, bits := range treeTypes {
		if mode&syscall.S_IFMT == bits {
			return y, true
		}
	}
	return 0, false
}

// findOutput is the stream GNU find would print for a tree holding the
// reported listings: each listed directory's entries, every directory
// listed recursively after its own record, and a directory that was not
// reported (find could not read it) followed by find's message.
func findOutput(rep *treeReport, base string, depth int) string {
	var b strings.Builder
	b.WriteString(treeMarker + "\n")
	below := map[string]bool{} // relative directories with a reported one at or below
	for dir := range rep.dirs {
		rel, _ := treeRel(base, dir)
		for {
			below[rel] = true
			i := strings.LastIndexByte(rel, '/')
			if rel == "" {
				break
			}
			rel = rel[:max(i, 0)]
		}
	}
	var walk func(rel string)
	walk = func(rel string) {
		ents, listed := rep.dirs[joinTree(base, rel)]
		if !listed {
			b.WriteString("find: cannot read\n")
			for sub := range below {
				if sub != rel && parentRel(sub) == rel {
					fmt.Fprintf(&b, "\x01d 755 0 0 0 0.0 0.0 0 0 0 0.0 %s\x00", sub)
					walk(sub)
				}
			}
			return
		}
		for _, e := range ents {
			p := joinTree(rel, e.Name)
			y, _ := treeLetter(e.Attr.Mode)
			fmt.Fprintf(&b, "\x01%c %o %d %d %d %d.5 %d %d %d %d %d.%09d0 %s\x00", y, e.Attr.Mode&07777, e.Attr.Size,
				e.Attr.UID, e.Attr.GID, e.Attr.Atime.Unix(), e.Attr.Mtime.Unix(), e.Attr.Dev, e.Attr.Ino,
				e.Attr.Nlink, e.Attr.Ctime.Unix(), e.Attr.Ctime.Nanosecond(), p)
			if y == 'd' && strings.Count(p, "/") < depth {
				walk(p)
			}
		}
	}
	walk("")
	return b.String()
}

func parentRel(rel string) string {
	if i := strings.LastIndexByte(rel, '/'); i >= 0 {
		return rel[:i]
	}
	return ""
}

// FuzzSHA256Output: sha256sum's line gives the digest it prints, and
// anything else is an error.
func FuzzSHA256Output(f *testing.F) {
	f.Add([]byte("e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855  -\n"))
	f.Add([]byte("sha256sum: -: Is a directory\n"))
	f.Add([]byte(""))
	f.Fuzz(func(t *testing.T, out []byte) {
		sum, err := parseSHA256(out)
		if err != nil {
			if sum != ([32]byte{}) {
				t.Fatalf("error %v with a digest %x", err, sum)
			}
			return
		}
		first := bytes.Fields(out)[0]
		if !strings.EqualFold(fmt.Sprintf("%x", sum), string(first)) {
			t.Fatalf("digest %x from %q", sum, out)
		}
		again, err := parseSHA256([]byte(fmt.Sprintf("%x  -\n", sum)))
		if err != nil || again != sum {
			t.Fatalf("round trip: %x %v, want %x", again, err, sum)
		}
	})
}
