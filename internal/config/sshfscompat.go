package config

import (
	"errors"
	"fmt"
	"strings"
)

// SshfsOption is one option of sshfs 3.7.3 or of the libfuse 3.14 it
// mounts with, as an sshfs user writes it.
type SshfsOption struct {
	Args    []string // as given to sshfs: {"-o", "dir_cache=no"} or {"-C"}
	Origin  string   // sshfs, libfuse or mount(8)
	Meaning string   // what it does in sshfs
}

// SshfsOptions are the options sshfs users bring along, in the order of
// sshfs's --help and man page, then libfuse's and mount(8)'s.
func SshfsOptions() []SshfsOption {
	o := func(opt, origin, meaning string) SshfsOption {
		return SshfsOption{Args: []string{"-o", opt}, Origin: origin, Meaning: meaning}
	}
	sw := func(args, meaning string) SshfsOption {
		return SshfsOption{Args: strings.Fields(args), Origin: "sshfs", Meaning: meaning}
	}
	return []SshfsOption{
		sw("-p 2222", "ssh port"),
		sw("-C", "ssh compression"),
		sw("-F /etc/ssh/alt_config", "ssh configuration file"),
		sw("-f", "foreground"),
		sw("-s", "single-threaded"),
		sw("-d", "debug output, foreground"),
		sw("-v", "verbose output"),
		sw("--verbose", "verbose output"),
		o("reconnect", "sshfs", "reconnect to the server"),
		o("delay_connect", "sshfs", "connect at the first access, not at mount"),
		o("sshfs_sync", "sshfs", "synchronous writes"),
		o("no_readahead", "sshfs", "synchronous reads"),
		o("sync_readdir", "sshfs", "synchronous readdir"),
		o("sshfs_debug", "sshfs", "debug output"),
		o("dir_cache=no", "sshfs", "directory cache off"),
		o("dcache_max_size=10000", "sshfs", "directory cache size"),
		o("dcache_timeout=20", "sshfs", "directory cache timeout"),
		o("dcache_stat_timeout=20", "sshfs", "attribute cache timeout"),
		o("dcache_dir_timeout=20", "sshfs", "listing cache timeout"),
		o("dcache_link_timeout=20", "sshfs", "link cache timeout"),
		o("dcache_clean_interval=60", "sshfs", "cache cleaning interval"),
		o("dcache_min_clean_interval=5", "sshfs", "cache cleaning interval"),
		o("workaround=rename", "sshfs", "server bug workarounds"),
		o("idmap=user", "sshfs", "uid and gid translation"),
		o("idmap=file,uidfile=/etc/sshfs/uids", "sshfs", "uid translation file"),
		o("nomap=ignore", "sshfs", "ids missing from the files"),
		o("ssh_command=ssh", "sshfs", "ssh program"),
		o("ssh_protocol=2", "sshfs", "ssh protocol"),
		o("sftp_server=/usr/lib/openssh/sftp-server", "sshfs", "remote sftp-server command"),
		o("directport=7000", "sshfs", "sftp-server over plain TCP"),
		o("slave", "sshfs", "sftp over stdin and stdout"),
		o("passive", "sshfs", "sftp over stdin and stdout"),
		o("disable_hardlink", "sshfs", "link(2) fails"),
		o("transform_symlinks", "sshfs", "absolute links made relative"),
		o("follow_symlinks", "sshfs", "links followed on the server"),
		o("no_check_root", "sshfs", "remote directory not checked at mount"),
		o("password_stdin", "sshfs", "password read from stdin"),
		o("max_conns=4", "sshfs", "ssh connections"),
		o("ServerAliveInterval=15", "sshfs", "any ssh option, passed to ssh"),
		o("Cipher=aes128-ctr", "sshfs", "passed to ssh (SSH protocol 1)"),
		o("kernel_cache", "libfuse", "keep the page cache across opens"),
		o("auto_cache", "libfuse", "drop the page cache when mtime changes"),
		o("noauto_cache", "libfuse", "auto_cache off"),
		o("umask=022", "libfuse", "permissions 0777 less the mask"),
		o("uid=1000", "libfuse", "owner shown"),
		o("gid=1000", "libfuse", "group shown"),
		o("entry_timeout=1", "libfuse", "name cache timeout"),
		o("negative_timeout=1", "libfuse", "negative name cache timeout"),
		o("attr_timeout=1", "libfuse", "attribute cache timeout"),
		o("ac_attr_timeout=1", "libfuse", "auto_cache attribute timeout"),
		o("noforget", "libfuse", "never forget inodes"),
		o("remember=60", "libfuse", "remember inodes"),
		o("no_rofd_flush", "libfuse", "no flush on read-only close"),
		o("direct_io", "libfuse", "bypass the page cache"),
		o("modules=subdir,subdir=projects", "libfuse", "mount a subdirectory"),
		o("modules=iconv,from_code=UTF-8,to_code=ISO-8859-1", "libfuse", "convert file name encoding"),
		o("max_read=131072", "libfuse", "largest read"),
		o("allow_other", "libfuse", "other users may access"),
		o("allow_root", "libfuse", "root may access"),
		o("auto_unmount", "libfuse", "unmount when the daemon dies"),
		o("default_permissions", "libfuse", "kernel checks permissions"),
		o("fsname=backup", "libfuse", "source in mount tables"),
		o("subtype=sshfs", "libfuse", "fuse.TYPE in mount tables"),
		o("debug", "libfuse", "debug output"),
		o("nonempty", "FUSE 2", "mount over a non-empty directory"),
		o("ro", "mount(8)", "read-only"),
		o("noexec", "mount(8)", "no execution"),
		o("noatime", "mount(8)", "no access times"),
		o("sync", "mount(8)", "synchronous writes"),
		o("dirsync", "mount(8)", "synchronous directory changes"),
		o("_netdev", "mount(8)", "network file system (fstab)"),
		o("x-systemd.automount", "mount(8)", "systemd (fstab)"),
	}
}

