package config

import (
	"reflect"
	"strings"
	"testing"
	"time"
)

func u32(n uint32) *uint32 { return &n }

// eps is a list of endpoints, for literals.
func eps(es ...Endpoint) []Endpoint { return es }

// parseOK parses args that must be valid.
func parseOK(t *testing.T, args ...string) *Config {
	t.Helper()
	c, err := Parse(args)
	if err != nil {
		t.Fatalf("Parse(%q): %v", args, err)
	}
	return c
}

func TestDefaults(t *testing.T) {
	c := parseOK(t, "h:", "/mnt")
	want := Defaults()
	want.Branches = []Branch{{Spec: "h:", Hosts: []Endpoint{{Host: "h"}}}}
	want.Mountpoint = "/mnt"
	if !reflect.DeepEqual(c, want) {
		t.Fatalf("got %+v\nwant %+v", c, want)
	}
	checks := []struct {
		name      string
		got, want any
	}{
		{"timeout", c.SSH.Timeout, 30 * time.Second},
		{"reconnect", c.SSH.Reconnect, true},
		{"contain_symlinks", c.Symlinks.Contain, true},
		{"dcache_timeout", c.Cache.DirCacheTimeout, 20 * time.Second},
		{"prefetch_depth", c.Cache.PrefetchDepth, 6},
		{"watch", c.Watch, true},
		{"attr_timeout", c.Cache.AttrTimeout, 20 * time.Second},
		{"idmap", c.IDMap.Mode, IDMapNone},
		{"nomap", c.IDMap.NoMapOK, false},
		{"subtype", c.FUSE.Subtype, "sshfsm"},
		{"ssh_command", c.SSH.Command, []string{"ssh"}},
		{"max_conns", c.SSH.MaxConns, 4},
		{"max_write", c.FUSE.MaxWrite, 1 << 20},
		{"foreground", c.Foreground, false},
	}
	for _, ch := range checks {
		if !reflect.DeepEqual(ch.got, ch.want) {
			t.Errorf("default %s = %v, want %v", ch.name, ch.got, ch.want)
		}
	}
}

