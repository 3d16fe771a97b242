package config

import (
	"fmt"
	"strings"
)

// Prose shared by --help, the man page and docs/options.md.
const (
	usageLine       = "sshfsm [options] BRANCH... MOUNTPOINT"
	configUsageLine = "sshfsm [options] --config FILE|NAME [MOUNTPOINT]"
	summaryLine     = "mount remote directories of one or several hosts over SSH (SFTP)"
)

func descriptionParas() []string {
	return []string{
		"sshfsm mounts remote directories at MOUNTPOINT, over the SFTP subsystem of their hosts' ssh servers: " +
			"one directory as sshfs does, or several branches of several hosts in one tree (see BRANCHES). " +
			"It runs the system ssh, so ~/.ssh/config, agents, ProxyJump, ControlMaster and password prompts work as with ssh. " +
			"It accepts the options and habits of sshfs.",
		"Without dir, the remote home directory is mounted; a relative dir is relative to it. " +
			"IPv6 addresses are written in brackets: [::1]:dir, user@[fe80::1%eth0]:dir.",
		"sshfsm returns once the mount answers, leaving a background process to serve it, " +
			"or exits with one line on stderr and a non-zero status (see EXIT STATUS). " +
			"With -f or -d it stays in the foreground. Unmount with fusermount3 -u mountpoint " +
			"(or umount as root), or send SIGINT or SIGTERM to the sshfsm process.",
		"Requests never hang: each one is limited by timeout=, after which it fails with ETIMEDOUT (Connection timed out).",
	}
}

// BranchForm is one form of the BRANCH argument.
type BranchForm struct {
	Form, Help string
}

// BranchForms returns the forms of BRANCH, in documentation order.
func BranchForms() []BranchForm {
	return []BranchForm{
		{"[user@]host:[dir]", "A union branch. The union shows the files of all its branches in one tree; " +
			"where several hold a name, the first branch given wins, and new files go where create= says."},
		{"NAME=[user@]host:[dir]", "A graft: the directory appears as MOUNTPOINT/NAME, hiding any NAME of the union. " +
			"NAME is one file name; '=' names a graft only before the first ':'."},
		{"[user@]host1,[user@]host2,...:dir", "One branch served by replicas, hosts that see the same storage " +
			"(gateways of one cluster filesystem): reads spread over them, and when one fails another takes over. " +
			"Union or graft alike: NAME=gw1,gw2:/lustre/project/FOO."},
		{"...:dir:ro", "A read-only branch: nothing on it is changed, and new files go to other branches. " +
			":rw, the default, may be written too."},
	}
}

// branchParas is the prose of BRANCHES after the forms.
func branchParas() []string {
	return []string{
		"The end of a branch carries its mode: a trailing :ro or :rw is the mode, then one trailing ':' is removed. " +
			"So a directory whose name ends in :ro, :rw or ':' is written with one more ':' at the end " +
			"(host:/data/x:ro: is the directory /data/x:ro, read-write), and host::ro is the remote home, read-only. " +
			"Other colons, and '=', ',' and '@' after the first ':', are part of dir.",
		"By default the mount goes ahead when at least one branch can be reached (require_all refuses it otherwise). " +
			"Union and graft branches may be mixed; a config file (--config) describes the same and more: " +
			"ssh settings per host (see CONFIGURATION FILE).",
	}
}

func fstabParas() []string {
	return []string{
		"sshfsm can be mounted by mount(8) with the type fuse.sshfsm; mount.fuse3 then runs " +
			"sshfsm source mountpoint -o options. An /etc/fstab line:",
	}
}

const fstabExample = "alice@example.org:/srv/data  /mnt/data  fuse.sshfsm  noauto,user,_netdev,reconnect,IdentityFile=/home/alice/.ssh/id_ed25519  0  0"

func examples() [][2]string {
	return [][2]string{
		{"sshfsm alice@example.org:projects ~/mnt", "Mount ~alice/projects of example.org at ~/mnt."},
		{"sshfsm -p 2222 -o IdentityFile=~/.ssh/work,ro [2001:db8::7]:/srv ~/mnt", "Mount /srv read-only from an IPv6 host listening on port 2222."},
		{"sshfsm -o ProxyJump=gateway,max_conns=8 build:/data /mnt/data", "Reach build through gateway with 8 parallel SFTP channels."},
		{"sshfsm build:/srv/src bob@archive:/data/src:ro ~/src", "The union of /srv/src on build and /data/src on archive, read-only; build's files win."},
		{"sshfsm -o create=mfs FOO=gw1,gw2:/lustre/project/FOO ~/mnt", "Mount FOO, served by gw1 and gw2, as ~/mnt/FOO."},
		{"sshfsm --config work", "Mount what ~/.config/sshfsm/work.toml describes."},
		{"fusermount3 -u ~/mnt", "Unmount."},
	}
}

// wrap breaks text into lines of at most width bytes, each prefixed by indent.
func wrap(text string, indent string, width int) []string {
	var lines []string
	line := indent
	for _, w := range strings.Fields(text) {
		if len(line) > len(indent) && len(line)+1+len(w) > width {
			lines = append(lines, line)
			line = indent
		}
		if len(line) > len(indent) {
			line += " "
		}
		line += w
	}
	return append(lines, line)
}

// optionNames is the option and its aliases as written in docs.
func optionNames(o Option) string {
	return strings.Join(append([]string{o.Usage()}, o.Aliases...), ", ")
}

// helpWithDefault is the option's help followed by its default, if any.
func helpWithDefault(o Option) string {
	switch {
	case o.Default == "" || o.Section == SecCompat:
		return o.Help
	case o.Default == "on":
		return o.Help
	case strings.Contains(o.Help, "(default"):
		return o.Help
	}
	return fmt.Sprintf("%s (default: %s)", o.Help, o.Default)
}

// switchNames is the switch as written in docs: -d, --debug or -p PORT.
func switchNames(s Switch) string {
	n := strings.Join(s.Names, ", ")
	if s.Arg != "" {
		n += " " + s.Arg
	}
	return n
}

func optionsIn(sec Section) []Option {
	var out []Option
	for _, o := range Options() {
		if o.Section == sec {
			out = append(out, o)
		}
	}
	return out
}
