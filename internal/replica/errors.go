package replica

import (
	"context"
	"errors"
	"io"
	"net"
	"syscall"

	"sshfsm/internal/transport"
)

// connLevel reports whether err says the member could not answer (its
// connection failed, it timed out, or the set cancelled the call because
// the member was taken out) rather than answering. ENOENT, EACCES, EIO and
// the like are answers: every member would give them. ctx is the caller's:
// its own cancellation or deadline is nobody's failure.
func connLevel(ctx context.Context, err error) bool {
	if err == nil || ctx.Err() != nil {
		return false
	}
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		return true
	}
	var errno syscall.Errno
	if errors.As(err, &errno) {
		switch errno {
		case syscall.ENOTCONN, syscall.ECONNRESET, syscall.ECONNREFUSED, syscall.ECONNABORTED,
			syscall.EPIPE, syscall.ESHUTDOWN, syscall.EHOSTDOWN, syscall.EHOSTUNREACH,
			syscall.ENETDOWN, syscall.ENETUNREACH, syscall.ENETRESET, syscall.ETIMEDOUT:
			return true
		}
	}
	return errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.ErrClosedPipe) ||
		errors.Is(err, net.ErrClosed)
}

// notSent reports whether a failed call certainly never reached its
// member, so that sending it elsewhere cannot repeat it.
func notSent(err error) bool {
	return errors.Is(err, transport.ErrNoChannel) || errors.Is(err, errTakenOut)
}

// errTakenOut fails a call that found its member taken out before sending.
var errTakenOut = errors.New("replica taken out")
