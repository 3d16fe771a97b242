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
