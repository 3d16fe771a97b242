package config

import (
	"fmt"
	"strings"
	"time"
)

// Section groups options in --help, the man page and docs/options.md.
type Section int

// Sections, in documentation order.
const (
	SecConnection Section = iota
	SecBranch
	SecSSH
	SecMount
	SecCache
	SecSymlinks
	SecIDMap
	SecCompat
	SecNoise
)

// Sections returns every section in documentation order.
func Sections() []Section {
	return []Section{SecConnection, SecBranch, SecSSH, SecMount, SecCache, SecSymlinks, SecIDMap, SecCompat, SecNoise}
}

// Title is the section's heading.
func (s Section) Title() string {
	return [...]string{
		"Connection options",
		"Branch options",
		"SSH options",
		"Mount options",
		"Cache options",
		"Symbolic link options",
		"User and group ID options",
		"sshfs compatibility options",
		"mount(8) and fstab options",
	}[s]
}

// Intro is the sentence under the section's heading, if any.
func (s Section) Intro() string {
	switch s {
	case SecBranch:
		return "How several branches make one mount (see BRANCHES)."
	case SecSSH:
		return "Besides the options below, every ssh_config(5) keyword is accepted " +
			"(matched case-insensitively) as -o Keyword=value and passed to ssh as -oKeyword=value, " +
			"e.g. -o IdentityFile=~/.ssh/id_ed25519 or -o ProxyJump=gateway."
	case SecCompat:
		return "Options sshfs users type, accepted so that existing command lines and fstab " +
			"entries keep working. Where an option is marked ignored, it has no effect, and the mount says so on stderr."
	case SecNoise:
		return "Options that mount(8) and fstab pass along; accepted and ignored."
	}
	return ""
}

// Option is the one declaration of a -o option.
type Option struct {
	Name    string
	Aliases []string
	Arg     string   // placeholder of the value in docs; "" for options without value
	Values  []string // accepted values of enumerations
	Default string   // default in docs and in Defaults; "on" for flags set by default
	Help    string
	Section Section
	// Fold matches the name case-insensitively (the ssh keyword Port).
	Fold bool
	// Prefix matches every name starting with Name (x-*).
	Prefix bool
	// Not is the flag that undoes this one (ro and rw), for "name = false"
	// in a config file.
	Not string
	// NoEffect: accepted (sshfs, libfuse) but without effect; the mount
	// says so on stderr. Set for the options whose help starts "Ignored".
	NoEffect bool
	apply    func(c *Config, val string) error
}

// HasValue reports whether the option takes =value.
func (o Option) HasValue() bool { return o.Arg != "" }

// Usage is the option as written in docs: name or name=ARG.
func (o Option) Usage() string {
	n := o.Name
	if o.Prefix {
		n += "*"
	}
	if o.HasValue() {
		return n + "=" + o.Arg
	}
	return n
}

// flagOpt declares an option without value.
func flagOpt(name string, sec Section, help string, set func(*Config)) Option {
	return Option{Name: name, Section: sec, Help: help,
		apply: func(c *Config, _ string) error { set(c); return nil }}
}

// ignored declares an option without value that has no effect.
func ignored(name string, sec Section, help string) Option {
	return flagOpt(name, sec, help, func(*Config) {})
}

// intOpt declares an integer option within [lo, hi].
func intOpt(name, arg, def string, sec Section, lo, hi int, help string, set func(*Config, int)) Option {
	return Option{Name: name, Arg: arg, Default: def, Section: sec, Help: help,
		apply: func(c *Config, v string) error {
			n, err := parseInt(v, lo, hi)
			if err != nil {
				return err
			}
			set(c, n)
			return nil
		}}
}

// idOpt declares a uid or gid option.
func idOpt(name string, sec Section, help string, set func(*Config, uint32)) Option {
	return Option{Name: name, Arg: "N", Section: sec, Help: help,
		apply: func(c *Config, v string) error {
			n, err := parseInt(v, 0, 1<<32-2)
			if err != nil {
				return err
			}
			set(c, uint32(n))
			return nil
		}}
}

// octalOpt declares a permission mask in octal.
func octalOpt(name string, sec Section, help string, set func(*Config, uint32)) Option {
	return Option{Name: name, Arg: "MODE", Section: sec, Help: help,
		apply: func(c *Config, v string) error {
			n, err := parseOctal(v)
			if err != nil {
				return err
			}
			set(c, n)
			return nil
		}}
}

// secondsOpt declares a duration given in (possibly fractional) seconds.
func secondsOpt(name, def string, sec Section, positive bool, help string, set func(*Config, time.Duration)) Option {
	return Option{Name: name, Arg: "SECONDS", Default: def, Section: sec, Help: help,
		apply: func(c *Config, v string) error {
			d, err := parseSeconds(v, positive)
			if err != nil {
				return err
			}
			set(c, d)
			return nil
		}}
}

// stringOpt declares a free-form value.
func stringOpt(name, arg, def string, sec Section, help string, set func(*Config, string) error) Option {
	return Option{Name: name, Arg: arg, Default: def, Section: sec, Help: help,
		apply: func(c *Config, v string) error {
			if v == "" {
				return fmt.Errorf("needs a value")
			}
			return set(c, v)
		}}
}

// enumOpt declares a value from a fixed list.
func enumOpt(name, def string, values []string, sec Section, help string, set func(*Config, string)) Option {
	return Option{Name: name, Arg: strings.Join(values, "|"), Values: values, Default: def,
		Section: sec, Help: help,
		apply: func(c *Config, v string) error {
			for _, ok := range values {
				if v == ok {
					set(c, v)
					return nil
				}
			}
			return fmt.Errorf("must be one of %s", strings.Join(values, ", "))
		}}
}

// lookup finds the declaration for name among opts.
func lookup(opts []Option, name string) (Option, bool) {
	for _, o := range opts {
		for _, n := range append([]string{o.Name}, o.Aliases...) {
			switch {
			case n == name,
				o.Fold && strings.EqualFold(n, name),
				o.Prefix && strings.HasPrefix(name, n):
				return o, true
			}
		}
	}
	return Option{}, false
}

// Defaults returns the configuration of an empty command line, built from
// the declared defaults.
func Defaults() *Config {
	c := &Config{}
	for _, o := range Options() {
		switch {
		case o.Default == "":
		case !o.HasValue() && o.Default == "on":
			_ = o.apply(c, "")
		case o.HasValue():
			if err := o.apply(c, o.Default); err != nil {
				panic(fmt.Sprintf("config: bad default of %s: %v", o.Name, err))
			}
		}
	}
	return c
}
