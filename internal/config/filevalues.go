package config

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// The setters of FileKeys. checkType has checked the TOML type of v.

func setMountpoint(d *decoder, v fval) error {
	p, err := d.path(v)
	d.c.Mountpoint = p
	return err
}

func setGlobalSSHConfig(d *decoder, v fval) error {
	p, err := d.path(v)
	d.c.SSH.ConfigFile = p
	return err
}

// options applies [options] in the order of the file, as -o would.
func (d *decoder) options(v fval) error {
	return d.optionsUnder(v, "")
}

// optionsUnder applies the options of table v; a table inside is a dotted
// name (x-systemd.automount = true), prefix holding the names before it.
func (d *decoder) optionsUnder(v fval, prefix string) error {
	m := v.raw.(map[string]any)
	for _, name := range d.keysInOrder(v.path, m) {
		o := fval{v.path.child(name), m[name]}
		var err error
		if _, ok := o.raw.(map[string]any); ok {
			err = d.optionsUnder(o, prefix+name+".")
		} else {
			err = d.option(o, prefix+name)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

func (d *decoder) option(v fval, name string) error {
	o, declared := lookup(Options(), name)
	key, isSSH := sshKeyword(name)
	if !declared && !isSSH {
		return d.errAt(v.path, "unknown option (see sshfsm --help)")
	}
	if name == configOption {
		return d.errAt(v.path, "a config file cannot name another one")
	}
	if b, ok := v.raw.(bool); ok && declared && !o.HasValue() {
		return d.flag(v, o, b)
	}
	val, err := scalar(v.raw, isSSH || declared && contains(o.Values, "yes"))
	if err != nil {
		return d.errAt(v.path, "%v", err)
	}
	if declared && o.NoEffect {
		d.c.NoEffect = append(d.c.NoEffect, NoEffect{Name: name, Why: o.Help})
	}
	switch {
	case o.Prefix:
		return nil
	case declared && o.HasValue():
		if err := o.apply(d.c, val); err != nil {
			return d.errAt(v.path, "bad value %s: %v", valueText(v.raw), err)
		}
	case isSSH && val == "":
		return d.errAt(v.path, "ssh option %s needs a value", key)
	case isSSH:
		d.c.SSH.Options = append(d.c.SSH.Options, SSHOption{Key: key, Value: val})
	default:
		return d.errAt(v.path, "expected true or false, got %s", describe(v.raw))
	}
	return nil
}

// flag applies a flag option set to true, or its opposite for false.
func (d *decoder) flag(v fval, o Option, on bool) error {
	var err error
	switch {
	case on && o.NoEffect:
		d.c.NoEffect = append(d.c.NoEffect, NoEffect{Name: o.Name, Why: o.Help})
	case on:
		err = o.apply(d.c, "")
	case o.Not != "":
		not, _ := lookup(Options(), o.Not)
		err = not.apply(d.c, "")
	}
	if err != nil {
		return d.errAt(v.path, "%v", err)
	}
	return nil
}

// scalar turns a TOML value into the text -o would carry; yesno writes
// booleans as yes and no (ssh keywords, cache=).
func scalar(raw any, yesno bool) (string, error) {
	switch v := raw.(type) {
	case string:
		return v, nil
	case int64:
		return strconv.FormatInt(v, 10), nil
	case float64:
		return strconv.FormatFloat(v, 'f', -1, 64), nil
	case bool:
		if !yesno {
			return "", fmt.Errorf("expected a string or a number, got %v", v)
		}
		if v {
			return "yes", nil
		}
		return "no", nil
	}
	return "", fmt.Errorf("expected a string, a number or true or false, got %s", describe(raw))
}

// valueText writes a scalar as the file does.
func valueText(raw any) string {
	if s, ok := raw.(string); ok {
		return strconv.Quote(s)
	}
	return fmt.Sprint(raw)
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// hostTables decodes every [host.NAME].
func (d *decoder) hostTables(v fval) error {
	m := v.raw.(map[string]any)
	for _, name := range d.keysInOrder(v.path, m) {
		hv := fval{v.path.child(name), m[name]}
		t, ok := hv.raw.(map[string]any)
		if !ok {
			return d.errAt(hv.path, "expected a table [host.%s], got %s", name, describe(hv.raw))
		}
		e, err := parseEndpoint(name)
		switch {
		case err != nil:
			return d.errAt(hv.path, "%v", err)
		case e.User != "":
			return d.errAt(hv.path, "name the host without user@ and write user = %q inside", e.User)
		}
		for _, h := range d.hosts {
			if h.e.Host == e.Host {
				return d.errAt(hv.path, "host %s has a table already (%s)", e.Host, h.path)
			}
		}
		d.host = &hostEntry{path: hv.path, e: e}
		d.hosts = append(d.hosts, d.host)
		if err := d.table(hv.path, t, TableHost); err != nil {
			return err
		}
	}
	return nil
}

func setHostUser(d *decoder, v fval) error {
	u := v.raw.(string)
	// Nor what the branch's command-line form ([user@]host:dir) could not
	// carry back: the status, the log and the mount table show that form.
	if u == "" || strings.ContainsAny(u, " \t\n@[]:,") {
		return d.errAt(v.path, "bad user name %q", u)
	}
	d.host.e.User = u
	return nil
}

func setHostPort(d *decoder, v fval) error {
	n, err := d.intIn(v, 1, 65535)
	d.host.e.Port = n
	return err
}

func setHostMaxConns(d *decoder, v fval) error {
	n, err := d.intIn(v, 1, maxConnsLimit)
	d.host.e.MaxConns = n
	return err
}

func setHostIdentity(d *decoder, v fval) error {
	p, err := d.path(v)
	d.host.e.SSHOptions = append(d.host.e.SSHOptions, "-oIdentityFile="+p)
	return err
}

func setHostSSHConfig(d *decoder, v fval) error {
	p, err := d.path(v)
	d.host.e.SSHConfig = p
	return err
}

// sshOptions decodes ssh_options = { Keyword = value, ... } of a host.
func (d *decoder) sshOptions(v fval) error {
	m := v.raw.(map[string]any)
	for _, name := range d.keysInOrder(v.path, m) {
		kv := fval{v.path.child(name), m[name]}
		key, ok := sshKeyword(name)
		if !ok {
			return d.errAt(kv.path, "not an ssh_config(5) keyword")
		}
		val, err := scalar(kv.raw, true)
		if err == nil && val == "" {
			err = errors.New("needs a value")
		}
		if err != nil {
			return d.errAt(kv.path, "%v", err)
		}
		d.host.e.SSHOptions = append(d.host.e.SSHOptions, "-o"+key+"="+val)
	}
	return nil
}

func (d *decoder) intIn(v fval, lo, hi int64) (int, error) {
	n := v.raw.(int64)
	if n < lo || n > hi {
		return 0, d.errAt(v.path, "must be between %d and %d", lo, hi)
	}
	return int(n), nil
}

// branches decodes the [[branch]] tables in order.
func (d *decoder) branches(v fval) error {
	for i, el := range v.raw.([]any) {
		bv := fval{v.path.child(idx(i)), el}
		t, ok := el.(map[string]any)
		if !ok {
			return d.errAt(bv.path, "expected a [[branch]] table, got %s", describe(el))
		}
		d.branch = &Branch{Spec: fmt.Sprintf("%s:%d", d.shown, d.lineOf(bv.path))}
		if err := d.table(bv.path, t, TableBranch); err != nil {
			return err
		}
		if len(d.branch.Hosts) == 0 {
			return d.errAt(bv.path, "needs host or hosts")
		}
		d.c.Branches = append(d.c.Branches, *d.branch)
		d.paths = append(d.paths, bv.path)
	}
	return nil
}

func setBranchName(d *decoder, v fval) error {
	name := v.raw.(string)
	if err := checkName(name); err != nil {
		return d.errAt(v.path, "%v", err)
	}
	d.branch.Name = name
	return nil
}

func setBranchHost(d *decoder, v fval) error {
	return d.setHosts(v, []any{v.raw}, false)
}

func setBranchHosts(d *decoder, v fval) error {
	return d.setHosts(v, v.raw.([]any), true)
}

// setHosts sets the endpoints of the branch from host = "..." or
// hosts = [...]; list says which, for the path of an element.
func (d *decoder) setHosts(v fval, hosts []any, list bool) error {
	if len(d.branch.Hosts) > 0 {
		return d.errAt(v.path, "give host or hosts, not both")
	}
	if len(hosts) == 0 {
		return d.errAt(v.path, "empty list")
	}
	var es []Endpoint
	for i, h := range hosts {
		at := v.path
		if list {
			at = at.child(idx(i))
		}
		s, ok := h.(string)
		if !ok {
			return d.errAt(at, "expected a string, got %s", describe(h))
		}
		e, err := parseEndpoint(s)
		if err != nil {
			return d.errAt(at, "%q: %v", s, err)
		}
		es = append(es, e)
	}
	if err := checkReplicas(es); err != nil {
		return d.errAt(v.path, "%v", err)
	}
	d.branch.Hosts = es
	return nil
}

func setBranchDir(d *decoder, v fval) error {
	dir := v.raw.(string)
	if strings.ContainsRune(dir, 0) {
		return d.errAt(v.path, "NUL in directory name")
	}
	d.branch.Dir = dir
	return nil
}

func setBranchRO(d *decoder, v fval) error {
	d.branch.ReadOnly = v.raw.(bool)
	return nil
}
