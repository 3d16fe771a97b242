package remote

import "context"

// HandleAttrSetter is implemented by files that can change several
// attributes of the open file in one request (SFTP FSETSTAT), so that a
// chmod, chown and utimes queued behind a file's writes cost one round
// trip, not one each.
type HandleAttrSetter interface {
	// SetAttrs applies a, which carries no size, to the open file. Owner
	// and group come together, as do both times; a half-given pair is
	// completed from the file's current attributes.
	SetAttrs(ctx context.Context, a SetAttr) error
}

// DirMaker is implemented by remotes that learn a new directory's
// attributes while making it, sparing the stat that would follow.
type DirMaker interface {
	// MkdirAttr is Mkdir, also returning the new directory's attributes
	// with perm set.
	MkdirAttr(ctx context.Context, path string, perm uint32) (Attr, error)
}

// OrderedAttrSetter is implemented by files whose attribute changes can
// be sent behind the writes in flight without waiting for their answers,
// the server applying them after those writes: a set mtime is not undone
// by a write it follows, nor a chmod's set-user-ID bit cleared.
type OrderedAttrSetter interface {
	// SetAttrsBehind sends a (as SetAttrs) at once, to be applied after
	// every write sent on the file before it, and calls done with the
	// outcome, possibly on a goroutine that must not wait for the file.
	// It returns false, having sent nothing, when it cannot promise that
	// order. done's retry reports that the request was lost with its
	// connection: it may or may not have been applied, and is to be sent
	// again once the writes before it are answered.
	SetAttrsBehind(a SetAttr, done func(err error, retry bool)) bool
}
