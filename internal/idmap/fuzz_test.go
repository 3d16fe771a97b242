package idmap

import (
	"bytes"
	"fmt"
	"reflect"
	"strings"
	"testing"
)

type idPair struct{ local, remote uint32 }

// parsePairs parses data as a uidfile whose names are numbers or names()'s.
func parsePairs(data []byte) ([]idPair, error) {
	var got []idPair
	look := func(name string) (uint32, error) {
		if id, err := names().LookupUser(name); err == nil {
			return id, nil
		}
		return parseID(name)
	}
	err := parse(bytes.NewReader(data), "user", look, func(l, r uint32) { got = append(got, idPair{l, r}) })
	return got, err
}

// FuzzIDMapFile parses anything as a uidfile. It must never panic; an
// error names the line (one line of text) unless the file cannot be read;
// a file it takes maps each of its name:id lines, and the same mappings
// written back as a file read back the same.
func FuzzIDMapFile(f *testing.F) {
	f.Add([]byte("# users\nalice:500\n\n  bob : 501\r\n1002:7\n"))
	f.Add([]byte("alice:4294967296\n"))
	f.Add([]byte("nobody-here:1\n:2\nalice\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		got, err := parsePairs(data)
		if err != nil {
			msg := err.Error()
			if strings.ContainsAny(msg, "\n\r") || !strings.HasPrefix(msg, "line ") && msg != "bufio.Scanner: token too long" {
				t.Fatalf("error %q", msg)
			}
			return
		}
		var text strings.Builder
		for _, p := range got {
			fmt.Fprintf(&text, "%d:%d\n", p.local, p.remote)
		}
		again, err := parsePairs([]byte(text.String()))
		if err != nil || !reflect.DeepEqual(again, got) {
			t.Fatalf("written back as %q: %v %v, want %v", text.String(), again, err, got)
		}
	})
}
