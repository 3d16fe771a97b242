package main

import (
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"sshfsm/internal/control"
)

func TestPrintable(t *testing.T) {
	for in, want := range map[string]string{
		"":                           "",
		"plain /path with space":     "plain /path with space",
		"ünïcödé 日本":                 "ünïcödé 日本",
		"\x1b[2J\x1b]0;title\x07":    `\x1b[2J\x1b]0;title\a`,
		"new\nline\ttab\rcr":         `new\nline\ttab\rcr`,
		`back\slash`:                 `back\\slash`,
		"bad\xff\xfeutf8":            `bad\xff\xfeutf8`,
		"c1\u009b31m":                `c1\u009b31m`,
		"bidi\u202eevil":             `bidi\u202eevil`,
		"del\x7f":                    `del\x7f`,
		`quotes "stay" 'as is'`:      `quotes "stay" 'as is'`,
		"replacement \ufffd is text": "replacement \ufffd is text",
	} {
		if got := printable(in); got != want {
			t.Errorf("printable(%q) = %q, want %q", in, got, want)
		}
	}
}

// terminalSafe fails unless s is UTF-8 holding only printable runes,
// newlines and spaces.
func terminalSafe(t *testing.T, s string) {
	t.Helper()
	if !utf8.ValidString(s) {
		t.Fatalf("the output is not UTF-8: %q", s)
	}
	for i, r := range s {
		if r != '\n' && !unicode.IsPrint(r) {
			t.Fatalf("byte %d of the output is %q:\n%s", i, r, s)
		}
	}
}

// Whatever the server put in the strings of a status, writeStatus prints
// them escaped.
func TestWriteStatusEscapes(t *testing.T) {
	evil := "\x1b]0;owned\x07\x1b[2J\n\xff\u009b"
	st := &control.Status{
		Mount: control.Mount{Mountpoint: "/mnt/" + evil, Program: evil, Options: []string{evil}},
		Meta:  &control.Meta{Mode: evil, WriteError: evil, SnapshotAgeSeconds: -1, LastWriteSeconds: -1},
		Disk:  &control.Disk{Dir: evil},
		Branches: []control.Branch{{Kind: evil, Name: evil, Dir: evil, Hosts: []control.Host{
			{Name: evil, State: evil, Detail: evil, Watch: evil, WatchDetail: evil, Requests: map[string]uint64{evil: 1}},
			{Name: "b", State: control.StateUp, Detail: evil, Watch: control.WatchOff, WatchDetail: evil},
		}}},
	}
	var b strings.Builder
	writeStatus(&b, st)
	terminalSafe(t, b.String())
	if !strings.Contains(b.String(), `\x1b]0;owned\a\x1b[2J\n\xff\u009b`) {
		t.Errorf("the escaped text is not shown:\n%s", b.String())
	}
}
