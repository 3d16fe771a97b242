package config

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

// writeConf writes a config file into a new directory and returns its path.
func writeConf(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "work.toml")
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestExampleFile decodes the example of the docs and checks all of it.
func TestExampleFile(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	p := writeConf(t, ExampleFile)
	c := parseOK(t, "--config", p)
	line := func(n int) string { return p + ":" + itoa(n) }
	want := []Branch{
		{Spec: line(24), Hosts: []Endpoint{{User: "alice", Host: "build", Port: 2222,
			SSHOptions: []string{"-oIdentityFile=" + home + "/.ssh/id_work"}}}, Dir: "/srv/src"},
		{Spec: line(28), Hosts: []Endpoint{{User: "bob", Host: "archive"}}, Dir: "/data/src", ReadOnly: true},
		{Spec: line(33), Name: "FOO", Hosts: []Endpoint{
			{Host: "gw1", MaxConns: 16, SSHOptions: []string{"-oProxyJump=bastion"}},
			{Host: "gw2", SSHConfig: home + "/.ssh/config.lustre"}}, Dir: "/lustre/project/FOO"},
	}
	if !reflect.DeepEqual(c.Branches, want) {
		t.Errorf("branches\n got %+v\nwant %+v", c.Branches, want)
	}
	abs, _ := filepath.Abs(p)
	checks := []struct {
		name      string
		got, want any
	}{
		{"file", c.File, abs},
		{"mountpoint", c.Mountpoint, home + "/work"},
		{"ssh_config", c.SSH.ConfigFile, home + "/.ssh/config.work"},
		{"create", c.Union.Create, "mfs"},
		{"max_conns", c.SSH.MaxConns, 8},
		{"cache_timeout", c.Cache.AttrTimeout, 30 * time.Second},
		{"require_all", c.RequireAll, false},
		{"ssh options", c.SSH.Options, []SSHOption{{"ServerAliveInterval", "15"}}},
		{"gw2 args", c.SSHArgs(c.Branches[2].Hosts[1]), []string{"-F", home + "/.ssh/config.lustre", "-oServerAliveInterval=15"}},
		{"gw1 args", c.SSHArgs(c.Branches[2].Hosts[0]), []string{"-F", home + "/.ssh/config.work", "-oProxyJump=bastion", "-oServerAliveInterval=15"}},
		{"gw1 conns", c.MaxConnsOf(c.Branches[2].Hosts[0]), 16},
		{"archive conns", c.MaxConnsOf(c.Branches[1].Hosts[0]), 8},
	}
	for _, ch := range checks {
		if !reflect.DeepEqual(ch.got, ch.want) {
			t.Errorf("%s = %v, want %v", ch.name, ch.got, ch.want)
		}
	}
}

// TestExampleUsesEveryKey: the docs' example shows every declared key.
func TestExampleUsesEveryKey(t *testing.T) {
	lines := keyLines([]byte(ExampleFile))
	for _, k := range FileKeys() {
		found := false
		for id := range lines {
			p := strings.Split(id, "\x00")
			switch k.Table {
			case TableTop:
				found = found || len(p) == 1 && p[0] == k.Name
			case TableHost:
				found = found || len(p) == 3 && p[0] == "host" && p[2] == k.Name
			case TableBranch:
				found = found || len(p) == 3 && p[0] == "branch" && p[2] == k.Name
			}
		}
		if !found {
			t.Errorf("the example does not show %s in %s", k.Name, k.Table.Heading())
		}
		if k.set == nil || !strings.HasSuffix(k.Help, ".") {
			t.Errorf("key %s: no setter or help is not a sentence", k.Name)
		}
	}
}

