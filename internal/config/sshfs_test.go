package config

import (
	"reflect"
	"strings"
	"testing"
)

// TestSshfsOptionsAccepted: options of sshfs 3.7 command lines parse, with
// the effect sshfsm gives them; those without effect are recorded for the
// warning at mount.
func TestSshfsOptionsAccepted(t *testing.T) {
	cases := []struct {
		args     []string
		check    func(c *Config) any
		want     any
		noEffect []string
	}{
		{[]string{"-v"}, func(c *Config) any { return c.Verbose }, true, nil},
		{[]string{"--verbose"}, func(c *Config) any { return c.Verbose }, true, nil},
		{[]string{"-o", "sshfs_verbose"}, func(c *Config) any { return c.Verbose }, true, nil},
		{[]string{"-o", "sshfs_debug"}, func(c *Config) any { return [2]bool{c.Debug, c.Foreground} }, [2]bool{true, true}, nil},
		{[]string{"-o", "max_read=65536"}, func(c *Config) any { return c.FUSE.MaxWrite }, 1 << 20, []string{"max_read"}},
		{[]string{"-o", "ac_attr_timeout=5"}, func(c *Config) any { return c.Cache.AttrTimeout.Seconds() }, 20.0, []string{"ac_attr_timeout"}},
		{[]string{"-o", "modules=subdir,subdir=a/b"}, func(c *Config) any { return c.Branches[0].Dir }, "/srv/a/b", nil},
		{[]string{"-o", "Cipher=aes128-ctr"}, func(c *Config) any { return c.SSH.Options }, []SSHOption(nil), []string{"Cipher"}},
		{[]string{"-o", "cipher=blowfish"}, func(c *Config) any { return c.SSH.Options }, []SSHOption(nil), []string{"cipher"}},
		{[]string{"-o", "Ciphers=aes128-ctr"}, func(c *Config) any { return c.SSH.Options }, []SSHOption{{"Ciphers", "aes128-ctr"}}, nil},
		{[]string{"-o", "sync,dirsync"}, func(c *Config) any { return c.FUSE.MountFlags }, []string{"sync", "dirsync"}, nil},
		{[]string{"-o", "allow_root"}, func(c *Config) any { return [2]bool{c.FUSE.AllowRoot, c.FUSE.DefaultPermissions} }, [2]bool{true, false}, nil},
		{[]string{"-o", "umask=077"}, func(c *Config) any { return *c.FUSE.Umask }, uint32(0o77), nil},
		{[]string{"-o", "delay_connect,no_check_root"}, func(c *Config) any { return [2]bool{c.SSH.DelayConnect, c.SSH.NoCheckRoot} },
			[2]bool{true, true}, nil},
		{[]string{"-o", "auto_unmount"}, func(c *Config) any { return c.FUSE.AutoUnmount }, true, nil},
		{[]string{"-o", "nonempty,nonempty"}, func(c *Config) any { return c.Branches[0].Dir }, "/srv",
			[]string{"nonempty", "nonempty"}},
		// mount(8)'s own options are no news to anyone.
		{[]string{"-o", "defaults,_netdev,noauto,x-systemd.automount"}, func(c *Config) any { return c.Branches[0].Dir }, "/srv", nil},
	}
	for _, tc := range cases {
		c, err := Parse(append(tc.args, "h:/srv", "/mnt"))
		if err != nil {
			t.Errorf("%q: %v", tc.args, err)
			continue
		}
		if got := tc.check(c); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%q: got %v, want %v", tc.args, got, tc.want)
		}
		var names []string
		for _, n := range c.NoEffect {
			names = append(names, n.Name)
			if !strings.HasPrefix(n.Why, "Ignored") {
				t.Errorf("%q: %s is without effect, but its help says %q", tc.args, n.Name, n.Why)
			}
		}
		if !reflect.DeepEqual(names, tc.noEffect) {
			t.Errorf("%q: options without effect %q, want %q", tc.args, names, tc.noEffect)
		}
	}
}

// TestSubdir: subdir= is below each branch's directory, as libfuse's
// module prefixes every path: of the home, of an absolute directory, of /.
func TestSubdir(t *testing.T) {
	c := parseOK(t, "-o", "modules=subdir,subdir=/x/y/", "a:", "b:/srv", "c:/", "d:rel", "/mnt")
	var dirs []string
	for _, b := range c.Branches {
		dirs = append(dirs, b.Dir)
	}
	if want := []string{"x/y", "/srv/x/y", "/x/y", "rel/x/y"}; !reflect.DeepEqual(dirs, want) {
		t.Errorf("dirs %q, want %q", dirs, want)
	}
}

// TestSshfsOptionsRefused: what sshfsm cannot do fails the mount, saying why.
func TestSshfsOptionsRefused(t *testing.T) {
	cases := []struct {
		opt, want string
	}{
		{"modules=iconv,from_code=UTF-8,to_code=ISO-8859-1", "iconv is not supported: names are shown as the server stores them"},
		{"modules=subdir:iconv", "iconv is not supported"},
		{"modules=bogus", `unknown module "bogus"`},
		{"from_code=UTF-8", "option from_code: not supported: it goes with modules=iconv"},
		{"to_code=UTF-8", "option to_code: not supported"},
		{"subdir=", `bad value "" for option subdir: needs a value`},
		{"max_read=0", `bad value "0" for option max_read`},
		{"Cipher", "option Cipher needs a value"},
	}
	for _, tc := range cases {
		_, err := Parse([]string{"-o", tc.opt, "h:", "/mnt"})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("-o %s: %v, want an error containing %q", tc.opt, err, tc.want)
		}
	}
}