// Support is how sshfsm takes an sshfs option, found by parsing it.
type Support int

// Ways of support.
const (
	Honoured Support = iota
	IgnoredWithWarning
	Refused
	ForMount // mount(8)'s and fstab's, passed along to sshfsm and meant for them
)

// SupportOf parses opt as sshfsm does and says what it makes of it: the
// reason given for an ignored or refused option. A refusal that is not
// explained ("unknown option") is an error.
func SupportOf(opt SshfsOption) (Support, string, error) {
	c, err := Parse(append(append([]string{}, opt.Args...), "host:", "/mnt"))
	switch {
	case err != nil && strings.Contains(err.Error(), "not supported"):
		return Refused, err.Error(), nil
	case err != nil:
		return 0, "", fmt.Errorf("%s: %w", strings.Join(opt.Args, " "), err)
	case len(c.NoEffect) > 0:
		return IgnoredWithWarning, strings.TrimPrefix(c.NoEffect[0].Why, "Ignored"), nil
	case len(opt.Args) == 2 && opt.Args[0] == "-o" && forMount(opt.Args[1]):
		return ForMount, "", nil
	}
	return Honoured, "", nil
}

// forMount reports whether every option of list is mount(8)'s.
func forMount(list string) bool {
	for _, item := range splitOptions(list) {
		name, _, _ := strings.Cut(item, "=")
		if o, ok := lookup(Options(), name); !ok || o.Section != SecNoise {
			return false
		}
	}
	return true
}

// SshfsCompatDoc returns docs/sshfs-compat.md: how sshfsm takes each
// option of sshfs and libfuse, by parsing it.
func SshfsCompatDoc() (string, error) {
	var b strings.Builder
	b.WriteString("# sshfs compatibility\n\n")
	b.WriteString("<!-- Generated from internal/config; regenerate with: go test ./internal/config -run TestDocs -update -->\n\n")
	b.WriteString("How sshfsm takes the options of sshfs 3.7.3 and of the libfuse 3.14 it mounts with, " +
		"found by parsing each one as sshfsm does. An ignored option is named on stderr at mount; " +
		"a refused one fails the mount with the reason. See [options.md](options.md) for what each does in sshfsm.\n\n")
	b.WriteString("| Option | From | In sshfs | In sshfsm |\n|---|---|---|---|\n")
	var errs []error
	for _, o := range SshfsOptions() {
		s, why, err := SupportOf(o)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		cell := "honoured"
		switch s {
		case IgnoredWithWarning:
			cell = "ignored" + why + " A warning at mount says so."
		case ForMount:
			cell = "accepted for mount(8), no effect on sshfsm"
		case Refused:
			cell = "refused: " + why
		}
		fmt.Fprintf(&b, "| `%s` | %s | %s | %s |\n", md(strings.Join(o.Args, " ")), o.Origin, md(o.Meaning), md(cell))
	}
	return b.String(), errors.Join(errs...)
}
