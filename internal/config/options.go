package config

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"sshfsm/internal/defaults"
)

// Options returns the declaration of every -o option, in documentation order.
func Options() []Option {
	var all []Option
	for _, part := range [][]Option{
		connectionOptions(), branchOptions(), sshOptions(), mountOptions(), cacheOptions(),
		symlinkOptions(), idmapOptions(), compatOptions(), noiseOptions(),
	} {
		all = append(all, part...)
	}
	return all
}

func connectionOptions() []Option {
	s := SecConnection
	return []Option{
		stringOpt("ssh_command", "CMD", "ssh", s,
			"Run CMD instead of ssh. CMD is split into words like a shell does; the ssh arguments follow them.",
			func(c *Config, v string) error {
				w, err := splitWords(v)
				c.SSH.Command = w
				return err
			}),
		stringOpt("sftp_server", "SERV", "", s,
			"Run the remote command SERV (e.g. /usr/lib/openssh/sftp-server, or \"sudo /usr/lib/openssh/sftp-server\") instead of requesting the sftp subsystem.",
			func(c *Config, v string) error { c.SSH.SFTPServer = v; return nil }),
		intOpt("directport", "PORT", "", s, 1, 65535,
			"Connect with plain TCP to an sftp-server listening on PORT of the host, without ssh and without encryption.",
			func(c *Config, n int) { c.SSH.DirectPort = n }),
		intOpt("max_conns", "N", strconv.Itoa(defaults.Conns), s, 1, maxConnsLimit,
			"Number of SFTP channels (ssh connections) per host; requests are spread over them. The first opens at mount, the others when work queues up or a large read can be split.",
			func(c *Config, n int) { c.SSH.MaxConns = n }),
		secondsOpt("timeout", seconds(defaults.Timeout), s, true,
			"Limit of every request to the server; when it passes, the operation fails with ETIMEDOUT (Connection timed out) instead of hanging, and the channel is replaced.",
			func(c *Config, d time.Duration) { c.SSH.Timeout = d }),
		withNot(withDefault(flagOpt("reconnect", s,
			"Reconnect to the server when a channel breaks (default).",
			func(c *Config) { c.SSH.Reconnect = true }), "on"), "noreconnect"),
		withNot(flagOpt("noreconnect", s,
			"Do not reconnect: once the connection is lost, operations fail.",
			func(c *Config) { c.SSH.Reconnect = false }), "reconnect"),
		flagOpt("password_stdin", s,
			"Read a password from standard input (its first line) and give it to ssh whenever ssh asks for a password, at the mount and at every reconnection, through SSH_ASKPASS (OpenSSH 8.4 or later); "+
				"every host of the mount gets the same password. Only prompts naming the account mounted (user@host's password) are answered: a jump host's (ProxyJump, ProxyCommand) never gets it. Other questions of ssh (an unknown host key, a key's passphrase, a one-time code) are left unanswered, so they fail.",
			func(c *Config) { c.SSH.PasswordStdin = true }),
	}
}

// maxConnsLimit is the most SFTP channels per host.
const maxConnsLimit = 64

// CreatePolicies are the values of create=, mergerfs' names.
var CreatePolicies = []string{"epff", "ff", "mfs", "lfs", "rand"}

func branchOptions() []Option {
	s := SecBranch
	return []Option{
		enumOpt("create", "epff", CreatePolicies, s,
			"Which union branch a new file, directory or link goes to; read-only branches are never chosen. "+
				"epff: the first branch, in the order given, where the parent directory exists; "+
				"ff: the first branch; mfs and lfs: the branch with the most or the least free space; rand: any branch. "+
				"Except with epff, missing parent directories are created on the chosen branch.",
			func(c *Config, v string) { c.Union.Create = v }),
		flagOpt("require_all", s,
			"Refuse to mount unless every branch can be reached (a branch served by replicas, when one of them can). "+
				"Without it, the mount goes ahead when at least one branch can be reached.",
			func(c *Config) { c.RequireAll = true }),
	}
}

func sshOptions() []Option {
	s := SecSSH
	port := intOpt("port", "PORT", "", s, 1, 65535,
		"Port of the ssh server; same as -p PORT.",
		func(c *Config, n int) { c.SSH.Port = n })
	port.Fold = true
	return []Option{port}
}

