package idmap

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var _ interface {
	LocalUID(uint32) (uint32, bool)
	LocalGID(uint32) (uint32, bool)
	RemoteUID(uint32) (uint32, bool)
	RemoteGID(uint32) (uint32, bool)
} = (*Map)(nil)

func names() Resolver {
	table := map[string]uint32{"alice": 1000, "bob": 1001, "staff": 50}
	look := func(name string) (uint32, error) {
		if id, ok := table[name]; ok {
			return id, nil
		}
		return 0, errors.New("unknown")
	}
	return Resolver{LookupUser: look, LookupGroup: look}
}

func TestUser(t *testing.T) {
	m := User(500, 600, 1000, 1001)
	cases := []struct {
		name   string
		f      func(uint32) (uint32, bool)
		in     uint32
		want   uint32
		wantOK bool
	}{
		{"uid to local", m.LocalUID, 500, 1000, true},
		{"gid to local", m.LocalGID, 600, 1001, true},
		{"uid to remote", m.RemoteUID, 1000, 500, true},
		{"gid to remote", m.RemoteGID, 1001, 600, true},
		{"other uid unchanged", m.LocalUID, 7, 7, false},
		{"other local uid unchanged", m.RemoteUID, 8, 8, false},
	}
	for _, c := range cases {
		got, ok := c.f(c.in)
		if ok != c.wantOK || (ok && got != c.want) || (!ok && c.in != c.want) {
			t.Errorf("%s(%d) = %d, %v; want %d, %v", c.name, c.in, got, ok, c.want, c.wantOK)
		}
	}
}

func writeFile(t *testing.T, text string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "map")
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestFiles(t *testing.T) {
	uids := writeFile(t, "# users\nalice:2000\n\n bob : 2001 \n")
	gids := writeFile(t, "staff:3000\n")
	for _, ignore := range []bool{false, true} {
		m, err := Files(FileOptions{UIDFile: uids, GIDFile: gids, Ignore: ignore, Names: names()})
		if err != nil {
			t.Fatal(err)
		}
		check := func(what string, got uint32, ok bool, want uint32, wantOK bool) {
			t.Helper()
			if got != want || ok != wantOK {
				t.Errorf("ignore=%v %s = %d, %v; want %d, %v", ignore, what, got, ok, want, wantOK)
			}
		}
		u, ok := m.LocalUID(2000)
		check("LocalUID(2000)", u, ok, 1000, true)
		u, ok = m.LocalUID(2001)
		check("LocalUID(2001)", u, ok, 1001, true)
		u, ok = m.RemoteUID(1001)
		check("RemoteUID(1001)", u, ok, 2001, true)
		g, ok := m.LocalGID(3000)
		check("LocalGID(3000)", g, ok, 50, true)
		g, ok = m.RemoteGID(50)
		check("RemoteGID(50)", g, ok, 3000, true)
		u, ok = m.RemoteUID(4242)
		check("RemoteUID(unmapped)", u, ok, 0, false)
		u, ok = m.LocalUID(9)
		if ignore {
			check("LocalUID(unmapped)", u, ok, 9, false)
		} else {
			check("LocalUID(unmapped)", u, ok, Nobody, true)
		}
	}
}

func TestFileErrors(t *testing.T) {
	cases := []struct{ text, want string }{
		{"alice\n", "line 1: expected user-name:remote-id"},
		{"alice:x\n", `line 1: bad id "x"`},
		{"\nmallory:5\n", `line 2: unknown local user "mallory"`},
		{":5\n", "line 1: expected user-name:remote-id"},
		{"alice:99999999999\n", "line 1: bad id"},
	}
	for _, c := range cases {
		p := writeFile(t, c.text)
		_, err := Files(FileOptions{UIDFile: p, Names: names()})
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), p) {
			t.Errorf("%q: error %v, want one containing %q and the path", c.text, err, c.want)
		}
	}
	if _, err := Files(FileOptions{GIDFile: "/nonexistent/gids", Names: names()}); err == nil {
		t.Error("missing gidfile: no error")
	}
}

func TestSystemNames(t *testing.T) {
	r := SystemNames()
	if id, err := r.LookupUser("root"); err != nil || id != 0 {
		t.Errorf("LookupUser(root) = %d, %v", id, err)
	}
	if id, err := r.LookupGroup("4711"); err != nil || id != 4711 {
		t.Errorf("LookupGroup(4711) = %d, %v", id, err)
	}
	if _, err := r.LookupUser("no such user here"); err == nil {
		t.Error("LookupUser of unknown name: no error")
	}
}
