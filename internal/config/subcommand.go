package config

import (
	"fmt"
	"strings"
)

// Subcommand is the one declaration of a command that its first argument
// selects instead of mounting (sshfsm status ...). --help, the man page
// and docs/options.md are produced from it.
type Subcommand struct {
	Name     string
	Args     string // positional arguments, as in a usage line
	Switches []SubSwitch
	Help     string
}

// SubSwitch is one switch of a subcommand.
type SubSwitch struct {
	Names []string
	Help  string
}

// Usage is the subcommand's usage line.
func (s Subcommand) Usage() string {
	return strings.TrimSpace("sshfsm " + s.Name + " " + s.argsUsage())
}

// argsUsage is the usage line after the name: switches other than help,
// then the positional arguments.
func (s Subcommand) argsUsage() string {
	u := ""
	for _, sw := range s.Switches {
		if sw.Names[0] != "-h" {
			u += "[" + sw.Names[0] + "] "
		}
	}
	return u + s.Args
}

// Subcommands lists every subcommand, in documentation order.
func Subcommands() []Subcommand {
	return []Subcommand{{
		Name: "status",
		Args: "[mountpoint]",
		Switches: []SubSwitch{
			{Names: []string{"--json"}, Help: "Print JSON for scripts: one object for a mountpoint, a list of them without one. " +
				"Counters are totals since the mount; durations are in milliseconds (latency_ms) or seconds (uptime_seconds, oldest_seconds, oldest_request_seconds)."},
			{Names: []string{"-h", "--help"}, Help: "Print this help and exit."},
		},
		Help: "Show what a running mount is doing, or every sshfsm mount of the calling user without mountpoint: " +
			"the requests of programs it is answering (how many, and the age and kind of the oldest: one much older than the timeout option is stuck); " +
			"per branch and host the state (up, reconnecting, down), channels up, requests in flight (and how long the oldest has waited), latency (mean duration of each channel's last request), " +
			"file data read and written, errors, reconnects and requests sent by type; and the hit ratios of the listing cache. " +
			"Each mount's sshfsm answers on a unix socket in $XDG_RUNTIME_DIR/sshfsm (/tmp/sshfsm-UID without XDG_RUNTIME_DIR) that only the mounting user can use. " +
			"Exit status: 0 when every mount asked answered (also when there is none); 1 for a usage error; " +
			"2 when mountpoint is not an sshfsm mount of the calling user; 6 when an sshfsm does not answer within 3 seconds or speaks another version.",
	}, {
		Name: "warm",
		Args: "path...",
		Switches: []SubSwitch{
			{Names: []string{"--content"}, Help: "Read the contents of the files too, so that later reads are served from the disk cache (and the page cache)."},
			{Names: []string{"--max-size SIZE"}, Help: "With --content, skip files larger than SIZE (bytes; K, M, G, T suffixes)."},
			{Names: []string{"--jobs N"}, Help: "Directories listed and files read at once (default 16)."},
			{Names: []string{"-h", "--help"}, Help: "Print this help and exit."},
		},
		Help: "Fetch ahead of use the metadata, and with --content the contents, of every path below each path, which must be inside sshfsm mounts: " +
			"a build, an indexer or a search then finds them in the caches. " +
			"On a terminal one progress line is updated (directories and files seen; while reading, a bar and files and bytes read of the total, rate, time left); otherwise a progress line is printed every 5 seconds. " +
			"Ctrl-C stops at once; what was fetched stays cached. " +
			"Exit status: 0 when everything was fetched; 1 for a usage error or when some files could not be read (each is named on stderr, at most 10); " +
			"2 when a path is not inside an sshfsm mount; 130 when interrupted.",
	}, {
		Name: "help",
		Help: "Print the help (the same as sshfsm --help) and exit.",
	}, {
		Name: "version",
		Help: "Print the version (the same as sshfsm --version) and exit.",
	}}
}

// IsBareSubcommand reports whether args are exactly one of the subcommands
// that take no arguments (help, version). A mount names at least a source
// and a mountpoint, so "sshfsm help" alone cannot be one.
func IsBareSubcommand(args []string, name string) bool {
	return len(args) == 1 && args[0] == name
}

// WarmArgs is a parsed sshfsm warm command line.
type WarmArgs struct {
	Content bool
	MaxSize int64 // 0 = no limit
	Jobs    int
	Help    bool
	Paths   []string
}