func mountOptions() []Option {
	s := SecMount
	return append([]Option{
		flagOpt("allow_other", s, "Allow other users to access the mount (needs user_allow_other in /etc/fuse.conf unless root). "+
			"Implies default_permissions: the kernel checks every access, yours too, against the modes and owners shown, "+
			"so show your remote files as yours (idmap=user, or uid= and gid=). "+
			"Where the server's account is root, a new file gets the uid and gid of the local user who made it, as on a local disk.",
			func(c *Config) { c.FUSE.AllowOther = true }),
		flagOpt("allow_root", s, "Allow root, besides the mounting user, to access the mount; other users get EACCES (Permission denied). "+
			"As with libfuse, the kernel is told allow_other (so it needs user_allow_other in /etc/fuse.conf unless root) and sshfsm turns the other users away.",
			func(c *Config) { c.FUSE.AllowRoot = true }),
		withNot(flagOpt("default_permissions", s, "Let the kernel check permissions from the file modes before asking the server (implied by allow_other).",
			func(c *Config) { c.FUSE.DefaultPermissions, c.FUSE.NoDefaultPermissions = true, false }), "nodefault_permissions"),
		withNot(flagOpt("nodefault_permissions", s,
			"Leave every permission check to the server, even with allow_other: then any local user reads and writes "+
				"whatever the remote user may, whatever the file modes show. sshfsm warns at mount.",
			func(c *Config) { c.FUSE.DefaultPermissions, c.FUSE.NoDefaultPermissions = false, true }), "default_permissions"),
		withNot(flagOpt("ro", s, "Mount read-only.", func(c *Config) { c.FUSE.ReadOnly = true }), "rw"),
		withNot(withDefault(flagOpt("rw", s, "Mount read-write (default).", func(c *Config) { c.FUSE.ReadOnly = false }), "on"), "ro"),
		withNot(flagOpt("noexec", s, "Do not let programs on the mount be executed (mount(8); fstab's user and users imply it).",
			mountFlag("noexec")), "exec"),
		withNot(flagOpt("exec", s, "Let programs on the mount be executed (default).", mountFlag("exec")), "noexec"),
		withAliases(ignored("nosuid", s, "Always on: the mount ignores set-user-ID and set-group-ID bits."), "suid"),
		withAliases(ignored("nodev", s, "Always on: device files on the mount cannot be opened."), "dev"),
		withNot(flagOpt("sync", s, "Synchronous writes (mount(8)).", mountFlag("sync")), "async"),
		withNot(flagOpt("async", s, "Asynchronous writes (default).", mountFlag("async")), "sync"),
		flagOpt("dirsync", s, "Synchronous directory changes (mount(8)).", mountFlag("dirsync")),
		idOpt("uid", s, "Show every file as owned by user id N.",
			func(c *Config, n uint32) { c.FUSE.UID = &n }),
		idOpt("gid", s, "Show every file as owned by group id N.",
			func(c *Config, n uint32) { c.FUSE.GID = &n }),
		octalOpt("umask", s, "Show every file with the permissions 0777 less these bits (octal), whatever the server stores, as sshfs and libfuse do: umask=022 shows rwxr-xr-x everywhere.",
			func(c *Config, n uint32) { c.FUSE.Umask = &n }),
		stringOpt("fsname", "NAME", "", s, "Name of the filesystem in mount tables (default: user@host:dir, as given).",
			func(c *Config, v string) error { c.FUSE.FsName = v; return nil }),
		stringOpt("subtype", "TYPE", "sshfsm", s, "Filesystem subtype: mount tables show fuse.TYPE.",
			func(c *Config, v string) error { c.FUSE.Subtype = v; return nil }),
		flagOpt("kernel_cache", s, "Keep file contents in the kernel page cache at every open; by default they are kept only while the file's size and mtime are unchanged. Either way, a new size or mtime that the kernel sees drops them.",
			func(c *Config) { c.FUSE.KernelCache = true }),
		flagOpt("direct_io", s, "Bypass the kernel page cache: every read and write goes to the server.",
			func(c *Config) { c.FUSE.DirectIO = true }),
		flagOpt("xattr", s, "Serve the extended attributes user.sshfsm.sha256 (the SHA-256 of a file's content, from the disk cache, sha256sum on the server or by reading the file) and user.sshfsm.host (the host serving it). Off by default: with it, the kernel asks for each file's ACL during ls -l.",
			func(c *Config) { c.FUSE.Xattr = true }),
		intOpt("max_write", "BYTES", "1048576", s, 4096, 1<<20, "Largest write the kernel sends in one request.",
			func(c *Config, n int) { c.FUSE.MaxWrite = n }),
		stringOpt("log", "FILE", "", s,
			"Append the log to FILE instead of syslog (in the background; nowhere without /dev/log) or stderr (with -f or -d). "+
				"Once mounted, it holds warnings, errors and state changes: hosts going down and up, reconnections; sshfsm status says where it goes.",
			func(c *Config, v string) error { c.LogFile = v; return nil }),
		stringOpt("metrics", "ADDR", "", s,
			"Serve Prometheus metrics (requests by type and host, latency histograms, bytes, errors, reconnects, cache hits, "+
				"requests in flight) at http://ADDR/metrics. ADDR is HOST:PORT, e.g. 127.0.0.1:9101 ([::1]:9101 for IPv6), "+
				"or unix:PATH for a unix socket (its permissions follow the umask). A HOST that is not loopback (or none: every address) "+
				"makes the metrics readable by anyone who can reach it; the mount warns. An address that cannot be bound fails the mount; "+
				"the listener closes with the mount.",
			func(c *Config, v string) error {
				m, err := parseMetrics(v)
				c.Metrics = m
				return err
			}),
		withAliases(flagOpt("debug", s, "Log every request to stderr and stay in the foreground; same as -d.",
			func(c *Config) { c.Debug = true; c.Foreground = true }), "sshfs_debug"),
	}, atimeOptions()...)
}

