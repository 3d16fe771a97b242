package idmap

import (
	"os/user"
	"strconv"
)

// SystemNames resolves names through the local user and group databases;
// a name that is a number is taken as the id itself.
func SystemNames() Resolver {
	return Resolver{
		LookupUser: func(name string) (uint32, error) {
			if u, err := user.Lookup(name); err == nil {
				return parseID(u.Uid)
			}
			return parseID(name)
		},
		LookupGroup: func(name string) (uint32, error) {
			if g, err := user.LookupGroup(name); err == nil {
				return parseID(g.Gid)
			}
			return parseID(name)
		},
	}
}

func parseID(s string) (uint32, error) {
	n, err := strconv.ParseUint(s, 10, 32)
	return uint32(n), err
}
