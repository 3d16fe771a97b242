package config

import (
	"strings"
	"testing"
)

func TestParseStatus(t *testing.T) {
	cases := []struct {
		args []string
		want StatusArgs
		err  string
	}{
		{nil, StatusArgs{}, ""},
		{[]string{"/mnt"}, StatusArgs{Mountpoint: "/mnt"}, ""},
		{[]string{"--json", "/mnt"}, StatusArgs{JSON: true, Mountpoint: "/mnt"}, ""},
		{[]string{"/mnt", "--json"}, StatusArgs{JSON: true, Mountpoint: "/mnt"}, ""},
		{[]string{"--", "-odd"}, StatusArgs{Mountpoint: "-odd"}, ""},
		{[]string{"-h", "a", "b"}, StatusArgs{Help: true}, ""},
		{[]string{"--help", "--bogus"}, StatusArgs{}, "unknown option --bogus (see sshfsm status --help)"},
		{[]string{"a", "b"}, StatusArgs{}, "sshfsm status takes at most one mountpoint, got 2 arguments"},
		{[]string{"-o", "ro"}, StatusArgs{}, "unknown option -o"},
	}
	for _, tc := range cases {
		got, err := ParseStatus(tc.args)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) || CodeOf(err) != ExitUsage {
				t.Errorf("%q: %v, want usage error %q", tc.args, err, tc.err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("%q: %+v, %v; want %+v", tc.args, got, err, tc.want)
		}
	}
}

// Every subcommand is documented in --help, the man page and the README
// reference.
func TestSubcommandsDocumented(t *testing.T) {
	for _, s := range Subcommands() {
		if !strings.Contains(Help(), "       "+s.Usage()+"\n") || !strings.Contains(Help(), "\n    "+s.Name+" ") {
			t.Errorf("--help lacks %s", s.Name)
		}
		if !strings.Contains(ManPage(), ".B sshfsm "+s.Name+"\n") || !strings.Contains(ManPage(), roff(s.Help)) {
			t.Errorf("man page lacks %s", s.Name)
		}
		if !strings.Contains(ReadmeOptions(), "| `"+s.Usage()+"` |") {
			t.Errorf("README reference lacks %s", s.Name)
		}
		for _, sw := range s.Switches {
			if !strings.Contains(SubcommandHelp(s.Name), strings.Join(sw.Names, ", ")) {
				t.Errorf("sshfsm %s --help lacks %v", s.Name, sw.Names)
			}
		}
	}
}
