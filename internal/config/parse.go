package config

import (
	"strings"
)

// Switch is the one declaration of a command-line switch.
type Switch struct {
	Names []string // "-p", "--debug"
	Arg   string   // placeholder of the argument; "" for none
	Help  string
	apply func(c *Config, val string) error
}

// Switches returns the declaration of every switch, in documentation order.
func Switches() []Switch {
	return []Switch{
		{Names: []string{"-o"}, Arg: "OPT[,OPT...]", Help: "Mount options, described below; -o may be repeated and glued to its argument (-oro).",
			apply: applyOptions},
		{Names: []string{"-p"}, Arg: "PORT", Help: "Port of the ssh server; same as -o port=PORT.",
			apply: func(c *Config, v string) error { return applyOne(c, "port="+v) }},
		{Names: []string{"-F"}, Arg: "FILE", Help: "Use FILE as the ssh configuration file instead of ~/.ssh/config.",
			apply: func(c *Config, v string) error { c.SSH.ConfigFile = v; return nil }},
		{Names: []string{"-C"}, Help: "Compress the ssh stream; same as -o compression=yes.",
			apply: func(c *Config, _ string) error { c.SSH.Compression = true; return nil }},
		{Names: []string{"-f"}, Help: "Stay in the foreground; unmount and exit on SIGINT or SIGTERM.",
			apply: func(c *Config, _ string) error { c.Foreground = true; return nil }},
		{Names: []string{"-d", "--debug"}, Help: "Log every request to stderr; implies -f. Same as -o debug.",
			apply: func(c *Config, _ string) error { return applyOne(c, "debug") }},
		{Names: []string{"-s"}, Help: "Ignored (sshfs: single-threaded).",
			apply: func(*Config, string) error { return nil }},
		{Names: []string{"-h", "--help"}, Help: "Print this help and exit.",
			apply: setAction(ActionHelp)},
		{Names: []string{"-V", "--version"}, Help: "Print the version and exit.",
			apply: setAction(ActionVersion)},
		{Names: []string{"--man"}, Help: "Print the manual page (roff) and exit.",
			apply: setAction(ActionMan)},
	}
}

func setAction(a Action) func(*Config, string) error {
	return func(c *Config, _ string) error {
		if c.Action == ActionMount || a < c.Action {
			c.Action = a
		}
		return nil
	}
}

// Parse reads the arguments after the program name. Options may come
// before, between or after the positional arguments (mount.fuse3 puts them
// last); "--" ends the options. With -h, -V or --man, option errors and
// missing arguments are not reported.
func Parse(args []string) (*Config, error) {
	c := Defaults()
	var pos []string
	var firstErr error
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			pos = append(pos, args[i+1:]...)
			break
		}
		if len(a) < 2 || a[0] != '-' {
			pos = append(pos, a)
			continue
		}
		used, err := applySwitch(c, a, args[i+1:])
		i += used
		if err != nil && firstErr == nil {
			firstErr = err
		}
	}
	if c.Action != ActionMount {
		return c, nil
	}
	if firstErr != nil {
		return nil, firstErr
	}
	if err := setPositional(c, pos); err != nil {
		return nil, err
	}
	if err := validate(c); err != nil {
		return nil, err
	}
	return c, nil
}

// applySwitch applies switch a, taking its argument glued or from rest; it
// returns how many elements of rest it consumed.
func applySwitch(c *Config, a string, rest []string) (int, error) {
	for _, sw := range Switches() {
		for _, name := range sw.Names {
			switch {
			case a == name && sw.Arg == "":
				return 0, sw.apply(c, "")
			case a == name:
				if len(rest) == 0 {
					return 0, Errorf(ExitUsage, "option %s needs an argument (%s %s)", name, name, sw.Arg)
				}
				return 1, sw.apply(c, rest[0])
			case sw.Arg != "" && len(name) == 2 && strings.HasPrefix(a, name):
				return 0, sw.apply(c, a[2:])
			}
		}
	}
	return 0, Errorf(ExitUsage, "unknown option %s (see sshfsm --help)", a)
}

