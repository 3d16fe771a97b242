package cache

import "fmt"

// Mode is a mount's coherence mode (-o cache=): what it may answer from
// its caches without asking the server.
type Mode int

const (
	// Auto trusts attributes and listings for their timeouts; an open
	// revalidates size and mtime and reuses cached content when they
	// are unchanged (close-to-open consistency, as NFS).
	Auto Mode = iota
	// Immutable: the tree never changes. Nothing is revalidated once
	// known, and persisted metadata and content are used as they are.
	Immutable
	// Strict: no content is reused across opens without revalidation,
	// and persisted metadata is not answered from before it is
	// revalidated; for trees edited from both sides.
	Strict
)

func (m Mode) String() string {
	switch m {
	case Auto:
		return "auto"
	case Immutable:
		return "immutable"
	case Strict:
		return "strict"
	}
	return fmt.Sprintf("Mode(%d)", int(m))
}

// ParseMode parses a -o cache= value; "yes" is Auto.
func ParseMode(s string) (Mode, error) {
	switch s {
	case "auto", "yes":
		return Auto, nil
	case "immutable":
		return Immutable, nil
	case "strict":
		return Strict, nil
	}
	return Auto, fmt.Errorf("unknown cache mode %q", s)
}
