package config

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

// FuzzConfigFile decodes anything as a config file. It must never panic;
// a file it refuses gets one usage error of one line naming the file; a
// file it takes gives at least one branch, each a branch the command line
// could give (its command-line form reads back the same), hosts within
// their bounds; and decoding is deterministic.
func FuzzConfigFile(f *testing.F) {
	f.Add([]byte(ExampleFile))
	f.Add([]byte("[[branch]]\nhost = \"u@[::1]\"\ndir = \"/a:ro\"\n"))
	f.Add([]byte("[options]\nx-systemd.automount = true\n[[branch]]\nname = \"G\"\nhosts = [\"a\", \"b\"]\nro = true\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		const shown = "work.toml"
		c := Defaults()
		err := decodeFile(c, data, shown, "/etc/sshfsm")
		again := Defaults()
		err2 := decodeFile(again, data, shown, "/etc/sshfsm")
		if errString(err) != errString(err2) || err == nil && !reflect.DeepEqual(c, again) {
			t.Fatalf("decoded twice: %v, then %v", err, err2)
		}
		if err != nil {
			var ce *Error
			if !errors.As(err, &ce) || ce.Code != ExitUsage || !strings.HasPrefix(ce.Msg, shown+":") ||
				strings.ContainsAny(ce.Msg, "\n\r") {
				t.Fatalf("error %q (%T)", err, err)
			}
			return
		}
		if len(c.Branches) == 0 {
			t.Fatal("no branch, no error")
		}
		if _, err := checkBranches(c.Branches, func(int) string { return "" }); err != nil {
			t.Fatal(err)
		}
		for _, b := range c.Branches {
			checkFileBranch(t, b)
		}
	})
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// checkFileBranch checks a branch of a config file against what the
// command line accepts.
func checkFileBranch(t *testing.T, b Branch) {
	t.Helper()
	back, err := ParseBranch(b.Dest())
	if err != nil {
		t.Fatalf("branch %+v: its command-line form %q: %v", b, b.Dest(), err)
	}
	if back.Name != b.Name || back.Dir != b.Dir || back.ReadOnly != b.ReadOnly || len(back.Hosts) != len(b.Hosts) {
		t.Fatalf("branch %+v reads back from %q as %+v", b, b.Dest(), back)
	}
	for i, e := range b.Hosts {
		if back.Hosts[i].Host != e.Host || back.Hosts[i].User != e.User {
			t.Fatalf("host %+v reads back as %+v", e, back.Hosts[i])
		}
		if e.Port < 0 || e.Port > 65535 || e.MaxConns < 0 || e.MaxConns > maxConnsLimit {
			t.Fatalf("host %+v", e)
		}
		for _, o := range e.SSHOptions {
			if !strings.HasPrefix(o, "-o") || !strings.Contains(o, "=") {
				t.Fatalf("host %s: ssh option %q", e.Host, o)
			}
		}
	}
}