func TestFileErrors(t *testing.T) {
	t.Setenv("HOME", t.TempDir())
	const br = "[[branch]]\nhost = \"h\"\n"
	cases := []struct{ body, want string }{
		{"mountpont = \"x\"\n" + br, ":1: mountpont: unknown key (known here: mountpoint, ssh_config, options, host, branch)"},
		{br + "\n[[branch]]\nhots = [\"a\"]\n", ":5: branch[2].hots: unknown key (known here: name, host, hosts, dir, ro)"},
		{br + "[[branch]]\nhosts = \"gw1\"\n", `:4: branch[2].hosts: expected a list of strings, got "gw1"`},
		{"[[branch]]\nhosts = [\n  \"gw1\",\n  \"gw 2\",\n]\n", `:4: branch[1].hosts[2]: "gw 2": invalid character in host name`},
		{"[[branch]]\nhosts = [\"gw1\", 7]\n", `:2: branch[1].hosts[2]: expected a string, got the number 7`},
		{"[[branch]]\nhosts = []\n", `:2: branch[1].hosts: empty list`},
		{"[[branch]]\nhosts = [\"a\", \"a\"]\n", `:2: branch[1].hosts: host a is listed twice`},
		{"[[branch]]\nhost = \"h\"\nhosts = [\"a\"]\n", `:3: branch[1].hosts: give host or hosts, not both`},
		{"[[branch]]\ndir = \"/x\"\n", `:1: branch[1]: needs host or hosts`},
		{"[[branch]]\nhost = \"h\"\nport = 22\n", `:3: branch[1].port: unknown key`},
		{"[[branch]]\nhost = \"h\"\nro = \"yes\"\n", `:3: branch[1].ro: expected true or false, got "yes"`},
		{"[[branch]]\nhost = \"h\"\ndir = 1979-05-27\n", `:3: branch[1].dir: expected a string, got a date or time`},
		{"[[branch]]\nname = \"a/b\"\nhost = \"h\"\n", `:2: branch[1].name: graft name "a/b" must be one file name, without '/'`},
		{"[[branch]]\nname = \"x\"\nhost = \"h\"\n[[branch]]\nname = \"x\"\nhost = \"g\"\n",
			`:4: branch[2]: graft name x is used twice (branch[1] and branch[2])`},
		{"branch = [{host = \"h\"},\n  {hots = 1}]\n", `:2: branch[2].hots: unknown key`},
		{"branch = \"h\"\n", `:1: branch: expected [[branch]] tables, got "h"`},
		{"branch = [1]\n", `:1: branch[1]: expected a [[branch]] table, got the number 1`},
		{"mountpoint = \"x\"\n", `work.toml: no [[branch]] table: a mount needs at least one branch`},
		{"mountpoint = \"~bob/x\"\n" + br, `:1: mountpoint: "~bob/x": only ~/ is expanded; write the whole path`},
		{"[options]\nmax_conns = 0\n" + br, `:2: options.max_conns: bad value 0: must be between 1 and 64`},
		{"[options]\ntimeout = \"soon\"\n" + br, `:2: options.timeout: bad value "soon": not a number of seconds`},
		{"[options]\nbogus = 1\n" + br, `:2: options.bogus: unknown option (see sshfsm --help)`},
		{"[options]\nro = \"yes\"\n" + br, `:2: options.ro: expected true or false, got "yes"`},
		{"[options]\ntimeout = true\n" + br, `:2: options.timeout: expected a string or a number, got true`},
		{"[options]\nIdentityFile = \"\"\n" + br, `:2: options.IdentityFile: ssh option IdentityFile needs a value`},
		{"[options]\npassive = true\n" + br, `:2: options.passive: not supported: sshfsm starts ssh itself`},
		{"[options]\nhosts = [\"x\"]\n" + br, `:2: options.hosts: unknown option`},
		{"[options]\nro = true\nfoo.bar = 1\n" + br, `:3: options.foo.bar: unknown option`},
		{"[options]\nfsname = [\"x\"]\n" + br, `:2: options.fsname: expected a string, a number or true or false, got a list`},
		{"options = 3\n" + br, `:1: options: expected a table, got the number 3`},
		{"[host.other]\nport = 22\n" + br, `:1: host.other: no branch uses host other`},
		{"[host.h]\nport = 70000\n" + br, `:2: host.h.port: must be between 1 and 65535`},
		{"[host.h]\nport = 22.5\n" + br, `:2: host.h.port: expected an integer, got the number 22.5`},
		{"[host.h]\nmax_conns = 65\n" + br, `:2: host.h.max_conns: must be between 1 and 64`},
		{"[host.h]\nuser = \"\"\n" + br, `:2: host.h.user: bad user name ""`},
		{"[host.h]\nuser = \"u[\"\n" + br, `:2: host.h.user: bad user name "u["`},
		{"[host.h]\nhost = \"x\"\n" + br, `:2: host.h.host: unknown key (known here: user, port, identity_file, ssh_config, ssh_options, max_conns)`},
		{"[host.h]\nssh_options = { Bogus = 1 }\n" + br, `:2: host.h.ssh_options.Bogus: not an ssh_config(5) keyword`},
		{"[host.h]\nssh_options = { ProxyJump = \"\" }\n" + br, `:2: host.h.ssh_options.ProxyJump: needs a value`},
		{"[host.\"bob@h\"]\nport = 2\n" + br, `:1: host."bob@h": name the host without user@ and write user = "bob" inside`},
		{"[host.\"[::1]\"]\nport = 2\n[host.\"::1\"]\nport = 3\n" + br, `:3: host."::1": host ::1 has a table already (host."[::1]")`},
		{"[host]\nh = 1\n" + br, `:2: host.h: expected a table [host.h], got the number 1`},
		{"a = \n", `work.toml:1: unexpected character`},
		{br + "host = \"g\"\n", `work.toml:3: key host is already defined`},
	}
	for _, tc := range cases {
		p := writeConf(t, tc.body)
		_, err := Parse([]string{"--config", p, "/m"})
		if err == nil || !strings.Contains(err.Error(), tc.want) || CodeOf(err) != ExitUsage {
			t.Errorf("%q:\n got %v (code %d)\nwant exit 1 and %q", tc.body, err, CodeOf(err), tc.want)
			continue
		}
		if !strings.HasPrefix(err.Error(), p) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%q: %q is not one line starting with the file's name", tc.body, err)
		}
	}
}