// applyOptions applies the comma-separated list of one -o.
func applyOptions(c *Config, list string) error {
	for _, item := range splitOptions(list) {
		if item == "" {
			continue
		}
		if err := applyOne(c, item); err != nil {
			return err
		}
	}
	return nil
}

// applyOne applies one name[=value] mount option or ssh keyword.
func applyOne(c *Config, item string) error {
	name, val, hasVal := strings.Cut(item, "=")
	o, declared := lookup(Options(), name)
	key, isSSH := sshKeyword(name)
	// "user" is a mount(8) flag; "user=bob" is the ssh keyword User.
	if declared && !(isSSH && hasVal && !o.HasValue()) {
		return applyDeclared(c, o, name, val, hasVal)
	}
	if isSSH {
		if !hasVal || val == "" {
			return Errorf(ExitUsage, "ssh option %s needs a value (-o %s=VALUE)", key, key)
		}
		c.SSH.Options = append(c.SSH.Options, SSHOption{Key: key, Value: val})
		return nil
	}
	return Errorf(ExitUsage, "unknown option %q (see sshfsm --help)", item)
}

func applyDeclared(c *Config, o Option, name, val string, hasVal bool) error {
	switch {
	case o.Prefix:
		return nil
	case o.HasValue() && !hasVal:
		return Errorf(ExitUsage, "option %s needs a value (-o %s)", name, o.Usage())
	case !o.HasValue() && hasVal:
		return Errorf(ExitUsage, "option %s takes no value", name)
	}
	if err := o.apply(c, val); err != nil && !o.HasValue() {
		return Errorf(ExitUsage, "option %s: %v", name, err)
	} else if err != nil {
		return Errorf(ExitUsage, "bad value %q for option %s: %v", val, name, err)
	}
	return nil
}

func setPositional(c *Config, pos []string) error {
	switch {
	case len(pos) == 0:
		return Errorf(ExitUsage, "missing [user@]host:[dir] and mountpoint arguments (see sshfsm --help)")
	case len(pos) == 1 && strings.Contains(pos[0], ":"):
		return Errorf(ExitUsage, "missing mountpoint argument after %s", pos[0])
	case len(pos) == 1:
		return Errorf(ExitUsage, "missing [user@]host:[dir] argument before mountpoint %s", pos[0])
	case len(pos) > 2:
		return Errorf(ExitUsage, "several remote directories (%s) are not supported yet: give one [user@]host:[dir] and a mountpoint",
			strings.Join(pos[:len(pos)-1], " "))
	}
	if last := pos[len(pos)-1]; !strings.Contains(pos[0], ":") && strings.Contains(last, ":") && !strings.HasPrefix(last, "/") {
		return Errorf(ExitUsage, "arguments in the wrong order: give [user@]host:[dir] first, then the mountpoint (sshfsm %s %s)", last, pos[0])
	}
	for _, spec := range pos[:len(pos)-1] {
		b, err := ParseBranch(spec)
		if err != nil {
			return err
		}
		c.Branches = append(c.Branches, b)
	}
	c.Mountpoint = pos[len(pos)-1]
	if c.Mountpoint == "" {
		return Errorf(ExitUsage, "empty mountpoint argument")
	}
	return nil
}

func validate(c *Config) error {
	switch {
	case c.FUSE.AllowOther && c.FUSE.AllowRoot:
		return Errorf(ExitUsage, "options allow_other and allow_root exclude each other")
	case c.IDMap.Mode != IDMapFile && (c.IDMap.UIDFile != "" || c.IDMap.GIDFile != ""):
		return Errorf(ExitUsage, "options uidfile and gidfile need idmap=file")
	case c.IDMap.Mode == IDMapFile && c.IDMap.UIDFile == "" && c.IDMap.GIDFile == "":
		return Errorf(ExitUsage, "option idmap=file needs uidfile=FILE or gidfile=FILE")
	case c.SSH.DirectPort != 0 && c.SSH.SFTPServer != "":
		return Errorf(ExitUsage, "options directport and sftp_server exclude each other")
	}
	return nil
}