func TestOptions(t *testing.T) {
	cases := []struct {
		args  []string
		check func(c *Config) any
		want  any
	}{
		{[]string{"-o", "allow_other"}, func(c *Config) any { return c.FUSE.AllowOther }, true},
		{[]string{"-oallow_root"}, func(c *Config) any { return c.FUSE.AllowRoot }, true},
		{[]string{"-o", "default_permissions,ro"}, func(c *Config) any {
			return [2]bool{c.FUSE.DefaultPermissions, c.FUSE.ReadOnly}
		}, [2]bool{true, true}},
		{[]string{"-o", "ro", "-o", "rw"}, func(c *Config) any { return c.FUSE.ReadOnly }, false},
		{[]string{"-o", "uid=1000,gid=100"}, func(c *Config) any { return [2]*uint32{c.FUSE.UID, c.FUSE.GID} },
			[2]*uint32{u32(1000), u32(100)}},
		{[]string{"-o", "umask=022"}, func(c *Config) any { return c.FUSE.Umask }, u32(0o22)},
		{[]string{"-o", "fsname=foo\\,bar,subtype=x"}, func(c *Config) any { return c.FUSE.FsName + "|" + c.FUSE.Subtype }, "foo,bar|x"},
		{[]string{"-o", "kernel_cache,direct_io,max_write=65536"}, func(c *Config) any {
			return [3]any{c.FUSE.KernelCache, c.FUSE.DirectIO, c.FUSE.MaxWrite}
		}, [3]any{true, true, 65536}},
		{[]string{"-o", "ssh_command=ssh -v -o 'Foo Bar'"}, func(c *Config) any { return c.SSH.Command },
			[]string{"ssh", "-v", "-o", "Foo Bar"}},
		{[]string{"-o", "sftp_server=/usr/lib/openssh/sftp-server"}, func(c *Config) any { return c.SSH.SFTPServer },
			"/usr/lib/openssh/sftp-server"},
		{[]string{"-o", "directport=7000"}, func(c *Config) any { return c.SSH.DirectPort }, 7000},
		{[]string{"-o", "max_conns=8"}, func(c *Config) any { return c.SSH.MaxConns }, 8},
		{[]string{"-o", "timeout=2.5"}, func(c *Config) any { return c.SSH.Timeout }, 2500 * time.Millisecond},
		{[]string{"-o", "noreconnect"}, func(c *Config) any { return c.SSH.Reconnect }, false},
		{[]string{"-o", "password_stdin"}, func(c *Config) any { return c.SSH.PasswordStdin }, true},
		{nil, func(c *Config) any { return c.SSH.PasswordStdin }, false},
		{[]string{"-o", "noreconnect,reconnect"}, func(c *Config) any { return c.SSH.Reconnect }, true},
		{[]string{"-o", "follow_symlinks,transform_symlinks"}, func(c *Config) any {
			return [2]bool{c.Symlinks.Follow, c.Symlinks.Transform}
		}, [2]bool{true, true}},
		{[]string{"-o", "nocontain_symlinks"}, func(c *Config) any { return c.Symlinks.Contain }, false},
		{[]string{"-o", "no_contain_symlinks"}, func(c *Config) any { return c.Symlinks.Contain }, false},
		{[]string{"-o", "attr_timeout=1,entry_timeout=2,negative_timeout=0,dcache_timeout=0.5"}, func(c *Config) any { return c.Cache },
			Cache{time.Second, 2 * time.Second, 0, 500 * time.Millisecond, 6, "auto", true, "", 10 << 30}},
		{[]string{"-o", "cache_timeout=7"}, func(c *Config) any { return c.Cache },
			Cache{7 * time.Second, 7 * time.Second, 7 * time.Second, 7 * time.Second, 6, "auto", true, "", 10 << 30}},
		{[]string{"-o", "prefetch_depth=0"}, func(c *Config) any { return c.Cache.PrefetchDepth }, 0},
		{nil, func(c *Config) any { return [3]bool{c.Watch, c.WatchWrites, c.WatchNetwork} }, [3]bool{true, false, false}},
		{[]string{"-o", "watch=no"}, func(c *Config) any { return [3]bool{c.Watch, c.WatchWrites, c.WatchNetwork} }, [3]bool{false, false, false}},
		{[]string{"-o", "watch=auto"}, func(c *Config) any { return [3]bool{c.Watch, c.WatchWrites, c.WatchNetwork} }, [3]bool{true, false, false}},
		{[]string{"-o", "watch=yes"}, func(c *Config) any { return [3]bool{c.Watch, c.WatchWrites, c.WatchNetwork} }, [3]bool{true, false, true}},
		{[]string{"-o", "watch=writes"}, func(c *Config) any { return [3]bool{c.Watch, c.WatchWrites, c.WatchNetwork} }, [3]bool{true, true, true}},
		{[]string{"-o", "cache=no"}, func(c *Config) any { return c.Cache }, Cache{PrefetchDepth: 6, Mode: "auto", MaxSize: 10 << 30}},
		{[]string{"-o", "cache=yes"}, func(c *Config) any { return c.Cache.Mode }, "auto"},
		{[]string{"-o", "cache=immutable"}, func(c *Config) any { return [2]any{c.Cache.Mode, c.Cache.AttrTimeout} }, [2]any{"immutable", 365 * 24 * time.Hour}},
		{[]string{"-o", "cache=immutable,dcache_timeout=5"}, func(c *Config) any { return [2]any{c.Cache.NegativeTimeout, c.Cache.DirCacheTimeout} }, [2]any{365 * 24 * time.Hour, 5 * time.Second}},
		{[]string{"-o", "cache=strict,nodisk_cache"}, func(c *Config) any { return [3]any{c.Cache.Mode, c.Cache.Disk, c.Cache.AttrTimeout} }, [3]any{"strict", false, time.Duration(0)}},
		{[]string{"-o", "cache_dir=/c,cache_max_size=512M"}, func(c *Config) any { return [2]any{c.Cache.Dir, c.Cache.MaxSize} }, [2]any{"/c", int64(512 << 20)}},
		{[]string{"-o", "cache_max_size=1234"}, func(c *Config) any { return c.Cache.MaxSize }, int64(1234)},
		{[]string{"-o", "cache_max_size=2t"}, func(c *Config) any { return c.Cache.MaxSize }, int64(2 << 40)},
		{[]string{"-o", "dir_cache=no"}, func(c *Config) any { return c.Cache.DirCacheTimeout }, time.Duration(0)},
		{[]string{"-o", "dcache_stat_timeout=3"}, func(c *Config) any { return c.Cache.AttrTimeout }, 3 * time.Second},
		{[]string{"-o", "idmap=user"}, func(c *Config) any { return c.IDMap.Mode }, IDMapUser},
		{[]string{"-o", "idmap=file,uidfile=/u,gidfile=/g,nomap=ignore"}, func(c *Config) any { return c.IDMap },
			IDMap{Mode: IDMapFile, UIDFile: "/u", GIDFile: "/g", NoMapOK: true}},
		{[]string{"-o", "debug"}, func(c *Config) any { return [2]bool{c.Debug, c.Foreground} }, [2]bool{true, true}},
		{[]string{"-d"}, func(c *Config) any { return [2]bool{c.Debug, c.Foreground} }, [2]bool{true, true}},
		{[]string{"--debug"}, func(c *Config) any { return c.Debug }, true},
		{[]string{"-f"}, func(c *Config) any { return [2]bool{c.Debug, c.Foreground} }, [2]bool{false, true}},
		{[]string{"-s"}, func(c *Config) any { return c.Foreground }, false},
		{[]string{"-p", "2222"}, func(c *Config) any { return c.SSH.Port }, 2222},
		{[]string{"-p2222"}, func(c *Config) any { return c.SSH.Port }, 2222},
		{[]string{"-o", "port=22"}, func(c *Config) any { return c.SSH.Port }, 22},
		{[]string{"-o", "Port=23"}, func(c *Config) any { return c.SSH.Port }, 23},
		{[]string{"-o", "PORT=24"}, func(c *Config) any { return c.SSH.Port }, 24},
		{[]string{"-C"}, func(c *Config) any { return c.SSH.Compression }, true},
		{[]string{"-o", "compression=no"}, func(c *Config) any { return c.SSHArgs(Endpoint{}) }, []string{"-oCompression=no"}},
		{[]string{"-F", "/etc/cfg"}, func(c *Config) any { return c.SSH.ConfigFile }, "/etc/cfg"},
		{[]string{"-F/etc/cfg2"}, func(c *Config) any { return c.SSH.ConfigFile }, "/etc/cfg2"},
		{[]string{"-o", "workaround=rename:nobuflimit,sshfs_sync,no_readahead,sync_readdir,delay_connect"},
			func(c *Config) any { return c.FUSE.ReadOnly }, false},
		{[]string{"-o", "nonempty,big_writes,auto_unmount,ssh_protocol=2,dcache_max_size=100"},
			func(c *Config) any { return c.FUSE.ReadOnly }, false},
		{[]string{"-o", ",ro,,"}, func(c *Config) any { return c.FUSE.ReadOnly }, true},
		{nil, func(c *Config) any { return c.Metrics }, Metrics{}},
		{[]string{"-o", "metrics=127.0.0.1:9101"}, func(c *Config) any { return c.Metrics }, Metrics{"tcp", "127.0.0.1:9101"}},
		{[]string{"-o", "metrics=[::1]:9101"}, func(c *Config) any { return c.Metrics }, Metrics{"tcp", "[::1]:9101"}},
		{[]string{"-o", "metrics=:9101"}, func(c *Config) any { return c.Metrics }, Metrics{"tcp", ":9101"}},
		{[]string{"-o", "metrics=unix:/run/user/1000/sshfsm.metrics"}, func(c *Config) any { return c.Metrics },
			Metrics{"unix", "/run/user/1000/sshfsm.metrics"}},
	}
	for _, tc := range cases {
		c := parseOK(t, append(tc.args, "h:", "/mnt")...)
		if got := tc.check(c); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%q: got %#v, want %#v", tc.args, got, tc.want)
		}
	}
}