// ParseWarm reads the arguments after "warm".
func ParseWarm(args []string) (WarmArgs, error) {
	w := WarmArgs{Jobs: 16}
	for i := 0; i < len(args); i++ {
		a := args[i]
		name, val, hasVal := strings.Cut(a, "=")
		needVal := func() (string, error) {
			if hasVal {
				return val, nil
			}
			if i+1 >= len(args) {
				return "", Errorf(ExitUsage, "option %s needs an argument", name)
			}
			i++
			return args[i], nil
		}
		switch {
		case a == "--":
			w.Paths = append(w.Paths, args[i+1:]...)
			i = len(args)
		case a == "--content":
			w.Content = true
		case a == "-h" || a == "--help":
			w.Help = true
		case name == "--max-size":
			v, err := needVal()
			if err != nil {
				return w, err
			}
			if w.MaxSize, err = parseSize(v); err != nil || w.MaxSize == 0 {
				return w, Errorf(ExitUsage, "bad value %q for --max-size: not a size above 0 (bytes, with an optional K, M, G or T suffix)", v)
			}
		case name == "--jobs":
			v, err := needVal()
			if err != nil {
				return w, err
			}
			if w.Jobs, err = parseInt(v, 1, 256); err != nil {
				return w, Errorf(ExitUsage, "bad value %q for --jobs: %v", v, err)
			}
		case len(a) > 1 && a[0] == '-':
			return w, Errorf(ExitUsage, "unknown option %s (see sshfsm warm --help)", a)
		default:
			w.Paths = append(w.Paths, a)
		}
	}
	switch {
	case w.Help:
	case len(w.Paths) == 0:
		return w, Errorf(ExitUsage, "sshfsm warm needs at least one path (see sshfsm warm --help)")
	case w.MaxSize > 0 && !w.Content:
		return w, Errorf(ExitUsage, "--max-size applies to --content, which is not given")
	}
	return w, nil
}

// StatusArgs is a parsed sshfsm status command line.
type StatusArgs struct {
	JSON       bool
	Help       bool
	Mountpoint string // "" = every mount
}

// ParseStatus reads the arguments after "status".
func ParseStatus(args []string) (StatusArgs, error) {
	var s StatusArgs
	var pos []string
	for i := 0; i < len(args); i++ {
		switch a := args[i]; {
		case a == "--":
			pos = append(pos, args[i+1:]...)
			i = len(args)
		case a == "--json":
			s.JSON = true
		case a == "-h" || a == "--help":
			s.Help = true
		case len(a) > 1 && a[0] == '-':
			return s, Errorf(ExitUsage, "unknown option %s (see sshfsm status --help)", a)
		default:
			pos = append(pos, a)
		}
	}
	switch {
	case s.Help:
	case len(pos) > 1:
		return s, Errorf(ExitUsage, "sshfsm status takes at most one mountpoint, got %d arguments", len(pos))
	case len(pos) == 1:
		s.Mountpoint = pos[0]
	}
	return s, nil
}

// SubcommandHelp returns the text of sshfsm NAME --help.
func SubcommandHelp(name string) string {
	var b strings.Builder
	for _, s := range Subcommands() {
		if s.Name != name {
			continue
		}
		fmt.Fprintf(&b, "usage: %s\n\n", s.Usage())
		for _, l := range wrap(s.Help, "", 79) {
			b.WriteString(l + "\n")
		}
		b.WriteString("\nSwitches:\n")
		for _, sw := range s.Switches {
			writeItem(&b, strings.Join(sw.Names, ", "), sw.Help)
		}
	}
	return b.String()
}

// subcommandUsages are the usage lines of the subcommands, each prefixed.
func subcommandUsages(prefix string) string {
	var b strings.Builder
	for _, s := range Subcommands() {
		b.WriteString(prefix + s.Usage() + "\n")
	}
	return b.String()
}

// writeSubcommandsHelp writes the Commands part of --help.
func writeSubcommandsHelp(b *strings.Builder) {
	b.WriteString("\nCommands:\n")
	for _, s := range Subcommands() {
		writeItem(b, strings.TrimPrefix(s.Usage(), "sshfsm "), s.Help)
		for _, sw := range s.Switches {
			writeItem(b, "  "+strings.Join(sw.Names, ", "), sw.Help)
		}
	}
}

// writeSubcommandsMan writes the COMMANDS section of the man page.
func writeSubcommandsMan(b *strings.Builder) {
	b.WriteString(".SH COMMANDS\n")
	for _, s := range Subcommands() {
		manItem(b, s.Usage(), s.Help)
		b.WriteString(".RS\n")
		for _, sw := range s.Switches {
			manItem(b, strings.Join(sw.Names, ", "), sw.Help)
		}
		b.WriteString(".RE\n")
	}
}

// writeSubcommandsDoc writes the Commands part of docs/options.md.
func writeSubcommandsDoc(b *strings.Builder) {
	b.WriteString("\n## Commands\n\n| Command | Description |\n|---|---|\n")
	for _, s := range Subcommands() {
		fmt.Fprintf(b, "| `%s` | %s |\n", s.Usage(), md(s.Help))
		for _, sw := range s.Switches {
			fmt.Fprintf(b, "| `%s` | %s |\n", strings.Join(sw.Names, "`, `"), md(sw.Help))
		}
	}
}

// manSynopsis is the SYNOPSIS line of each subcommand.
func manSynopsis() string {
	var b strings.Builder
	for _, s := range Subcommands() {
		b.WriteString(".br\n.B sshfsm " + roff(s.Name) + "\n" + roff(s.argsUsage()) + "\n")
	}
	return b.String()
}
