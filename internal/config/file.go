package config

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/pelletier/go-toml/v2"
)

// LoadFile applies the config file that --config names to c: a path, or a
// NAME (no '/', no .toml suffix) under $XDG_CONFIG_HOME/sshfsm. Its errors
// are one line: "FILE:LINE: key: what is wrong".
func LoadFile(c *Config, arg string) error {
	path, shown, err := configPath(arg)
	if err != nil {
		return err
	}
	data, err := os.ReadFile(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return Errorf(ExitUsage, "config file %s does not exist", shown)
	case err != nil:
		return Errorf(ExitUsage, "config file %s: %v", shown, errors.Unwrap(err))
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return Errorf(ExitUsage, "config file %s: %v", shown, err)
	}
	c.File = abs
	return decodeFile(c, data, shown, filepath.Dir(abs))
}

// configPath resolves the argument of --config to the file to read and the
// name that messages give it.
func configPath(arg string) (path, shown string, err error) {
	if strings.Contains(arg, "/") || strings.HasSuffix(arg, ".toml") {
		return arg, arg, nil
	}
	dir := os.Getenv("XDG_CONFIG_HOME")
	if !filepath.IsAbs(dir) { // unset, empty or relative: ignored, as the XDG spec says
		home, err := os.UserHomeDir()
		if err != nil {
			return "", "", Errorf(ExitUsage, "config %s: cannot find the config directory: %v", arg, err)
		}
		dir = filepath.Join(home, ".config")
	}
	path = filepath.Join(dir, "sshfsm", arg+".toml")
	return path, tildeHome(path), nil
}

// tildeHome writes a path under the home directory as ~/...
func tildeHome(p string) string {
	home, err := os.UserHomeDir()
	if err != nil || home == "/" || home == "" {
		return p
	}
	if rest, ok := strings.CutPrefix(p, home+"/"); ok {
		return "~/" + rest
	}
	return p
}

// decoder applies a decoded file to a Config, with the line of every key at
// hand for messages.
type decoder struct {
	c      *Config
	shown  string         // the file as messages name it
	dir    string         // the file's directory, for relative paths
	lines  map[string]int // keyPath.id → line
	hosts  []*hostEntry
	host   *hostEntry // the [host.NAME] being decoded
	branch *Branch    // the [[branch]] being decoded
	paths  []keyPath  // of each decoded branch
}

// hostEntry is one [host.NAME] table.
type hostEntry struct {
	path keyPath
	e    Endpoint // settings; Host is NAME
	used bool
}

// fval is one value of the file and where it is.
type fval struct {
	path keyPath
	raw  any
}

func decodeFile(c *Config, data []byte, shown, dir string) error {
	var doc map[string]any
	if err := toml.Unmarshal(data, &doc); err != nil {
		var de *toml.DecodeError
		if errors.As(err, &de) {
			row, _ := de.Position()
			return Errorf(ExitUsage, "%s:%d: %s", shown, row, strings.TrimPrefix(de.Error(), "toml: "))
		}
		return Errorf(ExitUsage, "%s: %v", shown, err)
	}
	d := &decoder{c: c, shown: shown, dir: dir, lines: keyLines(data)}
	if err := d.table(nil, doc, TableTop); err != nil {
		return err
	}
	return d.finish()
}

// errAt is the one-line error about the value at path.
func (d *decoder) errAt(path keyPath, format string, args ...any) error {
	msg := fmt.Sprintf(format, args...)
	if line := d.lineOf(path); line > 0 {
		return Errorf(ExitUsage, "%s:%d: %s: %s", d.shown, line, path, msg)
	}
	return Errorf(ExitUsage, "%s: %s: %s", d.shown, path, msg)
}

// lineOf is the line of path, or of its nearest ancestor that has one.
func (d *decoder) lineOf(path keyPath) int {
	for i := len(path); i > 0; i-- {
		if l, ok := d.lines[path[:i].id()]; ok {
			return l
		}
	}
	return 0
}

// keysInOrder returns the keys of m in the order of the file.
func (d *decoder) keysInOrder(path keyPath, m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		li, lj := d.lineOf(path.child(keys[i])), d.lineOf(path.child(keys[j]))
		if li != lj {
			return li < lj
		}
		return keys[i] < keys[j]
	})
	return keys
}