func TestFileValues(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "m.toml")
	body := `
mountpoint = "mnt"
ssh_config = "ssh/config"
[options]
cache_timeout = 7
attr_timeout = 1
reconnect = false
contain_symlinks = false
ro = true
cache = false
Compression = false
user = "bob"
timeout = 2.5
x-systemd.automount = true
[host."::1"]
identity_file = "keys/id"
[host."10.0.0.7"]
port = 2022
[[branch]]
host = "[::1]"
[[branch]]
hosts = ["alice@10.0.0.7", "::1"]
dir = "rel"
ro = false
`
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	c := parseOK(t, "--config", p)
	checks := []struct {
		name      string
		got, want any
	}{
		{"mountpoint", c.Mountpoint, dir + "/mnt"},
		{"ssh_config", c.SSH.ConfigFile, dir + "/ssh/config"},
		// cache=false came last: cache=no sets every timeout to 0.
		{"cache", c.Cache, Cache{PrefetchDepth: 6, Mode: "auto", MaxSize: 10 << 30}},
		{"reconnect", c.SSH.Reconnect, false},
		{"contain", c.Symlinks.Contain, false},
		{"ro", c.FUSE.ReadOnly, true},
		{"timeout", c.SSH.Timeout, 2500 * time.Millisecond},
		{"ssh options", c.SSH.Options, []SSHOption{{"Compression", "no"}, {"User", "bob"}}},
		{"branch 1", c.Branches[0].Hosts, []Endpoint{{Host: "::1", SSHOptions: []string{"-oIdentityFile=" + dir + "/keys/id"}}}},
		{"branch 2", c.Branches[1].Hosts, []Endpoint{{User: "alice", Host: "10.0.0.7", Port: 2022},
			{Host: "::1", SSHOptions: []string{"-oIdentityFile=" + dir + "/keys/id"}}}},
		{"dir", c.Branches[1].Dir, "rel"},
		{"branch ro", c.Branches[1].ReadOnly, false},
	}
	for _, ch := range checks {
		if !reflect.DeepEqual(ch.got, ch.want) {
			t.Errorf("%s = %+v, want %+v", ch.name, ch.got, ch.want)
		}
	}
	// The file's options apply in its order.
	q := writeConf(t, "[options]\nattr_timeout = 1\ncache_timeout = 7\n[[branch]]\nhost = \"h\"\n")
	if c := parseOK(t, "--config", q, "/m"); c.Cache.AttrTimeout != 7*time.Second {
		t.Errorf("cache_timeout after attr_timeout: attr_timeout %v, want 7s", c.Cache.AttrTimeout)
	}
}

