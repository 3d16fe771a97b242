package config

import (
	"reflect"
	"strings"
	"testing"
)

func TestBranchForms(t *testing.T) {
	h := func(s ...string) []Endpoint { // "user@host" or "host"
		var es []Endpoint
		for _, x := range s {
			u, host, ok := strings.Cut(x, "@")
			if !ok {
				u, host = "", x
			}
			es = append(es, Endpoint{User: u, Host: host})
		}
		return es
	}
	cases := []struct {
		spec string
		want Branch
	}{
		{"h:", Branch{Hosts: h("h")}},
		{"u@h:/d", Branch{Hosts: h("u@h"), Dir: "/d"}},
		{"web=h:/srv", Branch{Name: "web", Hosts: h("h"), Dir: "/srv"}},
		{"web=h:", Branch{Name: "web", Hosts: h("h")}},
		{"my files=u@[::1]:x", Branch{Name: "my files", Hosts: h("u@::1"), Dir: "x"}},
		{"gw1,gw2:/lustre/p", Branch{Hosts: h("gw1", "gw2"), Dir: "/lustre/p"}},
		{"FOO=gw1,alice@gw2:/lustre/p/FOO", Branch{Name: "FOO", Hosts: h("gw1", "alice@gw2"), Dir: "/lustre/p/FOO"}},
		{"[::1],[::2]:/d", Branch{Hosts: h("::1", "::2"), Dir: "/d"}},
		{"u@[fe80::1%eth0],h2,[2001:db8::7]:d", Branch{Hosts: h("u@fe80::1%eth0", "h2", "2001:db8::7"), Dir: "d"}},
		{"X=[::1],b@[::1]:", Branch{Name: "X", Hosts: h("::1", "b@::1")}},
		{"h:/d:ro", Branch{Hosts: h("h"), Dir: "/d", ReadOnly: true}},
		{"h:/d:rw", Branch{Hosts: h("h"), Dir: "/d"}},
		{"gw1,gw2:/p:ro", Branch{Hosts: h("gw1", "gw2"), Dir: "/p", ReadOnly: true}},
		{"h::ro", Branch{Hosts: h("h"), ReadOnly: true}},
		{"h:ro", Branch{Hosts: h("h"), Dir: "ro"}},
		{"h:/d:RO", Branch{Hosts: h("h"), Dir: "/d:RO"}},
		// A trailing ':' ends the directory: the escape of ":ro", ":rw", ':'.
		{"h:/a:ro:", Branch{Hosts: h("h"), Dir: "/a:ro"}},
		{"h:/a:ro::ro", Branch{Hosts: h("h"), Dir: "/a:ro", ReadOnly: true}},
		{"h:/a:rw:", Branch{Hosts: h("h"), Dir: "/a:rw"}},
		{"h:/a:", Branch{Hosts: h("h"), Dir: "/a"}},
		{"h:/a::", Branch{Hosts: h("h"), Dir: "/a:"}},
		{"h::", Branch{Hosts: h("h")}},
		{"h:::", Branch{Hosts: h("h"), Dir: ":"}},
		// After the first ':', '=', ',', '@' and ':' belong to dir.
		{"h:/x=y", Branch{Hosts: h("h"), Dir: "/x=y"}},
		{"h:/a,b", Branch{Hosts: h("h"), Dir: "/a,b"}},
		{"h:/a@b:c", Branch{Hosts: h("h"), Dir: "/a@b:c"}},
		{"[::1]:a=b,c", Branch{Hosts: h("::1"), Dir: "a=b,c"}},
	}
	for _, tc := range cases {
		got, err := ParseBranch(tc.spec)
		tc.want.Spec = tc.spec
		if err != nil || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("ParseBranch(%q) = %+v, %v\nwant %+v", tc.spec, got, err, tc.want)
			continue
		}
		back, err := ParseBranch(got.Dest())
		back.Spec = got.Spec
		if err != nil || !reflect.DeepEqual(back, got) {
			t.Errorf("Dest %q of %q does not read back: %+v, %v", got.Dest(), tc.spec, back, err)
		}
	}
}