// table decodes the declared keys of table t.
func (d *decoder) table(path keyPath, m map[string]any, t FileTable) error {
	for _, name := range d.keysInOrder(path, m) {
		v := fval{path.child(name), m[name]}
		k, ok := findFileKey(t, name)
		if !ok {
			return d.errAt(v.path, "unknown key (known here: %s)", knownKeys(t))
		}
		if err := d.checkType(v, k.Type); err != nil {
			return err
		}
		if err := k.set(d, v); err != nil {
			return err
		}
	}
	return nil
}

func findFileKey(t FileTable, name string) (FileKey, bool) {
	for _, k := range fileKeysIn(t) {
		if k.Name == name {
			return k, true
		}
	}
	return FileKey{}, false
}

func (d *decoder) checkType(v fval, t fileType) error {
	ok := false
	switch v.raw.(type) {
	case string:
		ok = t == tString
	case int64:
		ok = t == tInt
	case bool:
		ok = t == tBool
	case []any:
		ok = t == tStrings || t == tBranches
	case map[string]any:
		ok = t == tTable || t == tHostTables
	}
	if !ok {
		return d.errAt(v.path, "expected %s, got %s", typeName(t), describe(v.raw))
	}
	return nil
}

func typeName(t fileType) string {
	switch t {
	case tString:
		return "a string"
	case tInt:
		return "an integer"
	case tBool:
		return "true or false"
	case tStrings:
		return "a list of strings"
	case tBranches:
		return "[[branch]] tables"
	}
	return "a table"
}

// describe names the TOML type of a decoded value.
func describe(raw any) string {
	switch v := raw.(type) {
	case string:
		return strconv.Quote(v)
	case int64, float64:
		return fmt.Sprintf("the number %v", v)
	case bool:
		return strconv.FormatBool(v)
	case []any:
		return "a list"
	case map[string]any:
		return "a table"
	}
	return "a date or time"
}

// path resolves a path written in the file: ~/ is the home directory and a
// relative path is relative to the file's directory.
func (d *decoder) path(v fval) (string, error) {
	p := v.raw.(string)
	switch {
	case p == "":
		return "", d.errAt(v.path, "empty path")
	case p == "~" || strings.HasPrefix(p, "~/"):
		home, err := os.UserHomeDir()
		if err != nil {
			return "", d.errAt(v.path, "cannot expand ~: %v", err)
		}
		return filepath.Join(home, p[1:]), nil
	case strings.HasPrefix(p, "~"):
		return "", d.errAt(v.path, "%q: only ~/ is expanded; write the whole path", p)
	case !filepath.IsAbs(p):
		return filepath.Join(d.dir, p), nil
	}
	return p, nil
}

// finish checks the file as a whole and gives each endpoint its host's
// settings.
func (d *decoder) finish() error {
	if len(d.c.Branches) == 0 {
		return Errorf(ExitUsage, "%s: no [[branch]] table: a mount needs at least one branch", d.shown)
	}
	i, err := checkBranches(d.c.Branches, func(i int) string { return d.paths[i].String() })
	if err != nil {
		return d.errAt(d.paths[i], "%v", err)
	}
	for bi := range d.c.Branches {
		for ei := range d.c.Branches[bi].Hosts {
			d.applyHost(&d.c.Branches[bi].Hosts[ei])
		}
	}
	for _, h := range d.hosts {
		if !h.used {
			return d.errAt(h.path, "no branch uses host %s", h.e.Host)
		}
	}
	return nil
}

// applyHost gives e the settings of its [host.NAME] table.
func (d *decoder) applyHost(e *Endpoint) {
	for _, h := range d.hosts {
		if h.e.Host != e.Host {
			continue
		}
		h.used = true
		if e.User == "" {
			e.User = h.e.User
		}
		e.Port, e.SSHConfig, e.MaxConns = h.e.Port, h.e.SSHConfig, h.e.MaxConns
		e.SSHOptions = append([]string(nil), h.e.SSHOptions...)
	}
}