// TestFileAndCommandLine: the command line's options and mountpoint win;
// per-host ssh settings win over the command line's global ones.
func TestFileAndCommandLine(t *testing.T) {
	p := writeConf(t, `mountpoint = "/from/file"
ssh_config = "/file/ssh_config"
[options]
max_conns = 8
ro = true
port = 2200
[host.own]
ssh_config = "/own/ssh_config"
port = 22
[[branch]]
host = "own"
[[branch]]
host = "plain"
`)
	c := parseOK(t, "--config", p)
	own, plain := c.Branches[0].Hosts[0], c.Branches[1].Hosts[0]
	if c.Mountpoint != "/from/file" || c.SSH.MaxConns != 8 || !c.FUSE.ReadOnly ||
		c.SSHArgs(plain)[1] != "/file/ssh_config" || c.PortOf(plain) != 2200 {
		t.Errorf("file alone: %q %d %v %q %d", c.Mountpoint, c.SSH.MaxConns, c.FUSE.ReadOnly, c.SSHArgs(plain), c.PortOf(plain))
	}
	c = parseOK(t, "-o", "max_conns=3,rw", "-F", "/cli/ssh_config", "-p", "2022", "--config="+p, "/other")
	if c.Mountpoint != "/other" || c.SSH.MaxConns != 3 || c.FUSE.ReadOnly {
		t.Errorf("command line does not win: %q max_conns=%d ro=%v", c.Mountpoint, c.SSH.MaxConns, c.FUSE.ReadOnly)
	}
	if got := c.SSHArgs(plain); !reflect.DeepEqual(got, []string{"-F", "/cli/ssh_config"}) {
		t.Errorf("-F does not reach a host without its own ssh_config: %q", got)
	}
	if got := c.SSHArgs(own); !reflect.DeepEqual(got, []string{"-F", "/own/ssh_config"}) {
		t.Errorf("-F replaced a host's own ssh_config: %q", got)
	}
	if c.PortOf(plain) != 2022 || c.PortOf(own) != 22 {
		t.Errorf("ports: plain %d (want -p 2022), own %d (want 22)", c.PortOf(plain), c.PortOf(own))
	}
	noMnt := writeConf(t, "[[branch]]\nhost = \"h\"\n")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--config", p, "h:/x", "/m"}, "with --config " + p + ", give at most a mountpoint; the branches come from the file (got h:/x /m)"},
		{[]string{"--config", noMnt}, "missing mountpoint: give one after --config " + noMnt + " or set mountpoint in the file"},
		{[]string{"--config", p, "--config", p}, "option --config is given twice"},
		{[]string{"--config="}, "option --config needs a file or a name"},
		{[]string{"--config", p, ""}, "empty mountpoint argument"},
		{[]string{"--config", p, "-o", "max_conns=0"}, `bad value "0" for option max_conns`},
		{[]string{"--config", filepath.Dir(p) + "/nope.toml"}, "config file " + filepath.Dir(p) + "/nope.toml does not exist"},
		{[]string{"--config", filepath.Dir(p)}, "config file " + filepath.Dir(p) + ": is a directory"},
	} {
		_, err := Parse(tc.args)
		if err == nil || !strings.Contains(err.Error(), tc.want) || CodeOf(err) != ExitUsage {
			t.Errorf("%q: %v, want exit 1 and %q", tc.args, err, tc.want)
		}
	}
	if c, err := Parse([]string{"--config", "/nonexistent.toml", "-h"}); err != nil || c.Action != ActionHelp {
		t.Errorf("-h with a missing config file: %v", err)
	}
}