func TestSSHFSOptionsAccepted(t *testing.T) {
	for _, o := range []string{"disable_hardlink", "noforget", "no_rofd_flush", "remember=5"} {
		if _, err := Parse([]string{"-o", o, "h:", "/m"}); err != nil {
			t.Errorf("sshfs option %s: %v", o, err)
		}
	}
}

func TestMountNoiseAccepted(t *testing.T) {
	noise := "rw,dev,nodev,suid,nosuid,exec,noexec,atime,noatime,relatime,auto,noauto," +
		"user,users,nouser,_netdev,nofail,defaults,x-systemd.automount,x-systemd.mount-timeout=30,comment=hello"
	c := parseOK(t, "h:/d", "/mnt", "-o", noise)
	if c.FUSE.ReadOnly || c.Mountpoint != "/mnt" {
		t.Errorf("noise changed the config: %+v", c)
	}
}

func TestSSHOptions(t *testing.T) {
	c := parseOK(t, "-o", "identityfile=~/.ssh/id,ProxyJump=gw", "-oSERVERALIVEINTERVAL=15",
		"-o", "StrictHostKeyChecking=no,UserKnownHostsFile=/dev/null,ControlMaster=auto",
		"-o", "ControlPath=/tmp/c-%r@%h:%p,ConnectTimeout=5,Ciphers=aes128-gcm@openssh.com,user=bob,user",
		"-F", "cfg", "-C", "h:", "/mnt")
	want := []string{"-F", "cfg", "-C", "-oIdentityFile=~/.ssh/id", "-oProxyJump=gw",
		"-oServerAliveInterval=15", "-oStrictHostKeyChecking=no", "-oUserKnownHostsFile=/dev/null",
		"-oControlMaster=auto", "-oControlPath=/tmp/c-%r@%h:%p", "-oConnectTimeout=5",
		"-oCiphers=aes128-gcm@openssh.com", "-oUser=bob"}
	if got := c.SSHArgs(Endpoint{}); !reflect.DeepEqual(got, want) {
		t.Errorf("ssh args\n got %q\nwant %q", got, want)
	}
}