// atimeOptions declares mount(8)'s access time flags, each passed to the
// kernel as given.
func atimeOptions() []Option {
	var opts []Option
	for _, pair := range [][2]string{{"noatime", "atime"}, {"nodiratime", "diratime"},
		{"relatime", "norelatime"}, {"strictatime", "nostrictatime"}, {"lazytime", "nolazytime"}} {
		for i, name := range pair {
			opts = append(opts, withNot(flagOpt(name, SecMount, "Access times, as mount(8) says; passed to the kernel.",
				mountFlag(name)), pair[1-i]))
		}
	}
	return opts
}

func cacheOptions() []Option {
	s := SecCache
	return []Option{
		secondsOpt("attr_timeout", seconds(defaults.CacheTimeout), s, false, "How long file attributes are trusted.",
			func(c *Config, d time.Duration) { c.Cache.AttrTimeout = d }),
		secondsOpt("entry_timeout", seconds(defaults.CacheTimeout), s, false, "How long the name-to-file association of a lookup is trusted.",
			func(c *Config, d time.Duration) { c.Cache.EntryTimeout = d }),
		secondsOpt("negative_timeout", seconds(defaults.CacheTimeout), s, false, "How long a name that was not found is remembered as missing.",
			func(c *Config, d time.Duration) { c.Cache.NegativeTimeout = d }),
		secondsOpt("dcache_timeout", seconds(defaults.CacheTimeout), s, false, "How long directory listings are trusted.",
			func(c *Config, d time.Duration) { c.Cache.DirCacheTimeout = d }),
		intOpt("prefetch_depth", "N", strconv.Itoa(defaults.PrefetchDepth), s, 0, 16,
			"List subdirectories ahead of a walk (find, git status, builds) in the background: one level below a directory read, N levels once the walk uses what was listed ahead; 0 turns this off.",
			func(c *Config, n int) { c.Cache.PrefetchDepth = n }),
		secondsOpt("cache_timeout", "", s, false, "Set attr_timeout, entry_timeout, negative_timeout and dcache_timeout at once.",
			func(c *Config, d time.Duration) { c.Cache.setAll(d) }),
		enumOpt("watch", "auto", []string{"auto", "yes", "writes", "no"}, s,
			"Push changes made on the servers directly (an editor, a build or git there) to the mount within a second, whatever the timeouts: "+
				"inotifywait (inotify-tools) runs on each server and the mount drops what it holds of the paths reported. "+
				"It pushes new, removed and renamed names, attribute changes, and contents once the writer closes the file. "+
				"auto watches every tree except those on a network or cluster file system of the server (NFS, Lustre, GPFS, CephFS, BeeGFS, SMB, FUSE…): "+
				"inotify there sees only that server's own changes, not other clients', and watching walks every directory of the tree. "+
				"yes watches those too; writes, as yes, also pushes every write to a file kept open (a log being appended) and truncate(2), "+
				"at the cost of a wakeup of the watcher on the server per write, those made through the mount included. "+
				"Where it cannot run (not installed, no shell on the server, directport, the inotify watch limit), the timeouts apply; "+
				"sshfsm status says so. On a large tree, changes are pushed once the watcher has set up its watches.",
			func(c *Config, v string) {
				c.Watch, c.WatchWrites, c.WatchNetwork = v != "no", v == "writes", v == "yes" || v == "writes"
			}),
		enumOpt("cache", "auto", []string{"auto", "immutable", "strict", "yes", "no"}, s,
			"Coherence mode. auto: attributes and listings are trusted for their timeouts; every open asks the server for size and mtime and reuses cached content only when they are unchanged (close-to-open consistency, as NFS); a new mount checks the listings kept on disk with one remote find per host before answering from them. immutable: the tree never changes (release trees, read-only data): nothing is revalidated once known (every timeout is a year, unless set after it). strict: no content is reused across opens without revalidation, and a file's attributes always come from the server (attr_timeout=0, unless set after it); for trees edited from both sides. yes is auto; no caches nothing (cache_timeout=0 and nodisk_cache).",
			func(c *Config, v string) {
				c.Cache.Mode = v
				if v == "yes" {
					c.Cache.Mode = "auto"
				}
				if v == "immutable" {
					c.Cache.setAll(immutableTimeout)
				}
				if v == "strict" {
					c.Cache.AttrTimeout = 0
				}
				if v == "no" {
					c.Cache.Mode = "auto"
					c.Cache.setAll(0)
					c.Cache.Disk = false
				}
			}),
		withNot(withDefault(flagOpt("disk_cache", s, "Keep file contents read from the servers, and directory listings, on local disk in cache_dir, across mounts and restarts (default).",
			func(c *Config) { c.Cache.Disk = true }), "on"), "nodisk_cache"),
		withNot(flagOpt("nodisk_cache", s, "Keep no file contents or listings on local disk.",
			func(c *Config) { c.Cache.Disk = false }), "disk_cache"),
		stringOpt("cache_dir", "DIR", "", s, "Directory of the disk cache (default: $XDG_CACHE_HOME/sshfsm, else ~/.cache/sshfsm).",
			func(c *Config, v string) error { c.Cache.Dir = v; return nil }),
		stringOpt("cache_max_size", "SIZE", "10G", s, "Most bytes of file contents the disk cache keeps, least recently used dropped first; K, M, G, T suffixes (powers of 1024). The cache also always leaves 5% of its filesystem free (at most 10 GiB on a large one).",
			func(c *Config, v string) error {
				n, err := parseSize(v)
				c.Cache.MaxSize = n
				return err
			}),
	}
}

