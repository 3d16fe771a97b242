package remote

import "context"

// BufferWriter is implemented by files that can send the caller's buffer
// as it is instead of a copy of it.
type BufferWriter interface {
	// WriteAtOwned is WriteAt that takes p over: the caller must not touch
	// p until done has been called. done is called once, when no request
	// uses p any more, which may be after WriteAtOwned returned (a request
	// given up for its deadline is still answered later).
	WriteAtOwned(ctx context.Context, p []byte, off int64, done func()) (int, error)
	// WriteSize is the largest p sent as one request.
	WriteSize() int
}
