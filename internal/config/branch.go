package config

import (
	"net/netip"
	"strings"
)

// ParseBranch reads one remote directory argument, [user@]host:[dir], with
// IPv6 addresses in brackets ([::1]:dir, user@[fe80::1%eth0]:dir).
//
// Characters that later forms of the argument will give meaning to are
// refused in host names today: '=' (NAME=host:dir) and ',' (h1,h2:dir); a
// trailing ":ro" or ":rw" on dir is refused too (per-branch modes).
func ParseBranch(spec string) (Branch, error) {
	b := Branch{Spec: spec}
	var hostPart string
	var err error
	if i := strings.IndexAny(spec, "[:"); i >= 0 && spec[i] == '[' {
		hostPart, b.Dir, err = splitBracketed(spec, i)
	} else if i < 0 {
		if strings.Contains(spec, "/") {
			return b, badBranch(spec, "expected [user@]host:[dir]")
		}
		return b, badBranch(spec, "expected [user@]host:[dir] (for the remote home directory: "+spec+":)")
	} else {
		hostPart, b.Dir = spec[:i], spec[i+1:]
	}
	if err != nil {
		return b, err
	}
	if strings.Contains(hostPart, "=") {
		return b, badBranch(spec, "named directories (NAME=host:dir) are not supported yet")
	}
	if strings.Contains(hostPart, ",") {
		return b, badBranch(spec, "several hosts for one directory are not supported yet")
	}
	if at := strings.LastIndexByte(hostPart, '@'); at >= 0 {
		b.User, hostPart = hostPart[:at], hostPart[at+1:]
		if b.User == "" {
			return b, badBranch(spec, "empty user name before '@'")
		}
	}
	b.Host = strings.TrimSuffix(strings.TrimPrefix(hostPart, "["), "]")
	if err := checkHost(spec, hostPart, b.Host); err != nil {
		return b, err
	}
	if strings.HasSuffix(b.Dir, ":ro") || strings.HasSuffix(b.Dir, ":rw") {
		return b, badBranch(spec, "per-directory modes (:ro, :rw) are not supported yet; use -o ro")
	}
	return b, nil
}

// splitBracketed splits user@[addr]:dir where spec[open] is '['.
func splitBracketed(spec string, open int) (hostPart, dir string, err error) {
	end := strings.IndexByte(spec[open:], ']')
	if end < 0 {
		return "", "", badBranch(spec, "missing ']' after IPv6 address")
	}
	end += open
	if end+1 >= len(spec) || spec[end+1] != ':' {
		return "", "", badBranch(spec, "expected ':' after ']'")
	}
	if open > 0 && spec[open-1] != '@' {
		return "", "", badBranch(spec, "expected [user@]host:[dir]")
	}
	return spec[:end+1], spec[end+2:], nil
}

func checkHost(spec, hostPart, host string) error {
	bracketed := strings.HasPrefix(hostPart, "[")
	switch {
	case host == "":
		return badBranch(spec, "empty host name")
	case bracketed:
		if _, err := netip.ParseAddr(host); err != nil || !strings.Contains(host, ":") {
			return badBranch(spec, "not an IPv6 address inside [ ]")
		}
	case strings.HasPrefix(host, "-"):
		return badBranch(spec, "host name must not start with '-'")
	case strings.ContainsAny(host, " \t\n/[]"):
		return badBranch(spec, "invalid character in host name")
	}
	return nil
}

func badBranch(spec, why string) error {
	return Errorf(ExitUsage, "bad remote directory %q: %s", spec, why)
}