func TestPositionalForms(t *testing.T) {
	cases := []struct {
		args []string
		want Branch
		mnt  string
	}{
		{[]string{"host:", "m"}, Branch{Spec: "host:", Hosts: eps(Endpoint{Host: "host"})}, "m"},
		{[]string{"host:dir/sub", "m"}, Branch{Spec: "host:dir/sub", Hosts: eps(Endpoint{Host: "host"}), Dir: "dir/sub"}, "m"},
		{[]string{"alice@host:/srv", "m"}, Branch{Spec: "alice@host:/srv", Hosts: eps(Endpoint{User: "alice", Host: "host"}), Dir: "/srv"}, "m"},
		{[]string{"a@corp@host:x", "m"}, Branch{Spec: "a@corp@host:x", Hosts: eps(Endpoint{User: "a@corp", Host: "host"}), Dir: "x"}, "m"},
		{[]string{"host:/a@b:c", "m"}, Branch{Spec: "host:/a@b:c", Hosts: eps(Endpoint{Host: "host"}), Dir: "/a@b:c"}, "m"},
		{[]string{"[::1]:dir", "m"}, Branch{Spec: "[::1]:dir", Hosts: eps(Endpoint{Host: "::1"}), Dir: "dir"}, "m"},
		{[]string{"[::1]:", "m"}, Branch{Spec: "[::1]:", Hosts: eps(Endpoint{Host: "::1"})}, "m"},
		{[]string{"bob@[fe80::1%eth0]:/x", "m"}, Branch{Spec: "bob@[fe80::1%eth0]:/x", Hosts: eps(Endpoint{User: "bob", Host: "fe80::1%eth0"}), Dir: "/x"}, "m"},
		{[]string{"10.0.0.1:/", "m"}, Branch{Spec: "10.0.0.1:/", Hosts: eps(Endpoint{Host: "10.0.0.1"}), Dir: "/"}, "m"},
		// mount.fuse3: source, mountpoint, then options.
		{[]string{"h:/d", "/mnt/x", "-o", "rw,nosuid,nodev,allow_other"}, Branch{Spec: "h:/d", Hosts: eps(Endpoint{Host: "h"}), Dir: "/d"}, "/mnt/x"},
		{[]string{"-o", "ro", "h:", "-p", "22", "m", "-f"}, Branch{Spec: "h:", Hosts: eps(Endpoint{Host: "h"})}, "m"},
		{[]string{"--", "h:", "-odd"}, Branch{Spec: "h:", Hosts: eps(Endpoint{Host: "h"})}, "-odd"},
		{[]string{"h:", "./a:b"}, Branch{Spec: "h:", Hosts: eps(Endpoint{Host: "h"})}, "./a:b"},
	}
	for _, tc := range cases {
		c := parseOK(t, tc.args...)
		if len(c.Branches) != 1 || !reflect.DeepEqual(c.Branches[0], tc.want) || c.Mountpoint != tc.mnt {
			t.Errorf("%q: got %+v %q, want %+v %q", tc.args, c.Branches, c.Mountpoint, tc.want, tc.mnt)
		}
	}
}

