package transport

import "context"

func (f *file) splittable(n int) bool { return false }

func (f *file) readSplit(ctx context.Context, p []byte, off int64) (int, error) { return f.readOne(ctx, p, off) }
