// Package config turns sshfsm's command line, and the config file it may
// name, into a typed Config; it holds the one declaration of every option,
// branch form and config file key, from which parsing, --help, the man page
// and docs/options.md are all produced.
//
// The data model: a Config holds Branches in priority order. A Branch is a
// union branch (Name "") or a graft (Name set), served by one Endpoint or by
// several replicas, possibly ReadOnly. An Endpoint is one host with the
// settings the config file gives that host alone (zero: the global ones in
// Config.SSH); SSHArgs, PortOf and MaxConnsOf give what to run ssh with.
// Errors are *Error, one line with the exit status (exit.go).
package config

import (
	"strconv"
	"strings"
	"time"
)

// Action is what the command was asked to do.
type Action int

// Actions, in the order a command line's switches take precedence.
const (
	ActionMount Action = iota
	ActionHelp
	ActionVersion
	ActionMan
)

// Config is one parsed command line, with the config file it names.
//
// Branches are in priority order (the first is the highest); union branches
// (Name "") and grafts may be mixed. Settings given for one host (Endpoint)
// win over the global ones in SSH; see SSHArgs, PortOf and MaxConnsOf.
type Config struct {
	Action     Action
	Branches   []Branch // at least one when Action is ActionMount
	Mountpoint string
	File       string // the config file read (--config), absolute; "" for none
	Foreground bool
	Debug      bool
	Verbose    bool   // -v, sshfs_verbose: log state changes, not only warnings
	LogFile    string // log=: where the log goes instead of syslog or stderr
	// Metrics (metrics=) is where Prometheus metrics are served; its
	// Network is "" when they are not.
	Metrics Metrics
	// NoEffect are the options given that are accepted but ignored, in
	// order, for the warning at mount.
	NoEffect []NoEffect
	// Subdir (subdir=, libfuse's subdir module) is a directory below each
	// branch's directory, mounted instead of it.
	Subdir     string
	RequireAll bool // require_all: every branch must be reachable to mount
	Watch      bool // watch=auto|yes|writes: changes made on the servers are pushed to the mount
	// WatchWrites (watch=writes): every write and truncation is pushed,
	// not only files closed after writing.
	WatchWrites bool
	// WatchNetwork (watch=yes|writes): trees on a network file system of
	// the server are watched too.
	WatchNetwork bool
	Union        Union
	SSH          SSH
	FUSE         FUSE
	Cache        Cache
	Symlinks     Symlinks
	IDMap        IDMap
}

// Metrics is the listener of metrics=: "tcp" and host:port, or "unix"
// and a socket path.
type Metrics struct {
	Network, Address string
}

// NoEffect is an option given that has no effect, and why.
type NoEffect struct {
	Name, Why string
}

// Union configures how union branches share the mount's root.
type Union struct {
	Create string // create=: epff (default), ff, mfs, lfs or rand
}

// Branch is one remote directory of the mount:
// [NAME=][user@]host[,[user@]host...]:[dir][:ro] on the command line, or one
// [[branch]] table of the config file.
type Branch struct {
	Spec     string     // as written, or "FILE:LINE" of its [[branch]]; for messages
	Name     string     // graft name: the branch appears as MOUNTPOINT/Name; "" for a union branch
	Hosts    []Endpoint // one, or several replicas (hosts seeing the same storage) in the order given
	Dir      string     // "" = remote home; relative = under the home
	ReadOnly bool       // :ro or ro = true
}

// Endpoint is one host serving a branch, with the settings that the config
// file gives for that host alone. Zero values mean "the global setting".
type Endpoint struct {
	User       string   // "" = ssh decides (config or local user)
	Host       string   // name, alias or address; IPv6 without brackets
	Port       int      // 0 = the global -p / port=, else ssh decides
	SSHConfig  string   // ssh_config file of this host; "" = the global -F
	SSHOptions []string // extra "-oKeyword=value" for this host only
	MaxConns   int      // 0 = the global max_conns
}