func TestDest(t *testing.T) {
	for spec, want := range map[string]string{
		"h:": "h:", "u@h:d": "u@h:d", "[::1]:x": "[::1]:x", "u@[fe80::1%lo]:/": "u@[fe80::1%lo]:/",
	} {
		b, err := ParseBranch(spec)
		if err != nil || b.Dest() != want {
			t.Errorf("ParseBranch(%q).Dest() = %q, %v; want %q", spec, b.Dest(), err, want)
		}
	}
}

func TestActions(t *testing.T) {
	cases := []struct {
		args []string
		want Action
	}{
		{[]string{"-h"}, ActionHelp},
		{[]string{"--help", "-o", "bogus"}, ActionHelp},
		{[]string{"-V"}, ActionVersion},
		{[]string{"--version", "h:", "m"}, ActionVersion},
		{[]string{"--man"}, ActionMan},
		{[]string{"--man", "-h"}, ActionHelp},
	}
	for _, tc := range cases {
		c, err := Parse(tc.args)
		if err != nil || c.Action != tc.want {
			t.Errorf("%q: action %v, err %v; want %v", tc.args, c.Action, err, tc.want)
		}
	}
}

func TestErrors(t *testing.T) {
	cases := []struct {
		args []string
		want string
	}{
		{nil, "missing [user@]host:[dir] and mountpoint arguments (see sshfsm --help)"},
		{[]string{"h:/d"}, "missing mountpoint argument after h:/d"},
		{[]string{"/mnt"}, "missing [user@]host:[dir] argument before mountpoint /mnt"},
		{[]string{"host", "m"}, `bad remote directory "host": expected [user@]host:[dir] (for the remote home directory: host:)`},
		{[]string{"./a/b", "m"}, `bad remote directory "./a/b": expected [user@]host:[dir]`},
		{[]string{"/mnt", "h:/d"}, "arguments in the wrong order: give [user@]host:[dir] first, then the mountpoint (sshfsm h:/d /mnt)"},
		{[]string{":dir", "m"}, `bad remote directory ":dir": empty host name`},
		{[]string{"@h:", "m"}, `bad remote directory "@h:": empty user name before '@'`},
		{[]string{"[::1]dir", "m"}, `bad remote directory "[::1]dir": expected ':' after ']'`},
		{[]string{"[::1:dir", "m"}, `missing ']' after IPv6 address`},
		{[]string{"[nothost]:dir", "m"}, `not an IPv6 address inside [ ]`},
		{[]string{"[10.0.0.1]:dir", "m"}, `not an IPv6 address inside [ ]`},
		{[]string{"x[::1]:dir", "m"}, `expected [user@]host:[dir]`},
		{[]string{"-oProxyCommand=x:", "m"}, `missing [user@]host:[dir] argument before mountpoint m`},
		{[]string{"h:", ""}, "empty mountpoint argument"},
		{[]string{"-x", "h:", "m"}, "unknown option -x (see sshfsm --help)"},
		{[]string{"--foo", "h:", "m"}, "unknown option --foo"},
		{[]string{"-o", "bogus", "h:", "m"}, `unknown option "bogus" (see sshfsm --help)`},
		{[]string{"-o", "Bogus=1", "h:", "m"}, `unknown option "Bogus=1"`},
		{[]string{"-o", "Allow_Other", "h:", "m"}, `unknown option "Allow_Other"`},
		{[]string{"h:", "m", "-o"}, "option -o needs an argument (-o OPT[,OPT...])"},
		{[]string{"h:", "m", "-p"}, "option -p needs an argument"},
		{[]string{"-F"}, "option -F needs an argument"},
		{[]string{"-p", "x", "h:", "m"}, `bad value "x" for option port: not an integer`},
		{[]string{"-p", "70000", "h:", "m"}, `bad value "70000" for option port: must be between 1 and 65535`},
		{[]string{"-o", "timeout=abc", "h:", "m"}, `bad value "abc" for option timeout: not a number of seconds`},
		{[]string{"-o", "timeout=0", "h:", "m"}, `bad value "0" for option timeout: must be more than 0`},
		{[]string{"-o", "attr_timeout=-1", "h:", "m"}, `bad value "-1" for option attr_timeout: must not be negative`},
		{[]string{"-o", "timeout", "h:", "m"}, "option timeout needs a value (-o timeout=SECONDS)"},
		{[]string{"-o", "ro=1", "h:", "m"}, "option ro takes no value"},
		{[]string{"-o", "umask=999", "h:", "m"}, `bad value "999" for option umask: not an octal number`},
		{[]string{"-o", "uid=-1", "h:", "m"}, `bad value "-1" for option uid: must be between 0 and`},
		{[]string{"-o", "idmap=group", "h:", "m"}, `bad value "group" for option idmap: must be one of none, user, file`},
		{[]string{"-o", "nomap=maybe", "h:", "m"}, `must be one of ignore, error`},
		{[]string{"-o", "max_conns=0", "h:", "m"}, `bad value "0" for option max_conns: must be between 1 and 64`},
		{[]string{"-o", "max_write=1", "h:", "m"}, `for option max_write: must be between 4096 and 1048576`},
		{[]string{"-o", "ssh_command=", "h:", "m"}, `bad value "" for option ssh_command: needs a value`},
		{[]string{"-o", "ssh_command='ssh", "h:", "m"}, `unterminated quote`},
		{[]string{"-o", "workaround=bogus", "h:", "m"}, `unknown workaround "bogus"`},
		{[]string{"-o", "cache=maybe", "h:", "m"}, `bad value "maybe" for option cache: must be one of auto, immutable, strict, yes, no`},
		{[]string{"-o", "cache_max_size=10X", "h:", "m"}, `bad value "10X" for option cache_max_size: not a size`},
		{[]string{"-o", "cache_max_size=-5", "h:", "m"}, `bad value "-5" for option cache_max_size: not a size`},
		{[]string{"-o", "cache_max_size=99999999T", "h:", "m"}, `for option cache_max_size: too large`},
		{[]string{"-o", "ssh_protocol=1", "h:", "m"}, `must be one of 2`},
		{[]string{"-o", "IdentityFile", "h:", "m"}, "ssh option IdentityFile needs a value (-o IdentityFile=VALUE)"},
		{[]string{"-o", "identityfile=", "h:", "m"}, "ssh option IdentityFile needs a value"},
		{[]string{"-o", "allow_other,allow_root", "h:", "m"}, "options allow_other and allow_root exclude each other"},
		{[]string{"-o", "uidfile=/u", "h:", "m"}, "options uidfile and gidfile need idmap=file"},
		{[]string{"-o", "idmap=file", "h:", "m"}, "option idmap=file needs uidfile=FILE or gidfile=FILE"},
		{[]string{"-o", "directport=1,sftp_server=x", "h:", "m"}, "options directport and sftp_server exclude each other"},
		{[]string{"-ohost:x", "m"}, `unknown option "host:x"`},
		{[]string{"-o", "passive", "h:", "m"}, "option passive: not supported: sshfsm starts ssh itself"},
		{[]string{"-o", "metrics=9101", "h:", "m"}, `bad value "9101" for option metrics: expected HOST:PORT or unix:PATH`},
		{[]string{"-o", "metrics=localhost:0", "h:", "m"}, `for option metrics: port "0": must be a number between 1 and 65535`},
		{[]string{"-o", "metrics=localhost:http", "h:", "m"}, `port "http": must be a number between 1 and 65535`},
		{[]string{"-o", "metrics=unix:", "h:", "m"}, `for option metrics: unix: needs a socket path`},
		{[]string{"-o", "metrics=/run/m.sock", "h:", "m"}, `expected HOST:PORT or unix:PATH`},
		{[]string{"-o", "metrics=", "h:", "m"}, `for option metrics: needs a value`},
	}
	for _, tc := range cases {
		c, err := Parse(tc.args)
		if err == nil {
			t.Errorf("%q: no error, config %+v", tc.args, c)
			continue
		}
		if !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%q: error %q, want one line containing %q", tc.args, err, tc.want)
		}
		if code := CodeOf(err); code != ExitUsage {
			t.Errorf("%q: exit code %d, want %d", tc.args, code, ExitUsage)
		}
	}
}

