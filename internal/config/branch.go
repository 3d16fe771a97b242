package config

import (
	"errors"
	"fmt"
	"net/netip"
	"strings"
)

// ParseBranch reads one branch argument:
//
//	[NAME=]HOST[,HOST...]:[DIR][:ro|:rw]    HOST: [user@]host or [user@][ipv6]
//
// NAME= before the first ':' (or '[') makes a graft; several hosts are
// replicas of one directory. The end of DIR carries the mode: ":ro" or
// ":rw" is removed and sets it, then one trailing ':' is removed. So a
// directory that itself ends in ":ro", ":rw" or ':' is written with one more
// ':' at the end ("h:/a:ro:" is the directory "/a:ro", read-write), and
// "h::ro" is the remote home, read-only. Colons elsewhere in DIR, and '=',
// ',' or '@' after the first ':', belong to DIR.
func ParseBranch(spec string) (Branch, error) {
	b := Branch{Spec: spec}
	rest := spec
	if i := strings.IndexAny(spec, "=:["); i >= 0 && spec[i] == '=' {
		if err := checkName(spec[:i]); err != nil {
			return b, badBranch(spec, err.Error())
		}
		b.Name, rest = spec[:i], spec[i+1:]
	}
	hosts, dir, err := splitHosts(spec, rest)
	if err != nil {
		return b, err
	}
	if hosts == nil {
		return b, noColon(spec, b.Name)
	}
	for _, h := range hosts {
		e, err := parseEndpoint(h)
		if err != nil {
			return b, badBranch(spec, err.Error())
		}
		b.Hosts = append(b.Hosts, e)
	}
	if err := checkReplicas(b.Hosts); err != nil {
		return b, badBranch(spec, err.Error())
	}
	b.Dir, b.ReadOnly = splitMode(dir)
	return b, nil
}

// splitHosts splits HOST[,HOST...]:DIR at the first ':' outside brackets;
// hosts is nil when there is no such ':'.
func splitHosts(spec, s string) (hosts []string, dir string, err error) {
	start := 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '[':
			if i != start && s[i-1] != '@' {
				return nil, "", badBranch(spec, "expected [user@]host:[dir]")
			}
			end := strings.IndexByte(s[i:], ']')
			if end < 0 {
				return nil, "", badBranch(spec, "missing ']' after IPv6 address")
			}
			i += end
			if i+1 >= len(s) || (s[i+1] != ':' && s[i+1] != ',') {
				return nil, "", badBranch(spec, "expected ':' after ']'")
			}
		case ',':
			hosts = append(hosts, s[start:i])
			start = i + 1
		case ':':
			return append(hosts, s[start:i]), s[i+1:], nil
		}
	}
	return nil, "", nil
}

// noColon is the error for a branch without the ':' that ends its hosts.
func noColon(spec, name string) error {
	form := "[user@]host:[dir]"
	if name != "" {
		form = "NAME=" + form
	}
	if strings.Contains(spec, "/") {
		return badBranch(spec, "expected "+form)
	}
	return badBranch(spec, "expected "+form+" (for the remote home directory: "+spec+":)")
}

// splitMode removes the mode suffix and the one trailing ':' that ends a
// directory written with colons at its end.
func splitMode(dir string) (string, bool) {
	ro := false
	switch {
	case strings.HasSuffix(dir, ":ro"):
		dir, ro = dir[:len(dir)-3], true
	case strings.HasSuffix(dir, ":rw"):
		dir = dir[:len(dir)-3]
	}
	return strings.TrimSuffix(dir, ":"), ro
}

// escapeDir is the inverse of splitMode for a read-write directory.
func escapeDir(dir string) string {
	if strings.HasSuffix(dir, ":ro") || strings.HasSuffix(dir, ":rw") || strings.HasSuffix(dir, ":") {
		return dir + ":"
	}
	return dir
}

// parseEndpoint reads [user@]host, the host being a name, an IPv4 address or
// an IPv6 address, in brackets or (where no ':dir' follows) without.
func parseEndpoint(s string) (Endpoint, error) {
	var e Endpoint
	if at := strings.LastIndexByte(s, '@'); at >= 0 {
		e.User, s = s[:at], s[at+1:]
		if e.User == "" {
			return e, errors.New("empty user name before '@'")
		}
		if strings.ContainsAny(e.User, " \t\n") {
			return e, errors.New("blank in user name")
		}
	}
	bracketed := strings.HasPrefix(s, "[") && strings.HasSuffix(s, "]")
	e.Host = strings.TrimSuffix(strings.TrimPrefix(s, "["), "]")
	return e, checkHost(e.Host, bracketed)
}

func checkHost(host string, bracketed bool) error {
	switch {
	case host == "":
		return errors.New("empty host name")
	case bracketed || strings.Contains(host, ":"):
		if a, err := netip.ParseAddr(host); err != nil || !a.Is6() {
			if bracketed {
				return errors.New("not an IPv6 address inside [ ]")
			}
			return errors.New("invalid character ':' in host name")
		}
	case strings.HasPrefix(host, "-"):
		return errors.New("host name must not start with '-'")
	case strings.ContainsAny(host, " \t\n/[]=,"):
		return errors.New("invalid character in host name")
	}
	return nil
}

// checkReplicas refuses a host listed twice for one branch.
func checkReplicas(hosts []Endpoint) error {
	for i, a := range hosts {
		for _, b := range hosts[:i] {
			if a.Host == b.Host && a.User == b.User {
				return fmt.Errorf("host %s is listed twice", a.Dest())
			}
		}
	}
	return nil
}

// nameMax is the longest file name that Linux allows.
const nameMax = 255

// checkName checks a graft name: one valid file name.
func checkName(name string) error {
	switch {
	case name == "":
		return errors.New("empty graft name")
	case name == "." || name == "..":
		return fmt.Errorf("graft name %q is not a file name", name)
	case strings.ContainsAny(name, "/\x00"):
		return fmt.Errorf("graft name %q must be one file name, without '/'", name)
	case strings.ContainsAny(name, "=:["):
		// The command line's NAME= ends before the first of them, and the
		// branch is shown in that form (fsname, status).
		return fmt.Errorf("graft name %q must not contain '=', ':' or '['", name)
	case len(name) > nameMax:
		return fmt.Errorf("graft name longer than %d bytes", nameMax)
	}
	return nil
}

// checkBranches refuses two grafts of one name and a union branch given
// twice; it returns the index of the later branch, and where(i) names
// branch i in the message.
func checkBranches(bs []Branch, where func(i int) string) (int, error) {
	for i, a := range bs {
		for j, b := range bs[:i] {
			switch {
			case a.Name != "" && a.Name == b.Name:
				return i, fmt.Errorf("graft name %s is used twice (%s and %s)", a.Name, where(j), where(i))
			case a.Name == "" && b.Name == "" && sameDir(a, b):
				return i, fmt.Errorf("the same directory is given twice (%s and %s)", where(j), where(i))
			}
		}
	}
	return 0, nil
}

func sameDir(a, b Branch) bool {
	if a.Dir != b.Dir || len(a.Hosts) != len(b.Hosts) {
		return false
	}
	for i := range a.Hosts {
		if a.Hosts[i].Host != b.Hosts[i].Host || a.Hosts[i].User != b.Hosts[i].User {
			return false
		}
	}
	return true
}

func badBranch(spec, why string) error {
	return Errorf(ExitUsage, "bad remote directory %q: %s", spec, why)
}