// Dest is the endpoint as ssh destinations are written in sshfs's fsname
// form: [user@]host, IPv6 addresses in brackets.
func (e Endpoint) Dest() string {
	h := e.Host
	if needsBrackets(h) {
		h = "[" + h + "]"
	}
	if e.User != "" {
		h = e.User + "@" + h
	}
	return h
}

// Dest is the branch in command-line form; ParseBranch reads it back
// (per-host settings of the config file aside).
func (b Branch) Dest() string {
	var s strings.Builder
	if b.Name != "" {
		s.WriteString(b.Name + "=")
	}
	for i, e := range b.Hosts {
		if i > 0 {
			s.WriteByte(',')
		}
		s.WriteString(e.Dest())
	}
	s.WriteString(":" + escapeDir(b.Dir))
	if b.ReadOnly {
		s.WriteString(":ro")
	}
	return s.String()
}

// SSH configures how each host is reached.
type SSH struct {
	Command     []string // ssh_command=, split into words; default ssh
	ConfigFile  string   // -F
	Compression bool     // -C
	Port        int      // -p, -o port=; 0 = ssh decides
	Options     []SSHOption
	SFTPServer  string
	DirectPort  int
	MaxConns    int
	Timeout     time.Duration
	Reconnect   bool
	// DelayConnect (delay_connect): mount without connecting; each host
	// is dialled, without prompts, at the first access that needs it.
	DelayConnect bool
	// NoCheckRoot (no_check_root): a missing remote directory mounts.
	NoCheckRoot bool
	// PasswordStdin: password_stdin; the command reads Password from
	// standard input before connecting.
	PasswordStdin bool
	Password      string
}

// SSHOption is one ssh_config(5) keyword and value given with -o.
type SSHOption struct {
	Key   string // canonical spelling, e.g. IdentityFile
	Value string
}

// FUSE configures the kernel mount.
type FUSE struct {
	AllowOther         bool
	AllowRoot          bool
	DefaultPermissions bool
	// NoDefaultPermissions: nodefault_permissions, which keeps
	// allow_other from implying default_permissions.
	NoDefaultPermissions bool
	ReadOnly             bool
	// MountFlags are mount(8)'s generic flags (noexec, noatime, sync...)
	// in the order given; the last of a pair wins.
	MountFlags  []string
	UID, GID    *uint32
	Umask       *uint32
	FsName      string // "" = user@host:dir
	Subtype     string
	KernelCache bool
	DirectIO    bool
	MaxWrite    int
	Xattr       bool
	// AutoUnmount: unmount when the daemon ends, even killed (auto_unmount).
	AutoUnmount bool
	// DisableHardlink makes link(2) fail with EPERM (disable_hardlink).
	DisableHardlink bool
}

// Cache configures how long the kernel and sshfsm trust what they saw.
type Cache struct {
	AttrTimeout     time.Duration
	EntryTimeout    time.Duration
	NegativeTimeout time.Duration
	DirCacheTimeout time.Duration
	PrefetchDepth   int    // levels of subdirectories listed ahead of a walk
	Mode            string // coherence mode: auto, immutable or strict
	Disk            bool   // keep contents on local disk
	Dir             string // the disk cache's directory; "" = the default
	MaxSize         int64  // bytes of contents on disk
}

// Symlinks configures how symbolic links are presented.
type Symlinks struct {
	Follow    bool
	Transform bool
	Contain   bool
}

// IDMapMode selects how uids and gids are translated.
type IDMapMode string

// ID mapping modes.
const (
	IDMapNone IDMapMode = "none"
	IDMapUser IDMapMode = "user"
	IDMapFile IDMapMode = "file"
)

// IDMap configures uid/gid translation.
type IDMap struct {
	Mode    IDMapMode
	UIDFile string
	GIDFile string
	NoMapOK bool // nomap=ignore: unmapped ids pass through unchanged
}

func needsBrackets(host string) bool {
	for _, r := range host {
		if r == ':' {
			return true
		}
	}
	return false
}

func itoa(n int) string { return strconv.Itoa(n) }