func TestBranchErrors(t *testing.T) {
	long := strings.Repeat("n", 256)
	cases := []struct{ spec, want string }{
		{"host", `bad remote directory "host": expected [user@]host:[dir] (for the remote home directory: host:)`},
		{"h1,h2", `expected [user@]host:[dir] (for the remote home directory: h1,h2:)`},
		{"web=host", `bad remote directory "web=host": expected NAME=[user@]host:[dir] (for the remote home directory: web=host:)`},
		{"web=./x", `expected NAME=[user@]host:[dir]`},
		{"=h:", `bad remote directory "=h:": empty graft name`},
		{".=h:", `graft name "." is not a file name`},
		{"..=h:/x", `graft name ".." is not a file name`},
		{long + "=h:", "graft name longer than 255 bytes"},
		{"a=b=c:/x", `bad remote directory "a=b=c:/x": invalid character in host name`},
		{"h1,,h2:/x", "empty host name"},
		{",h:/x", "empty host name"},
		{"h1,:/x", "empty host name"},
		{"web=:/x", "empty host name"},
		{"gw1,gw1:/x", "host gw1 is listed twice"},
		{"u@gw1,h,u@gw1:", "host u@gw1 is listed twice"},
		{"[::1],[::1]:x", "host [::1] is listed twice"},
		{"[::1]x,h:/d", `expected ':' after ']'`},
		{"h,[::1]x:d", `expected ':' after ']'`},
		{"h,x[::1]:d", "expected [user@]host:[dir]"},
		{"h,[::1:d", "missing ']' after IPv6 address"},
		{"h,[1.2.3.4]:", "not an IPv6 address inside [ ]"},
		{"h,-x:", "host name must not start with '-'"},
		{"h,@x:", "empty user name before '@'"},
		{"h,a b:", "invalid character in host name"},
	}
	for _, tc := range cases {
		_, err := ParseBranch(tc.spec)
		if err == nil || !strings.Contains(err.Error(), tc.want) || CodeOf(err) != ExitUsage {
			t.Errorf("ParseBranch(%q): %v (code %d), want exit 1 and %q", tc.spec, err, CodeOf(err), tc.want)
		}
	}
}

func TestSeveralBranches(t *testing.T) {
	c := parseOK(t, "a:", "-o", "create=mfs,require_all", "web=b:/x", "gw1,gw2:/p:ro", "/m")
	var got []string
	for _, b := range c.Branches {
		got = append(got, b.Dest())
	}
	want := []string{"a:", "web=b:/x", "gw1,gw2:/p:ro"}
	if !reflect.DeepEqual(got, want) || c.Mountpoint != "/m" {
		t.Errorf("branches %q at %q, want %q at /m", got, c.Mountpoint, want)
	}
	if c.Union.Create != "mfs" || !c.RequireAll {
		t.Errorf("create=%q require_all=%v", c.Union.Create, c.RequireAll)
	}
	if d := parseOK(t, "a:", "b:", "/m"); d.Union.Create != "epff" || d.RequireAll {
		t.Errorf("defaults: create=%q require_all=%v", d.Union.Create, d.RequireAll)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"web=a:", "web=b:/x", "/m"}, "graft name web is used twice (web=a: and web=b:/x)"},
		{[]string{"a:/x", "b:", "a:/x:ro", "/m"}, "the same directory is given twice (a:/x and a:/x:ro)"},
		{[]string{"-o", "create=lus", "a:", "/m"}, `bad value "lus" for option create: must be one of epff, ff, mfs, lfs, rand`},
		{[]string{"-o", "require_all=1", "a:", "/m"}, "option require_all takes no value"},
	} {
		_, err := Parse(tc.args)
		if err == nil || err.Error() != tc.want && !strings.HasPrefix(err.Error(), tc.want) || CodeOf(err) != ExitUsage {
			t.Errorf("%q: %v, want exit 1 and %q", tc.args, err, tc.want)
		}
	}
	// The same directory through another user or as a graft is another branch.
	parseOK(t, "a:/x", "u@a:/x", "g=a:/x", "/m")
}

func TestSSHArgsPerHost(t *testing.T) {
	c := parseOK(t, "-F", "/global", "-C", "-p", "2200", "-o", "ProxyJump=gw,max_conns=5", "h:", "/m")
	plain := Endpoint{Host: "h"}
	own := Endpoint{Host: "h", Port: 22, SSHConfig: "/own", SSHOptions: []string{"-oProxyJump=none"}, MaxConns: 9}
	if got, want := c.SSHArgs(plain), []string{"-F", "/global", "-C", "-oProxyJump=gw"}; !reflect.DeepEqual(got, want) {
		t.Errorf("global only: %q, want %q", got, want)
	}
	// ssh keeps the first value of a keyword: the host's own come first.
	if got, want := c.SSHArgs(own), []string{"-F", "/own", "-C", "-oProxyJump=none", "-oProxyJump=gw"}; !reflect.DeepEqual(got, want) {
		t.Errorf("per host: %q, want %q", got, want)
	}
	if c.PortOf(plain) != 2200 || c.PortOf(own) != 22 || c.MaxConnsOf(plain) != 5 || c.MaxConnsOf(own) != 9 {
		t.Errorf("port %d/%d, max_conns %d/%d", c.PortOf(plain), c.PortOf(own), c.MaxConnsOf(plain), c.MaxConnsOf(own))
	}
}

func TestFlagOpposites(t *testing.T) {
	for _, o := range Options() {
		if o.HasValue() || o.Not == "" {
			if !o.HasValue() && o.Default == "on" {
				t.Errorf("flag %s is on by default but declares no opposite (Not)", o.Name)
			}
			continue
		}
		not, ok := lookup(Options(), o.Not)
		if !ok || not.HasValue() || not.Not != o.Name {
			t.Errorf("flag %s: opposite %q is not a flag whose opposite is %s", o.Name, o.Not, o.Name)
		}
	}
}
