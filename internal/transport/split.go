package transport

import (
	"context"
	"errors"
	"io"
	"sync"

	"github.com/pkg/sftp"
)

// maxSplit bounds the channels one read is spread over.
const maxSplit = 8

var errNoSplit = errors.New("file not readable on extra channels")

// splittable reports whether a read of n bytes is worth serving over
// several channels: read-only files (whose identity can be checked on each
// channel), at least two packets, more than one channel up. With one up,
// the read asks for more (Options.OnDemand) and the next ones split; it
// asks even while the file's attributes are still being learned, so that
// a burst of first reads, which cannot split yet, still opens channels.
func (f *file) splittable(n int) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.write || f.noSplit || f.primary == nil || n < 2*f.primary.maxPacket {
		return false
	}
	f.h.mu.Lock()
	defer f.h.mu.Unlock()
	up := 0
	for _, c := range f.h.chans {
		if c != nil && !c.isDead() {
			up++
		}
	}
	if up < 2 {
		f.h.want(min(n/f.primary.maxPacket, maxSplit) - up)
	}
	return up > 1 && f.knownOK
}

// readSplit reads size bytes into l in pieces of whole packets served
// concurrently by the least busy channels, each with its own handle on the
// file (opened there on first need and checked against the attributes seen
// at open).
func (f *file) readSplit(ctx context.Context, l *lease, size int, off int64) (int, error) {
	mp := f.primary.maxPacket
	cs := f.h.live(min(size/mp, maxSplit))
	if len(cs) < 2 {
		for _, c := range cs {
			c.unbegin()
		}
		return f.readOne(ctx, l, size, off)
	}
	piece := (size + len(cs) - 1) / len(cs)
	piece = (piece + mp - 1) / mp * mp
	type result struct {
		n   int
		err error
	}
	res := make([]result, len(cs))
	var wg sync.WaitGroup
	for i, c := range cs {
		lo, hi := min(i*piece, size), min((i+1)*piece, size)
		wg.Add(1)
		go func() {
			defer wg.Done()
			res[i].n, res[i].err = f.readPiece(ctx, c, l.b[lo:hi], off+int64(lo), l)
		}()
	}
	wg.Wait()
	n := 0
	for i, r := range res {
		n += r.n
		if r.err != nil && r.err != io.EOF {
			return 0, r.err
		}
		if r.err == io.EOF || r.n < min((i+1)*piece, size)-i*piece {
			return n, io.EOF
		}
	}
	return n, nil
}

// readPiece reads one piece on c (counted), falling back to the primary
// handle when c cannot serve it.
func (f *file) readPiece(ctx context.Context, c *channel, b []byte, off int64, l *lease) (int, error) {
	dctx, cancel := f.h.withDeadline(ctx)
	defer cancel()
	sf, err := f.handleOn(dctx, c)
	if err == nil {
		f.mu.Lock()
		raw, ok := f.raws[c]
		f.mu.Unlock()
		var n int
		if ok {
			n, err = f.readPieceRaw(dctx, c, raw, b, off, l)
		} else {
			l.hold()
			err = f.h.run(dctx, c, idempotent, func() error {
				f.markSent()
				var err error
				n, err = sf.ReadAt(b, off)
				c.stats.bytesRead.Add(uint64(n))
				return err
			}, func(bool) { l.release() })
		}
		if gaveUp(err) {
			return 0, err // n may still be written by the abandoned request
		}
		if err == nil || isAnswer(err) {
			return n, err
		}
		c.kill(err)
		f.drop(c)
	}
	if dctx.Err() != nil {
		return 0, dctx.Err()
	}
	return f.readOnPrimary(ctx, l, b, off)
}

// readOnPrimary reads b at off through pkg/sftp on the file's own handle,
// re-opened if need be: what a channel that could not serve its piece
// leaves.
func (f *file) readOnPrimary(ctx context.Context, l *lease, b []byte, off int64) (int, error) {
	var n int
	err := f.do(ctx, idempotent, l, func(c *channel, sf *sftp.File) error {
		f.markSent()
		var err error
		n, err = sf.ReadAt(b, off)
		c.stats.bytesRead.Add(uint64(n))
		return err
	})
	if err != nil && err != io.EOF && !isAnswer(err) {
		return 0, err // n may still be written by an abandoned request
	}
	return n, err
}

// readPieceRaw reads b at off with c's handle on the file, whose string
// is raw, past pkg/sftp: every packet of the piece is in flight at once,
// and the answers land in b without a copy. Counted on c (begun by the
// caller). A short answer within the file is asked again for the rest.
func (f *file) readPieceRaw(ctx context.Context, c *channel, raw string, b []byte, off int64, l *lease) (int, error) {
	deadline := f.h.deadline(ctx)
	f.markSent()
	got := 0
	for {
		n, err := f.h.rawReadAll(ctx, deadline, c, raw, l, b[got:], off+int64(got))
		got += n
		if err == nil && n == 0 {
			err = io.EOF // an empty answer: nothing more to read
		}
		if err != nil || got == len(b) {
			return got, err
		}
		c.begin()
	}
}

// handleOn returns the file's handle on c, opening it there if needed. On
// failure the request counted on c is ended.
func (f *file) handleOn(ctx context.Context, c *channel) (*sftp.File, error) {
	f.mu.Lock()
	sf, closed, noSplit := f.handles[c], f.closed, f.noSplit
	f.mu.Unlock()
	switch {
	case closed:
		c.unbegin()
		return nil, errNoSplit
	case sf != nil:
		return sf, nil
	case noSplit:
		c.unbegin()
		return nil, errNoSplit
	}
	sf, err := f.openChecked(ctx, c, false)
	if err != nil {
		if lostForGood(err) {
			f.mu.Lock()
			f.noSplit = true
			f.mu.Unlock()
		}
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed || f.handles[c] != nil {
		f.h.bg(c, sf.Close)
		if f.closed {
			return nil, errNoSplit
		}
		sf = f.handles[c]
	} else {
		f.setHandle(c, sf)
	}
	c.begin()
	return sf, nil
}
