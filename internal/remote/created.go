package remote

// CreatedFile is implemented by files that learned their attributes when
// the open that returned them created them, so that a caller about to
// report them need not ask the server again.
type CreatedFile interface {
	// CreatedAttr returns the attributes the file had once created, with
	// its permissions set; ok is false when this open did not create it.
	// Valid only before the file is written to or truncated.
	CreatedAttr() (a Attr, ok bool)
}