func symlinkOptions() []Option {
	s := SecSymlinks
	return []Option{
		flagOpt("follow_symlinks", s, "Follow symbolic links on the server: they appear as the files they point to.",
			func(c *Config) { c.Symlinks.Follow = true }),
		flagOpt("transform_symlinks", s, "Rewrite absolute symbolic links that point inside the mounted directory into relative ones.",
			func(c *Config) { c.Symlinks.Transform = true }),
		withNot(withDefault(flagOpt("contain_symlinks", s, "Refuse to follow symbolic links that lead outside the mount (default).",
			func(c *Config) { c.Symlinks.Contain = true }), "on"), "nocontain_symlinks"),
		withNot(withAliases(flagOpt("nocontain_symlinks", s, "Show every symbolic link target as the server stores it.",
			func(c *Config) { c.Symlinks.Contain = false }), "no_contain_symlinks"), "contain_symlinks"),
	}
}

func idmapOptions() []Option {
	s := SecIDMap
	return []Option{
		enumOpt("idmap", "none", []string{"none", "user", "file"}, s,
			"How uids and gids are translated: none leaves them as the server reports them; user shows the remote user's uid and gid (the owner of the remote home) as the local user's, and chown to the local user sets the remote user's; file uses uidfile and gidfile.",
			func(c *Config, v string) { c.IDMap.Mode = IDMapMode(v) }),
		stringOpt("uidfile", "FILE", "", s, "With idmap=file: lines of name:remote_uid, name being a local user name.",
			func(c *Config, v string) error { c.IDMap.UIDFile = v; return nil }),
		stringOpt("gidfile", "FILE", "", s, "With idmap=file: lines of name:remote_gid, name being a local group name.",
			func(c *Config, v string) error { c.IDMap.GIDFile = v; return nil }),
		enumOpt("nomap", "error", []string{"ignore", "error"}, s,
			"With idmap=file, remote ids missing from the files: ignore shows them unchanged; error shows them as the overflow id 65534 (nobody).",
			func(c *Config, v string) { c.IDMap.NoMapOK = v == "ignore" }),
	}
}

func withDefault(o Option, def string) Option { o.Default = def; return o }

func withAliases(o Option, names ...string) Option { o.Aliases = names; return o }

func withNot(o Option, not string) Option { o.Not = not; return o }

// mountFlag records a generic mount(8) flag, in order: the last of a pair
// (exec, noexec) wins.
func mountFlag(name string) func(*Config) {
	return func(c *Config) { c.FUSE.MountFlags = append(c.FUSE.MountFlags, name) }
}

// immutableTimeout is how long cache=immutable trusts what it saw: the
// life of any mount.
const immutableTimeout = 365 * 24 * time.Hour

func (c *Cache) setAll(d time.Duration) {
	c.AttrTimeout, c.EntryTimeout, c.NegativeTimeout, c.DirCacheTimeout = d, d, d, d
}

// workarounds are the names sshfs accepts in workaround=LIST.
var workarounds = []string{"none", "all", "rename", "renamexdev", "truncate", "buflimit", "fstat", "createmode", "nodelaysrv"}

func checkWorkarounds(list string) error {
	for _, w := range strings.Split(list, ":") {
		name := strings.TrimPrefix(w, "no")
		ok := false
		for _, known := range workarounds {
			ok = ok || name == known || w == known
		}
		if !ok {
			return fmt.Errorf("unknown workaround %q", w)
		}
	}
	return nil
}