func TestSplitOptions(t *testing.T) {
	got := splitOptions(`a,b=c\,d,,e\\f`)
	want := []string{"a", "b=c,d", "", `e\f`}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("splitOptions = %q, want %q", got, want)
	}
}

func TestCodeOf(t *testing.T) {
	if CodeOf(nil) != ExitOK || CodeOf(Errorf(ExitAuth, "x")) != ExitAuth {
		t.Error("CodeOf of nil or *Error is wrong")
	}
	if CodeOf(strings.NewReader("").UnreadByte()) != ExitMount {
		t.Error("CodeOf of a foreign error is not ExitMount")
	}
}

// TestDefaultsDeclaredOnce: every default is the Default of its option's
// declaration: an empty command line gives exactly what applying the
// declared defaults to a zero Config gives, and --help shows each of them
// (but those of sshfs compatibility options, shown in the man page only).
func TestDefaultsDeclaredOnce(t *testing.T) {
	want := &Config{}
	help := Help()
	for _, o := range Options() {
		switch {
		case o.Default == "":
			continue
		case o.HasValue():
			if err := o.apply(want, o.Default); err != nil {
				t.Fatalf("default of %s: %v", o.Name, err)
			}
			if o.Section != SecCompat && !strings.Contains(help, "(default: "+o.Default+")") {
				t.Errorf("--help does not show the default %s of %s", o.Default, o.Name)
			}
		default:
			_ = o.apply(want, "")
		}
	}
	got := parseOK(t, "h:", "/m")
	got.Branches, got.Mountpoint = nil, ""
	if !reflect.DeepEqual(got, want) {
		t.Errorf("defaults not from the declarations:\n got %+v\nwant %+v", got, want)
	}
}

