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
	if err == nil {
		return 0
	}
	var errno syscall.Errno
	switch {
	case errors.As(err, &errno):
		return errno
	case errors.Is(err, fs.ErrNotExist):
		return syscall.ENOENT
	case errors.Is(err, fs.ErrExist):
		return syscall.EEXIST
	case errors.Is(err, fs.ErrPermission):
		return syscall.EACCES
	case errors.Is(err, context.Canceled):
		return syscall.EINTR
	case errors.Is(err, context.DeadlineExceeded):
		return syscall.ETIMEDOUT
	}
	f.errs.once(f.log, err)
	return syscall.EIO
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
