package config

import (
	"errors"
	"fmt"
	"path"
	"strings"
	"time"
)

// compatOptions are sshfs's and libfuse's options. Those whose help starts
// with "Ignored" have no effect, and the mount says so on stderr.
func compatOptions() []Option {
	opts := compatDecls()
	for i := range opts {
		opts[i].NoEffect = strings.HasPrefix(opts[i].Help, "Ignored")
	}
	return opts
}

func compatDecls() []Option {
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
		flagOpt("delay_connect", s, "Mount at once and connect at the first access, as sshfs does (for fstab and automount while the network comes up). "+
			"That access waits for the connection up to timeout= and fails, if it cannot connect, with ETIMEDOUT, EHOSTUNREACH (refused or no route), ENOENT (no remote directory) or EIO (authentication: see the log); "+
			"later accesses try again, at most once a second (of several hosts, one that failed is left out until it answers, as one unreachable at mount). The mount has left the terminal by then, so ssh cannot prompt: it runs in BatchMode (use a key, an agent or password_stdin). "+
			"Not with idmap=user or transform_symlinks, which need the server at mount.",
			func(c *Config) { c.SSH.DelayConnect = true }),
		flagOpt("no_check_root", s, "Do not check at mount that the remote directory exists: a missing one mounts, and accesses fail with ENOENT until it is created.",
			func(c *Config) { c.SSH.NoCheckRoot = true }),
		ignored("auto_cache", s, "Ignored."),
		ignored("noauto_cache", s, "Ignored."),
		flagOpt("auto_unmount", s, "Unmount when sshfsm ends, even killed (SIGKILL, the OOM killer), instead of leaving \"Transport endpoint is not connected\": as with libfuse, fusermount3 mounts and stays behind to unmount. Without it, sshfsm unmounts when it gets SIGINT or SIGTERM.",
			func(c *Config) { c.FUSE.AutoUnmount = true }),
		flagOpt("disable_hardlink", s, "link(2) fails with EPERM, as on a file system without hard links (sshfs: for servers whose hard links misbehave). Without it, hard links are made with the hardlink@openssh.com extension when the server offers it.",
			func(c *Config) { c.FUSE.DisableHardlink = true }),
		ignored("noforget", s, "Ignored (libfuse): sshfsm keeps inode numbers stable by itself."),
		ignored("no_rofd_flush", s, "Ignored (libfuse): the flush of a file opened read-only asks nothing of the server anyway."),
		secondsOpt("remember", "", s, false, "Ignored (libfuse).", func(*Config, time.Duration) {}),
		withAliases(unsupported("slave", s, "Not supported: sshfsm starts ssh itself."), "passive"),
		flagOpt("sshfs_verbose", s, "Same as -v.", func(c *Config) { c.Verbose = true }),
		intOpt("max_read", "BYTES", "", s, 1, 1<<31-1,
			"Ignored (libfuse): the kernel's reads are at most max_write bytes.", func(*Config, int) {}),
		secondsOpt("ac_attr_timeout", "", s, false,
			"Ignored (libfuse, with auto_cache): every open checks the size and mtime of the file (see cache=).",
			func(*Config, time.Duration) {}),
		stringOpt("modules", "subdir", "", s,
			"libfuse's stacked modules: subdir, with subdir=DIR, is honoured; iconv is not supported (names are shown as the server stores them: convert them there, e.g. with convmv).",
			func(_ *Config, v string) error { return checkModules(v) }),
		stringOpt("subdir", "DIR", "", s,
			"Mount DIR below each branch's directory instead of it (libfuse's modules=subdir,subdir=DIR); a leading / is ignored, as libfuse's subdir is always below.",
			func(c *Config, v string) error { c.Subdir = v; return nil }),
		withAliases(unsupportedValue("from_code", s, "Not supported: it goes with modules=iconv, which sshfsm does not have."), "to_code"),
		foldOpt(stringOpt("Cipher", "NAME", "", s,
			"Ignored: the cipher of SSH protocol 1, which ssh no longer speaks; give Ciphers=LIST.",
			func(*Config, string) error { return nil })),
		withAliases(ignored("nonempty", s, "Ignored (FUSE 2): mounting over a non-empty directory is always allowed."),
			"big_writes", "large_read", "hard_remove", "use_ino", "readdir_ino"),
	}
}

// unsupported declares an sshfs option that sshfsm refuses; its help,
// starting with "Not supported: ", is the error message.
func unsupported(name string, sec Section, help string) Option {
	return Option{Name: name, Section: sec, Help: help,
		apply: func(*Config, string) error { return helpError(help) }}
}

// unsupportedValue is unsupported for an option written name=VALUE.
func unsupportedValue(name string, sec Section, help string) Option {
	o := unsupported(name, sec, help)
	o.Arg = "VALUE"
	return o
}

func helpError(help string) error {
	return errors.New(strings.ToLower(help[:1]) + strings.TrimSuffix(help[1:], "."))
}

func foldOpt(o Option) Option { o.Fold = true; return o }

// checkModules accepts the libfuse modules sshfsm has: subdir.
func checkModules(list string) error {
	for _, m := range strings.Split(list, ":") {
		switch m {
		case "subdir":
		case "iconv":
			return errors.New("iconv is not supported: names are shown as the server stores them (convert them there, e.g. with convmv)")
		default:
			return fmt.Errorf("unknown module %q (sshfsm has subdir)", m)
		}
	}
	return nil
}

// applySubdir moves every branch to subdir= below its directory: libfuse's
// subdir module prefixes every path, so the subdirectory is below the
// mounted one even when written with a leading '/'.
func applySubdir(c *Config) {
	sub := strings.Trim(c.Subdir, "/")
	if sub == "" {
		return
	}
	for i := range c.Branches {
		b := &c.Branches[i]
		switch {
		case b.Dir == "":
			b.Dir = path.Clean(sub)
		default:
			b.Dir = path.Join(b.Dir, sub)
		}
	}
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
