package config

import (
	"reflect"
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

// Every subcommand is documented in --help, the man page and
// docs/options.md.
func TestSubcommandsDocumented(t *testing.T) {
	for _, s := range Subcommands() {
		if !strings.Contains(Help(), "       "+s.Usage()+"\n") || !strings.Contains(Help(), "\n    "+s.Name+" ") {
			t.Errorf("--help lacks %s", s.Name)
		}
		if !strings.Contains(ManPage(), ".B sshfsm "+s.Name+"\n") || !strings.Contains(ManPage(), roff(s.Help)) {
			t.Errorf("man page lacks %s", s.Name)
		}
		if !strings.Contains(OptionsDoc(), "| `"+s.Usage()+"` |") {
			t.Errorf("docs/options.md lacks %s", s.Name)
		}
		for _, sw := range s.Switches {
			if !strings.Contains(SubcommandHelp(s.Name), strings.Join(sw.Names, ", ")) {
				t.Errorf("sshfsm %s --help lacks %v", s.Name, sw.Names)
			}
		}
	}
}

func TestParseWarm(t *testing.T) {
	cases := []struct {
		args []string
		want WarmArgs
		err  string
	}{
		{[]string{"/m/a"}, WarmArgs{Jobs: 16, Paths: []string{"/m/a"}}, ""},
		{[]string{"--content", "a", "b"}, WarmArgs{Content: true, Jobs: 16, Paths: []string{"a", "b"}}, ""},
		{[]string{"--content", "--max-size", "10M", "a"}, WarmArgs{Content: true, MaxSize: 10 << 20, Jobs: 16, Paths: []string{"a"}}, ""},
		{[]string{"--content", "--max-size=2k", "--jobs=4", "a"}, WarmArgs{Content: true, MaxSize: 2048, Jobs: 4, Paths: []string{"a"}}, ""},
		{[]string{"--", "--content"}, WarmArgs{Jobs: 16, Paths: []string{"--content"}}, ""},
		{[]string{"-h"}, WarmArgs{Help: true, Jobs: 16}, ""},
		{nil, WarmArgs{}, "sshfsm warm needs at least one path"},
		{[]string{"--bogus", "a"}, WarmArgs{}, "unknown option --bogus (see sshfsm warm --help)"},
		{[]string{"--max-size", "1G", "a"}, WarmArgs{}, "--max-size applies to --content"},
		{[]string{"--content", "--max-size", "lots", "a"}, WarmArgs{}, `bad value "lots" for --max-size`},
		{[]string{"--content", "--max-size", "0", "a"}, WarmArgs{}, `bad value "0" for --max-size`},
		{[]string{"--jobs", "0", "a"}, WarmArgs{}, `bad value "0" for --jobs: must be between 1 and 256`},
		{[]string{"a", "--jobs"}, WarmArgs{}, "option --jobs needs an argument"},
	}
	for _, tc := range cases {
		got, err := ParseWarm(tc.args)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) || CodeOf(err) != ExitUsage {
				t.Errorf("%q: %v, want usage error %q", tc.args, err, tc.err)
			}
			continue
		}
		if err != nil || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%q: %+v, %v; want %+v", tc.args, got, err, tc.want)
		}
	}
}
