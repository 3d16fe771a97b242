package config

import (
	"os"
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
		{Names: []string{configSwitch}, Arg: "FILE|NAME",
			Help: "Read the branches, host settings, options and mountpoint from a config file (see CONFIGURATION FILE); the command line's options win over the file's. " +
				"A NAME without '/' that does not end in .toml is $XDG_CONFIG_HOME/sshfsm/NAME.toml (default ~/.config/sshfsm/NAME.toml).",
			apply: func(*Config, string) error { return nil }}, // read by Parse before the other options
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
		{Names: []string{"-v", "--verbose"}, Help: "Log connections, reconnections and hosts going down and up besides warnings; same as -o sshfs_verbose.",
			apply: func(c *Config, _ string) error { c.Verbose = true; return nil }},
		{Names: []string{"-s"}, Help: "Ignored (sshfs: single-threaded): sshfsm serves requests concurrently.",
			apply: func(c *Config, _ string) error {
				c.NoEffect = append(c.NoEffect, NoEffect{Name: "-s", Why: "Ignored (sshfs: single-threaded): sshfsm serves requests concurrently."})
				return nil
			}},
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

// configSwitch names the switch whose file is read before the other
// options are applied; configOption is the same as an -o option.
const (
	configSwitch = "--config"
	configOption = "config"
)

// given is one switch of the command line with its argument.
type given struct {
	sw  Switch
	val string
}

// Parse reads the arguments after the program name. Options may come
// before, between or after the positional arguments (mount.fuse3 puts them
// last); "--" ends the options. With -h, -V or --man, option errors and
// missing arguments are not reported. With --config, the file is applied
// first and the command line's options after it, so they win.
func Parse(args []string) (*Config, error) {
	sws, pos, scanErr := scan(args)
	c := Defaults()
	c.Action = actionOf(sws)
	if c.Action != ActionMount {
		return c, nil
	}
	if scanErr != nil {
		return nil, scanErr
	}
	file, label, err := configArg(sws)
	if err != nil {
		return nil, err
	}
	if file != "" {
		if err := LoadFile(c, file); err != nil {
			return nil, err
		}
	}
	for _, g := range sws {
		if err := g.sw.apply(c, g.val); err != nil {
			return nil, err
		}
	}
	if file != "" {
		err = setFileMountpoint(c, file, pos, label)
	} else {
		err = setPositional(c, pos)
	}
	if err != nil {
		return nil, err
	}
	if err := validate(c); err != nil {
		return nil, err
	}
	applySubdir(c)
	implyDefaultPermissions(c)
	return c, nil
}

// implyDefaultPermissions turns default_permissions on with allow_other:
// without it, the kernel lets every local user reach the server as the
// remote user, whatever the file modes say. nodefault_permissions keeps
// it off.
func implyDefaultPermissions(c *Config) {
	if c.FUSE.AllowOther && !c.FUSE.NoDefaultPermissions {
		c.FUSE.DefaultPermissions = true
	}
}

// scan splits args into switches, in order, and positional arguments; err
// is the first unknown switch or missing argument.
func scan(args []string) (sws []given, pos []string, err error) {
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
		g, used, e := findSwitch(a, args[i+1:])
		i += used
		if e != nil && err == nil {
			err = e
		}
		if e == nil {
			sws = append(sws, g)
		}
	}
	return sws, pos, err
}

// actionOf is what the switches ask for; help, version and man page win
// over mounting, in that order.
func actionOf(sws []given) Action {
	probe := &Config{}
	for _, g := range sws {
		_ = g.sw.apply(probe, g.val) // only the action matters here
	}
	return probe.Action
}

// configArg is the argument of --config or -o config=, "" without one;
// label says it came from -o (fstab, mount(8)), whose source field is then
// a label.
func configArg(sws []given) (file string, label bool, err error) {
	first := ""
	set := func(v, how string) error {
		switch {
		case first == how:
			return Errorf(ExitUsage, "option %s is given twice", how)
		case first != "":
			return Errorf(ExitUsage, "options %s and %s exclude each other", first, how)
		}
		first = how
		if v == "" {
			return Errorf(ExitUsage, "option %s needs a file or a name", how)
		}
		file = v
		return nil
	}
	for _, g := range sws {
		switch g.sw.Names[0] {
		case configSwitch:
			err = set(g.val, configSwitch)
		case "-o":
			for _, item := range splitOptions(g.val) {
				if name, v, _ := strings.Cut(item, "="); name == configOption {
					err, label = set(v, "-o "+configOption+"="), true
				}
				if err != nil {
					break
				}
			}
		}
		if err != nil {
			return "", false, err
		}
	}
	return file, label, nil
}

