package config

import (
	"errors"
	"strings"
	"time"
)

func compatOptions() []Option {
	s := SecCompat
	return []Option{
		enumOpt("dir_cache", "yes", []string{"yes", "no"}, s,
			"dir_cache=no is dcache_timeout=0.",
			func(c *Config, v string) {
				if v == "no" {
					c.Cache.DirCacheTimeout = 0
				}
			}),
		secondsOpt("dcache_stat_timeout", "", s, false, "Same as attr_timeout.",
			func(c *Config, d time.Duration) { c.Cache.AttrTimeout = d }),
		secondsOpt("dcache_dir_timeout", "", s, false, "Same as dcache_timeout.",
			func(c *Config, d time.Duration) { c.Cache.DirCacheTimeout = d }),
		secondsOpt("dcache_link_timeout", "", s, false, "Ignored.",
			func(*Config, time.Duration) {}),
		intOpt("dcache_max_size", "N", "", s, 0, 1<<31-1, "Ignored.", func(*Config, int) {}),
		secondsOpt("dcache_clean_interval", "", s, false, "Ignored.", func(*Config, time.Duration) {}),
		secondsOpt("dcache_min_clean_interval", "", s, false, "Ignored.", func(*Config, time.Duration) {}),
		stringOpt("workaround", "LIST", "", s,
			"Colon-separated sshfs workarounds (rename, renamexdev, truncate, buflimit, fstat, createmode, each also with a no prefix, none, all); checked and ignored: sshfsm uses posix-rename when the server offers it and needs none of them.",
			func(_ *Config, v string) error { return checkWorkarounds(v) }),
		enumOpt("ssh_protocol", "2", []string{"2"}, s, "Only protocol 2 exists.", func(*Config, string) {}),
		ignored("sshfs_sync", s, "Ignored: writes are sent without waiting for each reply; a write error is reported no later than the next fsync, flush or close of the file."),
		ignored("no_readahead", s, "Ignored: sshfsm reads only what the kernel asks for (including the kernel's own readahead)."),
		ignored("sync_readdir", s, "Ignored."),
		ignored("delay_connect", s, "Ignored: sshfsm always connects before mounting, so that errors are reported by the mount command."),
		ignored("no_check_root", s, "Ignored: the remote directory is always checked before mounting."),
		ignored("auto_cache", s, "Ignored."),
		ignored("noauto_cache", s, "Ignored."),
		ignored("auto_unmount", s, "Ignored: sshfsm unmounts when it gets SIGINT or SIGTERM, but not when killed with SIGKILL."),
		flagOpt("disable_hardlink", s, "link(2) fails with EPERM, as on a file system without hard links (sshfs: for servers whose hard links misbehave). Without it, hard links are made with the hardlink@openssh.com extension when the server offers it.",
			func(c *Config) { c.FUSE.DisableHardlink = true }),
		withAliases(ignored("noforget", s, "Ignored (libfuse): sshfsm keeps inode numbers stable by itself."), "no_rofd_flush"),
		secondsOpt("remember", "", s, false, "Ignored (libfuse).", func(*Config, time.Duration) {}),
		withAliases(unsupported("slave", s, "Not supported: sshfsm starts ssh itself."), "passive"),
		withAliases(ignored("nonempty", s, "Ignored (FUSE 2): mounting over a non-empty directory is always allowed."),
			"big_writes", "large_read", "hard_remove", "use_ino", "readdir_ino"),
	}
}

// unsupported declares an sshfs option that sshfsm refuses; its help,
// starting with "Not supported: ", is the error message.
func unsupported(name string, sec Section, help string) Option {
	return Option{Name: name, Section: sec, Help: help,
		apply: func(*Config, string) error {
			return errors.New(strings.ToLower(help[:1]) + strings.TrimSuffix(help[1:], "."))
		}}
}

func noiseOptions() []Option {
	s := SecNoise
	noise := func(name string, aliases ...string) Option {
		return withAliases(ignored(name, s, "Ignored."), aliases...)
	}
	comment := stringOpt("comment", "TEXT", "", s, "Ignored.", func(*Config, string) error { return nil })
	// Read by Parse before the other options, like --config.
	config := stringOpt(configOption, "FILE|NAME", "", s,
		"Same as --config FILE|NAME, for fstab and mount(8), which pass options with -o: "+
			"mount what the config file describes. The source field is then a label without ':' "+
			"(sshfsm /mnt/work fuse.sshfsm config=/etc/sshfsm/work.toml,_netdev 0 0). "+
			"A NAME is looked up in the config directory of the user running sshfsm (root at boot): give a path there.",
		func(*Config, string) error { return nil })
	prefix := noise("x-")
	prefix.Prefix = true
	return []Option{
		noise("defaults"),
		noise("auto", "noauto"),
		noise("user", "users", "nouser", "owner", "group"),
		noise("_netdev"),
		noise("nofail"),
		prefix,
		comment,
		config,
	}
}
