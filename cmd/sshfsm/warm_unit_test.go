package main

import (
	"strings"
	"testing"
	"time"
)

// warmerAt is a warmer whose counters say what the arguments say.
func warmerAt(tty, reading bool, dirs, files, size, readFiles, wantFiles, readBytes, wantBytes int64) *warmer {
	w := &warmer{tty: tty}
	w.dirs.Store(dirs)
	w.files.Store(files)
	w.size.Store(size)
	w.readFiles.Store(readFiles)
	w.wantFiles.Store(wantFiles)
	w.readBytes.Store(readBytes)
	w.wantBytes.Store(wantBytes)
	w.reading.Store(reading)
	return w
}

// The progress of warm, with fixed counters and elapsed time: while
// listing, what was found; while reading, files and bytes read of those
// wanted, the mean rate since the start and the time left at that rate.
// On a terminal the line replaces the previous one, and while reading a
// bar of the bytes read stands in place of the prefix; otherwise each line
// ends with a newline.
func TestWarmProgressLine(t *testing.T) {
	const mi = 1 << 20
	for _, c := range []struct {
		name    string
		w       *warmer
		elapsed time.Duration
		line    string
		bar     string // on a terminal, while reading
	}{
		{"listing", warmerAt(false, false, 5, 120, 1536<<10, 0, 0, 0, 0), 3 * time.Second,
			"sshfsm warm: listing: 5 directories, 120 files (1.5 MiB)", ""},
		// 90 MiB in 30s is 3 MiB/s; the 810 MiB left take 270s.
		{"reading", warmerAt(false, true, 5, 120, 1000*mi, 7, 64, 90*mi, 900*mi), 30 * time.Second,
			"sshfsm warm: reading: 7/64 files, 90.0 MiB of 900.0 MiB, 3.0 MiB/s, 4m30s left", "[##..................]  10%"},
		// 3 MiB in 2s is 1.5 MiB/s; the 7 MiB left take 4.67s.
		{"seconds left", warmerAt(false, true, 1, 40, 10*mi, 12, 40, 3*mi, 10*mi), 2 * time.Second,
			"sshfsm warm: reading: 12/40 files, 3.0 MiB of 10.0 MiB, 1.5 MiB/s, 4s left", "[######..............]  30%"},
		// 1 GiB at 1 KiB/s: days left.
		{"days left", warmerAt(false, true, 1, 2, 1<<30, 0, 2, 100<<10, 1<<30), 100 * time.Second,
			"sshfsm warm: reading: 0/2 files, 100.0 KiB of 1.0 GiB, 1.0 KiB/s, 12d03h left", "[....................]   0%"},
		{"nothing read yet", warmerAt(false, true, 1, 2, 900*mi, 0, 2, 0, 900*mi), time.Second,
			"sshfsm warm: reading: 0/2 files, 0 B of 900.0 MiB, 0 B/s, - left", "[....................]   0%"},
		// Files that grew since the walk: more read than wanted, no ETA.
		{"grown", warmerAt(false, true, 1, 2, 1000, 2, 2, 3000, 1000), time.Second,
			"sshfsm warm: reading: 2/2 files, 2.9 KiB of 1000 B, 2.9 KiB/s, - left", "[####################] 100%"},
	} {
		if got := c.w.line(c.elapsed); got != c.line {
			t.Errorf("%s: line\n got %q\nwant %q", c.name, got, c.line)
		}
		if got, want := c.w.show(c.elapsed), c.line+"\n"; got != want {
			t.Errorf("%s: not on a terminal, shown\n got %q\nwant %q", c.name, got, want)
		}
		c.w.tty = true
		want := "\r\033[K" + c.line
		if c.bar != "" {
			want = "\r\033[K" + c.bar + " " + strings.TrimPrefix(c.line, "sshfsm warm: reading: ")
		}
		if got := c.w.show(c.elapsed); got != want {
			t.Errorf("%s: on a terminal, shown\n got %q\nwant %q", c.name, got, want)
		}
	}
}
