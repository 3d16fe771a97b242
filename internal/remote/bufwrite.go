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

// AsyncWriter is implemented by files that can send a write without a
// goroutine waiting for its answer.
type AsyncWriter interface {
	BufferWriter
	// WriteAtAsync is WriteAtOwned that returns once the request is on
	// its way; p is the caller's again once release has been called, and
	// done gets the outcome, once, never before WriteAtAsync was called
	// and never on the caller's goroutine. It may run on the transport's
	// own goroutine, so it must be quick and must neither send nor wait
	// on requests.
	WriteAtAsync(p []byte, off int64, release func(), done func(error))
}