// findSwitch matches a against the switches, taking its argument glued
// (-oro, --config=work) or from rest; it returns how many elements of rest
// it consumed.
func findSwitch(a string, rest []string) (given, int, error) {
	for _, sw := range Switches() {
		for _, name := range sw.Names {
			switch {
			case a == name && sw.Arg == "":
				return given{sw, ""}, 0, nil
			case a == name:
				if len(rest) == 0 {
					return given{}, 0, Errorf(ExitUsage, "option %s needs an argument (%s %s)", name, name, sw.Arg)
				}
				return given{sw, rest[0]}, 1, nil
			case sw.Arg != "" && len(name) == 2 && strings.HasPrefix(a, name):
				return given{sw, a[2:]}, 0, nil
			case sw.Arg != "" && len(name) > 2 && strings.HasPrefix(a, name+"="):
				return given{sw, a[len(name)+1:]}, 0, nil
			}
		}
	}
	return given{}, 0, Errorf(ExitUsage, "unknown option %s (see sshfsm --help)", a)
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
	if o.NoEffect {
		c.NoEffect = append(c.NoEffect, NoEffect{Name: name, Why: o.Help})
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
	}
	if last := pos[len(pos)-1]; !strings.Contains(pos[0], ":") && strings.Contains(last, ":") && !strings.HasPrefix(last, "/") {
		return Errorf(ExitUsage, "arguments in the wrong order: give [user@]host:[dir] first, then the mountpoint (sshfsm %s %s)", last, pos[0])
	}
	for _, spec := range pos[:len(pos)-1] {
		b, err := ParseBranch(spec)
		if err != nil {
			return withConfigHint(err, spec)
		}
		c.Branches = append(c.Branches, b)
	}
	if _, err := checkBranches(c.Branches, func(i int) string { return c.Branches[i].Spec }); err != nil {
		return Errorf(ExitUsage, "%v", err)
	}
	c.Mountpoint = pos[len(pos)-1]
	if c.Mountpoint == "" {
		return Errorf(ExitUsage, "empty mountpoint argument")
	}
	return nil
}

// withConfigHint adds to the error about a branch without ':' that a
// config file of that name exists, for "sshfsm work ~/mnt".
func withConfigHint(err error, spec string) error {
	if strings.ContainsAny(spec, ":/") {
		return err
	}
	path, shown, perr := configPath(spec)
	if fi, serr := os.Stat(path); perr != nil || serr != nil || fi.IsDir() {
		return err
	}
	return Errorf(ExitUsage, "%v; to mount what %s describes: sshfsm %s %s", err, shown, configSwitch, spec)
}

// setFileMountpoint takes the mountpoint from the command line, which may
// give only that after --config, or else from the file. With label (-o
// config=, as mount(8) runs sshfsm for an fstab line), a first argument
// without ':' before the mountpoint is the line's source field, a label.
func setFileMountpoint(c *Config, file string, pos []string, label bool) error {
	if label && len(pos) == 2 {
		if pos[0] == "" || strings.Contains(pos[0], ":") {
			return Errorf(ExitUsage, "with -o %s=%s, the source %q must be a label without ':' (the branches come from the file)",
				configOption, file, pos[0])
		}
		// The mount table shows the label, as fstab has it: mount -a
		// then finds the line mounted.
		if c.FUSE.FsName == "" {
			c.FUSE.FsName = pos[0]
		}
		pos = pos[1:]
	}
	switch {
	case len(pos) > 1:
		return Errorf(ExitUsage, "with %s %s, give at most a mountpoint; the branches come from the file (got %s)",
			configSwitch, file, strings.Join(pos, " "))
	case len(pos) == 1 && pos[0] == "":
		return Errorf(ExitUsage, "empty mountpoint argument")
	case len(pos) == 1:
		c.Mountpoint = pos[0]
	case c.Mountpoint == "":
		return Errorf(ExitUsage, "missing mountpoint: give one after %s %s or set mountpoint in the file", configSwitch, file)
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
