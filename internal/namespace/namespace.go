package namespace

import (
	"fmt"
	"strings"
	"syscall"

	"sshfsm/internal/remote"
)

// Namespace is the whole tree seen at the mountpoint. Paths are relative to
// the mountpoint ("" is its root) and every component passes ValidName.
type Namespace interface {
	remote.Remote
}

// NameMax is the longest file name accepted, as on Linux.
const NameMax = 255

// ValidName reports whether name may be one component of a remote path.
func ValidName(name string) error {
	switch {
	case name == "" || name == "." || name == "..":
		return fmt.Errorf("invalid name %q: %w", name, syscall.EINVAL)
	case len(name) > NameMax:
		return fmt.Errorf("name too long (%d bytes): %w", len(name), syscall.ENAMETOOLONG)
	case strings.ContainsAny(name, "/\x00"):
		return fmt.Errorf("invalid name %q: %w", name, syscall.EINVAL)
	}
	return nil
}

// ValidPath checks every component of a relative path ("" is the root).
func ValidPath(p string) error {
	if p == "" {
		return nil
	}
	for _, c := range strings.Split(p, "/") {
		if err := ValidName(c); err != nil {
			return err
		}
	}
	return nil
}

// Single is a namespace of one branch.
func Single(r remote.Remote) Namespace { return single{r} }

type single struct{ remote.Remote }
