package remote

import "context"

// CreatedFile is implemented by files that learned their attributes when
// the open that returned them created them, so that a caller about to
// report them need not ask the server again.
type CreatedFile interface {
	// CreatedAttr returns the attributes the file had once created, with
	// its permissions set; ok is false when this open did not create it.
	// Valid only before the file is written to or truncated.
	CreatedAttr() (a Attr, ok bool)
}

// OpenedFile is implemented by files that learn, without a round trip of
// their own, the attributes the file had when opened: a caller storing
// what it reads as one version of the file checks it read that version.
type OpenedFile interface {
	// OpenedAttr returns those attributes, waiting for them if they are
	// on their way; ok is false when they are not known.
	OpenedAttr(ctx context.Context) (a Attr, ok bool)
}