// TestAllowOtherImpliesDefaultPermissions: with allow_other, the kernel
// checks the file modes unless nodefault_permissions says otherwise, in
// either order and from a config file too.
func TestAllowOtherImpliesDefaultPermissions(t *testing.T) {
	cases := []struct {
		opts     string
		want, no bool
	}{
		{"allow_other", true, false},
		{"allow_other,nodefault_permissions", false, true},
		{"nodefault_permissions,allow_other", false, true},
		{"nodefault_permissions,default_permissions,allow_other", true, false},
		{"nodefault_permissions", false, true},
		{"allow_root", false, false},
		{"rw", false, false},
	}
	for _, tc := range cases {
		c := parseOK(t, "-o", tc.opts, "h:", "/mnt")
		if c.FUSE.DefaultPermissions != tc.want || c.FUSE.NoDefaultPermissions != tc.no {
			t.Errorf("-o %s: default_permissions %v, nodefault_permissions %v; want %v, %v",
				tc.opts, c.FUSE.DefaultPermissions, c.FUSE.NoDefaultPermissions, tc.want, tc.no)
		}
	}
}

// TestMountFlags: mount(8)'s generic flags are kept in order, for the
// kernel; none is dropped.
func TestMountFlags(t *testing.T) {
	c := parseOK(t, "-o", "noexec,noatime,nosuid,nodev,sync,dirsync,exec,noexec,relatime,lazytime", "h:", "/mnt")
	want := []string{"noexec", "noatime", "sync", "dirsync", "exec", "noexec", "relatime", "lazytime"}
	if !reflect.DeepEqual(c.FUSE.MountFlags, want) {
		t.Errorf("flags %q, want %q", c.FUSE.MountFlags, want)
	}
	if _, err := Parse([]string{"-o", "nosymfollow", "h:", "/mnt"}); err == nil {
		t.Error("an unknown flag is accepted")
	}
}
