package fusefs

import (
	"context"
	"errors"
	"io/fs"
	"log/slog"
	"sync"
	"syscall"
)

// toErrno is the one translation of Go errors into the errno the kernel
// gets. Errors it cannot classify become EIO and are logged once per
// distinct message.
func (f *filesys) toErrno(err error) syscall.Errno {
	errno, known := classify(err)
	if !known {
		f.errs.once(f.log, err)
	}
	return errno
}

// Errno is the errno the mount answers for err (EIO for anything it does
// not know), without logging: for tests that check what a caller sees.
func Errno(err error) syscall.Errno {
	errno, _ := classify(err)
	return errno
}

// classify maps err to its errno; known is false for the EIO of an error
// no rule matched.
func classify(err error) (errno syscall.Errno, known bool) {
	switch {
	case err == nil:
		return 0, true
	case errors.As(err, &errno):
		return errno, true
	case errors.Is(err, fs.ErrNotExist):
		return syscall.ENOENT, true
	case errors.Is(err, fs.ErrExist):
		return syscall.EEXIST, true
	case errors.Is(err, fs.ErrPermission):
		return syscall.EACCES, true
	case errors.Is(err, context.Canceled):
		return syscall.EINTR, true
	case errors.Is(err, context.DeadlineExceeded):
		return syscall.ETIMEDOUT, true
	}
	return syscall.EIO, false
}

// errLog remembers which unclassified errors were logged already.
type errLog struct {
	mu   sync.Mutex // guards seen
	seen map[string]struct{}
}

// errLogMax bounds the remembered messages; beyond it every new message is
// still logged, but not remembered.
const errLogMax = 4096

func (l *errLog) once(lg *slog.Logger, err error) {
	msg := err.Error()
	l.mu.Lock()
	_, dup := l.seen[msg]
	if !dup && len(l.seen) < errLogMax {
		if l.seen == nil {
			l.seen = map[string]struct{}{}
		}
		l.seen[msg] = struct{}{}
	}
	l.mu.Unlock()
	if !dup {
		lg.Error("I/O error reported as EIO", "err", err)
	}
}