// TestConfigOption: -o config=FILE is --config for fstab and mount(8),
// which run "sshfsm SOURCE MOUNTPOINT -o OPTIONS": SOURCE is then a label.
func TestConfigOption(t *testing.T) {
	p := writeConf(t, `mountpoint = "/from/file"
[options]
max_conns = 8
[[branch]]
host = "a"
[[branch]]
name = "G"
host = "b"
dir = "/g"
`)
	for _, tc := range []struct {
		args   []string
		fsname string // the mount table's source: fstab's label
	}{
		{[]string{"work", "/mnt/work", "-o", "_netdev,config=" + p + ",rw"}, "work"},
		{[]string{"work", "/mnt/work", "-o", "config=" + p + ",fsname=mine"}, "mine"},
		{[]string{"-o", "config=" + p, "/mnt/work"}, ""},
	} {
		c := parseOK(t, tc.args...)
		if c.Mountpoint != "/mnt/work" || len(c.Branches) != 2 || c.Branches[1].Name != "G" || c.SSH.MaxConns != 8 || c.File != p || c.FUSE.FsName != tc.fsname {
			t.Errorf("%q: mountpoint %q, %d branches, max_conns %d, file %q, fsname %q", tc.args, c.Mountpoint, len(c.Branches), c.SSH.MaxConns, c.File, c.FUSE.FsName)
		}
	}
	if c := parseOK(t, "-o", "config="+p); c.Mountpoint != "/from/file" {
		t.Errorf("-o config= alone: mountpoint %q, want the file's", c.Mountpoint)
	}
	inFile := writeConf(t, "[options]\nconfig = \"x\"\n[[branch]]\nhost = \"h\"\n")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-o", "config=" + p, "h:/x", "/m"}, `with -o config=` + p + `, the source "h:/x" must be a label without ':'`},
		{[]string{"-o", "config=" + p, "label", "more", "/m"}, "give at most a mountpoint"},
		{[]string{"--config", p, "label", "/m"}, "give at most a mountpoint"},
		{[]string{"-o", "config=" + p + ",config=" + p, "/m"}, "option -o config= is given twice"},
		{[]string{"--config", p, "-o", "config=" + p, "/m"}, "options --config and -o config= exclude each other"},
		{[]string{"-o", "config=", "/m"}, "option -o config= needs a file or a name"},
		{[]string{"--config", inFile, "/m"}, inFile + ":2: options.config: a config file cannot name another one"},
	} {
		_, err := Parse(tc.args)
		if err == nil || !strings.Contains(err.Error(), tc.want) || CodeOf(err) != ExitUsage {
			t.Errorf("%q: %v, want exit 1 and %q", tc.args, err, tc.want)
		}
	}
}

// TestNamedConfig: --config NAME is $XDG_CONFIG_HOME/sshfsm/NAME.toml, or
// ~/.config/sshfsm/NAME.toml without an absolute XDG_CONFIG_HOME.
func TestNamedConfig(t *testing.T) {
	home, xdg := t.TempDir(), t.TempDir()
	t.Setenv("HOME", home)
	for _, dir := range []string{xdg + "/sshfsm", home + "/.config/sshfsm"} {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		body := "mountpoint = \"" + dir + "/mnt\"\n[[branch]]\nhost = \"h\"\n"
		if err := os.WriteFile(dir+"/work.toml", []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("XDG_CONFIG_HOME", xdg)
	if c := parseOK(t, "--config", "work"); c.File != xdg+"/sshfsm/work.toml" || c.Mountpoint != xdg+"/sshfsm/mnt" {
		t.Errorf("XDG_CONFIG_HOME: file %q mountpoint %q", c.File, c.Mountpoint)
	}
	if _, err := Parse([]string{"--config", "nope"}); err == nil || err.Error() != "config file "+xdg+"/sshfsm/nope.toml does not exist" {
		t.Errorf("missing named config: %v", err)
	}
	for _, x := range []string{"", "relative/dir"} {
		t.Setenv("XDG_CONFIG_HOME", x)
		if c := parseOK(t, "--config", "work"); c.File != home+"/.config/sshfsm/work.toml" {
			t.Errorf("XDG_CONFIG_HOME=%q: file %q, want under ~/.config", x, c.File)
		}
	}
	// A config's name given as a branch: the message says how to mount it.
	_, err := Parse([]string{"work", "/m"})
	if want := `bad remote directory "work": expected [user@]host:[dir] (for the remote home directory: work:); ` +
		"to mount what ~/.config/sshfsm/work.toml describes: sshfsm --config work"; err == nil || err.Error() != want {
		t.Errorf("config name as a branch: %v\nwant %s", err, want)
	}
	if _, err := Parse([]string{"nope", "/m"}); err == nil || strings.Contains(err.Error(), "--config") {
		t.Errorf("no config named nope: %v", err)
	}
	// Messages show the home directory as ~.
	if err := os.WriteFile(home+"/.config/sshfsm/bad.toml", []byte("\n[[branch]]\nhots = 1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err = Parse([]string{"--config", "bad", "/m"})
	if want := "~/.config/sshfsm/bad.toml:3: branch[1].hots: unknown key"; err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Errorf("error %v, want it to start with %q", err, want)
	}
	// A name with '/' or ending in .toml is a path, relative to the working directory.
	t.Chdir(home + "/.config/sshfsm")
	if c := parseOK(t, "--config", "work.toml"); c.File != home+"/.config/sshfsm/work.toml" {
		t.Errorf("work.toml: file %q", c.File)
	}
	if c := parseOK(t, "--config", "./work"+".toml"); c.File != home+"/.config/sshfsm/work.toml" {
		t.Errorf("./work.toml: file %q", c.File)
	}
}
