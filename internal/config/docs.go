package config

import (
	"fmt"
	"strings"
)

// Prose shared by --help and the man page.
const (
	usageLine   = "sshfsm [options] [user@]host:[dir] mountpoint"
	summaryLine = "mount a remote directory over SSH (SFTP)"
)

func descriptionParas() []string {
	return []string{
		"sshfsm mounts the directory dir of host at mountpoint, over the SFTP subsystem of the host's ssh server. " +
			"It runs the system ssh, so ~/.ssh/config, agents, ProxyJump, ControlMaster and password prompts work as with ssh. " +
			"It accepts the options and habits of sshfs.",
		"Without dir, the remote home directory is mounted; a relative dir is relative to it. " +
			"IPv6 addresses are written in brackets: [::1]:dir, user@[fe80::1%eth0]:dir.",
		"sshfsm returns once the mount answers, leaving a background process to serve it, " +
			"or exits with one line on stderr and a non-zero status (see EXIT STATUS). " +
			"With -f or -d it stays in the foreground. Unmount with fusermount3 -u mountpoint " +
			"(or umount as root), or send SIGINT or SIGTERM to the sshfsm process.",
		"Requests never hang: each one is limited by timeout=, after which it fails with an I/O error.",
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
