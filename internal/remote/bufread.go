package remote

import "context"

// BufferReader is implemented by files that can lend the buffer a read
// arrived in instead of copying it into the caller's.
type BufferReader interface {
	// ReadAtBuf reads up to size bytes at off, like ReadAt. The caller
	// owns data until it calls release, once. io.EOF comes with the data
	// that was read before the end of the file.
	ReadAtBuf(ctx context.Context, size int, off int64) (data []byte, release func(), err error)
}
