package remote

// Health is implemented by remotes that know whether their host can answer
// now. Layers that combine several remotes (unions, replica sets) use it to
// skip a host that is down instead of waiting for its timeout.
type Health interface {
	// Up reports whether calls can be sent now: false while the host is
	// unreachable or reconnecting.
	Up() bool
	// Changed returns a channel that is closed at the next change of the
	// host's connections; Up tells what the change was. Callers take a new
	// channel after each close.
	Changed() <-chan struct{}
}
