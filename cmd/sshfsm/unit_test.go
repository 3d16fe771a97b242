package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"sshfsm/internal/config"
	"sshfsm/internal/transport"
)

func TestDialErrorMapping(t *testing.T) {
	b := config.Branch{Spec: "bob@h:/srv", Hosts: []config.Endpoint{{User: "bob", Host: "h"}}, Dir: "/srv"}
	de := func(kind error, detail string) error {
		return fmt.Errorf("dial: %w", &transport.DialError{Kind: kind, Host: "h", Detail: detail})
	}
	cases := []struct {
		err  error
		code config.ExitCode
		msg  string
	}{
		{de(transport.ErrUnreachable, "ssh: connect to host h port 22: Connection refused"), config.ExitConnect,
			"cannot connect to h: ssh: connect to host h port 22: Connection refused"},
		{de(transport.ErrAuth, "bob@h: Permission denied (publickey)."), config.ExitAuth,
			"authentication to h failed: bob@h: Permission denied (publickey)."},
		{de(transport.ErrAuth, "host key verification failed"), config.ExitAuth,
			"host key verification failed for h; check and accept its key once with ssh h"},
		{de(transport.ErrNoDir, ""), config.ExitRemoteDir, "remote directory bob@h:/srv does not exist"},
		{de(transport.ErrNotDir, ""), config.ExitRemoteDir, "remote path bob@h:/srv is not a directory"},
		{de(transport.ErrSSH, "command-line line 0: unsupported option"), config.ExitConnect,
			"ssh to h failed: command-line line 0: unsupported option"},
		{errors.New("weird"), config.ExitConnect, "ssh to h failed: weird"},
	}
	for _, c := range cases {
		got := dialError(b, b.Hosts[0], c.err)
		if config.CodeOf(got) != c.code || got.Error() != c.msg {
			t.Errorf("%v: got %d %q, want %d %q", c.err, config.CodeOf(got), got, c.code, c.msg)
		}
	}
}

func TestParseReport(t *testing.T) {
	cases := []struct {
		line string
		code config.ExitCode
		msg  string
		ok   bool
	}{
		{"4 authentication to h failed\n", 4, "authentication to h failed", true},
		{"5 remote directory h:x does not exist\n", 5, "remote directory h:x does not exist", true},
		{"ok\n", 0, "", false},
		{"", 0, "", false},
		{"0 nothing\n", 0, "", false},
		{"x y\n", 0, "", false},
	}
	for _, c := range cases {
		code, msg, ok := parseReport(c.line)
		if code != c.code || msg != c.msg || ok != c.ok {
			t.Errorf("parseReport(%q) = %d %q %v", c.line, code, msg, ok)
		}
	}
}

func TestOneLine(t *testing.T) {
	if got := oneLine("a\r\nb\n  c\t"); got != "a b c" {
		t.Errorf("oneLine = %q", got)
	}
}

func TestTransportOptions(t *testing.T) {
	cfg, err := config.Parse([]string{"-p", "2222", "-C", "-F", "/c", "-o", "IdentityFile=/k,max_conns=3,timeout=7,noreconnect,sftp_server=/s",
		"-o", "ssh_command=ssh -vv", "u@[::1]:d", "/m"})
	if err != nil {
		t.Fatal(err)
	}
	o := transportOptions(cfg, cfg.Branches[0], cfg.Branches[0].Hosts[0], nil)
	got := fmt.Sprintf("%s|%s|%d|%s|%q|%q|%s|%d|%v|%v|%v", o.Host, o.User, o.Port, o.Dir, o.SSHCommand, o.SSHArgs,
		o.SFTPServer, o.Conns, o.Timeout, o.Reconnect, o.Dialer == nil)
	want := `::1|u|2222|d|["ssh" "-vv"]|["-F" "/c" "-C" "-oIdentityFile=/k"]|/s|3|7s|false|true`
	if got != want {
		t.Errorf("transport options\n got %s\nwant %s", got, want)
	}
	mo := mountOptions(cfg)
	if mo.FsName != "u@[::1]:d" || mo.Subtype != "sshfsm" || mo.MaxWrite != 1<<20 {
		t.Errorf("mount options %+v", mo)
	}
	cfg.SSH.DirectPort = 7000
	if transportOptions(cfg, cfg.Branches[0], cfg.Branches[0].Hosts[0], nil).Dialer == nil {
		t.Error("directport: no dialer")
	}
	if !strings.Contains(versionText(), "sshfsm version") {
		t.Error("version text")
	}
}

