// Package config turns sshfsm's command line into a typed Config; it holds the
// one declaration of every option, from which parsing, --help, the man page
// and the README option table are all produced.
package config

import (
	"strconv"
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

// Config is one parsed command line.
type Config struct {
	Action     Action
	Branches   []Branch // exactly one today
	Mountpoint string
	Foreground bool
	Debug      bool
	SSH        SSH
	FUSE       FUSE
	Cache      Cache
	Symlinks   Symlinks
	IDMap      IDMap
}

// Branch is one remote directory to mount: [user@]host:[dir].
type Branch struct {
	Spec string // as written on the command line
	User string // "" = ssh decides
	Host string // name, alias or address; IPv6 without brackets
	Dir  string // "" = remote home; relative = under the home
}

// Dest is the branch in sshfs's fsname form, user@host:dir, with IPv6
// addresses in brackets.
func (b Branch) Dest() string {
	h := b.Host
	if needsBrackets(h) {
		h = "[" + h + "]"
	}
	if b.User != "" {
		h = b.User + "@" + h
	}
	return h + ":" + b.Dir
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
}

// SSHOption is one ssh_config(5) keyword and value given with -o.
type SSHOption struct {
	Key   string // canonical spelling, e.g. IdentityFile
	Value string
}

// Args returns the extra ssh arguments: -F, -C and -oKey=Value, in order.
// The port is not among them: it travels separately.
func (s SSH) Args() []string {
	var args []string
	if s.ConfigFile != "" {
		args = append(args, "-F", s.ConfigFile)
	}
	if s.Compression {
		args = append(args, "-C")
	}
	for _, o := range s.Options {
		args = append(args, "-o"+o.Key+"="+o.Value)
	}
	return args
}

// FUSE configures the kernel mount.
type FUSE struct {
	AllowOther         bool
	AllowRoot          bool
	DefaultPermissions bool
	ReadOnly           bool
	UID, GID           *uint32
	Umask              *uint32
	FsName             string // "" = user@host:dir
	Subtype            string
	KernelCache        bool
	DirectIO           bool
	MaxWrite           int
}

// Cache configures how long the kernel and sshfsm trust what they saw.
type Cache struct {
	AttrTimeout     time.Duration
	EntryTimeout    time.Duration
	NegativeTimeout time.Duration
	DirCacheTimeout time.Duration
	PrefetchDepth   int // levels of subdirectories listed ahead of a walk
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
