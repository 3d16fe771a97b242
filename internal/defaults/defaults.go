// Package defaults declares the default values that more than one layer
// applies, once: config shows them as the defaults of its options, transport
// falls back to them when a caller leaves a field zero, and tests that mean
// "as a mount does by default" use them instead of copies.
package defaults

import "time"

const (
	// Conns is max_conns: the SFTP channels (ssh connections) per host.
	Conns = 4
	// Timeout is timeout=: the limit of every request to a server.
	Timeout = 30 * time.Second
	// CacheTimeout is attr_timeout, entry_timeout, negative_timeout and
	// dcache_timeout: how long what a server said is trusted.
	CacheTimeout = 20 * time.Second
	// PrefetchDepth is prefetch_depth: the levels listed ahead of a walk.
	PrefetchDepth = 6
)