// TestDefaultsReachTransport: the CLI's defaults are config's declarations;
// transport's own defaults (for a zero value) never apply.
func TestDefaultsReachTransport(t *testing.T) {
	cfg, err := config.Parse([]string{"h:", "/m"})
	if err != nil {
		t.Fatal(err)
	}
	o := transportOptions(cfg, cfg.Branches[0], cfg.Branches[0].Hosts[0], nil)
	declared := map[string]string{}
	for _, opt := range config.Options() {
		declared[opt.Name] = opt.Default
	}
	if o.Conns == 0 || strconv.Itoa(o.Conns) != declared["max_conns"] {
		t.Errorf("max_conns: transport gets %d, declared default %q", o.Conns, declared["max_conns"])
	}
	if o.Timeout == 0 || strconv.FormatFloat(o.Timeout.Seconds(), 'f', -1, 64) != declared["timeout"] {
		t.Errorf("timeout: transport gets %v, declared default %q", o.Timeout, declared["timeout"])
	}
	if !o.Reconnect || declared["reconnect"] != "on" {
		t.Errorf("reconnect: transport gets %v, declared default %q", o.Reconnect, declared["reconnect"])
	}
}

// TestCheckBranches: transform_symlinks needs one host; a lone read-only
// branch makes a read-only mount; delay_connect refuses what needs the
// server at mount.
func TestCheckBranches(t *testing.T) {
	for _, c := range []struct {
		args   []string
		fail   bool
		readOn bool
	}{
		{[]string{"-o", "transform_symlinks", "a:", "b:", "/m"}, true, false},
		{[]string{"-o", "transform_symlinks", "gw1,gw2:/p", "/m"}, true, false},
		{[]string{"-o", "transform_symlinks", "h:/p", "/m"}, false, false},
		{[]string{"h:/d:ro", "/m"}, false, true},
		{[]string{"a:", "b:/d:ro", "/m"}, false, false},
		{[]string{"web=h:/d:ro", "/m"}, false, false},
		{[]string{"-o", "delay_connect,transform_symlinks", "h:/p", "/m"}, true, false},
		{[]string{"-o", "delay_connect,idmap=user", "h:/p", "/m"}, true, false},
		{[]string{"-o", "delay_connect,no_check_root", "a:", "b:", "/m"}, false, false},
	} {
		cfg, err := config.Parse(c.args)
		if err != nil {
			t.Fatalf("%q: %v", c.args, err)
		}
		err = checkBranches(cfg)
		if (err != nil) != c.fail || (err != nil && config.CodeOf(err) != config.ExitUsage) {
			t.Errorf("%q: got %v, want failure %v", c.args, err, c.fail)
		}
		if cfg.FUSE.ReadOnly != c.readOn {
			t.Errorf("%q: read-only mount %v, want %v", c.args, cfg.FUSE.ReadOnly, c.readOn)
		}
	}
}

// TestTransportOptionsPerHost: a host's own settings from a config file
// reach transport; the global ones fill the rest.
func TestTransportOptionsPerHost(t *testing.T) {
	file := filepath.Join(t.TempDir(), "m.toml")
	body := "[options]\nmax_conns = 3\nProxyJump = \"gw\"\n" +
		"[host.h]\nuser = \"alice\"\nport = 2222\nssh_config = \"/own\"\nmax_conns = 9\nssh_options = { ProxyJump = \"none\" }\n" +
		"[[branch]]\nhost = \"h\"\ndir = \"/d\"\n"
	if err := os.WriteFile(file, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Parse([]string{"-F", "/global", "--config", file, "/m"})
	if err != nil {
		t.Fatal(err)
	}
	o := transportOptions(cfg, cfg.Branches[0], cfg.Branches[0].Hosts[0], nil)
	got := fmt.Sprintf("%s|%s|%d|%s|%q|%d", o.Host, o.User, o.Port, o.Dir, o.SSHArgs, o.Conns)
	want := `h|alice|2222|/d|["-F" "/own" "-oProxyJump=none" "-oProxyJump=gw"]|9`
	if got != want {
		t.Errorf("transport options\n got %s\nwant %s", got, want)
	}
}
