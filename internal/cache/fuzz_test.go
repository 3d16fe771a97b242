package cache

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"log/slog"
	"slices"
	"testing"
	"time"

	"sshfsm/internal/namespace"
	"sshfsm/internal/remote"
)

// frameSnapshot wraps body in a snapshot file's header and trailer, with
// the right length and checksum: the decoder then reads body itself.
func frameSnapshot(body []byte) []byte {
	b := append([]byte(snapMagic), 0, 0, 0, 0)
	binary.LittleEndian.PutUint32(b[len(snapMagic):], snapVersion)
	b = append(b, body...)
	b = binary.LittleEndian.AppendUint64(b, uint64(len(body)))
	return binary.LittleEndian.AppendUint32(b, crc32.Checksum(b, castagnoli))
}

// FuzzSnapshot decodes anything as a snapshot file, and anything as the
// body of a file whose length and checksum hold (framed). A snapshot
// decodes or is refused whole; one that decodes names only directories at
// clean paths, once each, and in each valid, distinct names; and the
// cache that loads it writes a snapshot that decodes to the same listings.
func FuzzSnapshot(f *testing.F) {
	f.Add([]byte("SSHFSMMD\x01\x00\x00\x00"), false)
	f.Add([]byte{0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01}, true)
	f.Fuzz(func(t *testing.T, data []byte, framed bool) {
		if framed {
			data = frameSnapshot(data)
		}
		s, err := decodeSnapshot(data)
		if err != nil {
			if s != nil {
				t.Fatalf("error %v with a snapshot", err)
			}
			return
		}
		checkSnapshot(t, s)
		again, err := decodeSnapshot(reencode(s))
		if err != nil {
			t.Fatalf("the snapshot written after loading one does not decode: %v", err)
		}
		if got, want := describeSnapshot(again), describeSnapshot(s); got != want {
			t.Fatalf("written again it reads\n%s\nwant\n%s", got, want)
		}
	})
}

// checkSnapshot checks what holds for every snapshot that decodes.
func checkSnapshot(t *testing.T, s *snapshot) {
	t.Helper()
	seen := map[string]bool{}
	n := 0
	for _, ld := range s.dirs {
		if ld.path != "" && namespace.ValidPath(ld.path) != nil || seen[ld.path] {
			t.Fatalf("directory %q: not a clean path, or twice", ld.path)
		}
		seen[ld.path] = true
		if len(ld.l.order) != len(ld.l.names) {
			t.Fatalf("%q: %d names in order, %d known", ld.path, len(ld.l.order), len(ld.l.names))
		}
		for _, name := range ld.l.order {
			if err := namespace.ValidName(name); err != nil {
				t.Fatalf("in %q: %v", ld.path, err)
			}
			if _, ok := ld.l.names[name]; !ok {
				t.Fatalf("in %q: %q listed, not known", ld.path, name)
			}
		}
		n += len(ld.l.order)
	}
	if n != s.entries {
		t.Fatalf("%d entries counted, %d listed", s.entries, n)
	}
}

// reencode loads s into a persisting cache and returns the snapshot it
// writes.
func reencode(s *snapshot) []byte {
	d := New(time.Minute, nil)
	p := &persistence{opts: PersistOptions{Mode: Auto, MaxBytes: 1 << 30}, maxEntries: 1 << 30,
		log: slog.New(slog.DiscardHandler)}
	d.p = p
	d.mu.Lock()
	d.installLocked(s)
	d.mu.Unlock()
	data, _, _, _ := d.encodeSnapshot(p)
	return data
}

// describeSnapshot prints a snapshot's root and listings, by path (the
// order of the directories is the writer's), each directory once as
// loading keeps it.
func describeSnapshot(s *snapshot) string {
	out := fmt.Sprintf("root %v %s\n", s.hasRoot, describeAttr(s.root))
	seen := map[string]bool{}
	var byPath []string
	for _, ld := range s.dirs {
		if seen[ld.path] {
			continue
		}
		seen[ld.path] = true
		d := fmt.Sprintf("%q used %d:", ld.path, ld.l.used)
		for _, name := range ld.l.order {
			e := ld.l.names[name]
			d += fmt.Sprintf(" %q stale=%v %s", name, e.stale, describeAttr(e.attr))
		}
		byPath = append(byPath, d)
	}
	slices.Sort(byPath)
	for _, d := range byPath {
		out += d + "\n"
	}
	return out
}

func describeAttr(a remote.Attr) string {
	tm := func(t time.Time) string {
		if t.IsZero() {
			return "zero"
		}
		return fmt.Sprintf("%d.%09d", t.Unix(), t.Nanosecond())
	}
	return fmt.Sprintf("%o %d %d %d %s %s %d %d %d %s", a.Mode, a.Size, a.UID, a.GID, tm(a.Atime), tm(a.Mtime),
		a.Dev, a.Ino, a.Nlink, tm(a.Ctime))
}
