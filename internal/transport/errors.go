package transport

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"strings"
	"syscall"

	"github.com/pkg/sftp"
)

// Dial failure kinds; a *DialError wraps exactly one of them.
var (
	ErrUnreachable = errors.New("host unreachable")
	ErrAuth        = errors.New("authentication failed")
	ErrNoDir       = errors.New("no such directory")
	ErrNotDir      = errors.New("not a directory")
	ErrSSH         = errors.New("ssh failed")
)

// DialError is a failed Dial: the kind, the host and ssh's own last words.
type DialError struct {
	Kind   error  // one of ErrUnreachable, ErrAuth, ErrNoDir, ErrNotDir, ErrSSH
	Host   string // destination as given
	Detail string // ssh's last stderr line, or the underlying error
}

func (e *DialError) Error() string {
	if e.Detail == "" {
		return fmt.Sprintf("%s: %v", e.Host, e.Kind)
	}
	return fmt.Sprintf("%s: %v: %s", e.Host, e.Kind, e.Detail)
}

func (e *DialError) Unwrap() error { return e.Kind }

// classifyStderr picks the dial failure kind from ssh's stderr lines and
// returns the line that explains it best.
func classifyStderr(lines []string) (detail string, kind error) {
	unreachable := []string{"connection refused", "no route to host", "could not resolve",
		"timed out", "network is unreachable", "name or service not known",
		"temporary failure in name resolution", "connection reset", "connection closed by"}
	auth := []string{"permission denied", "too many authentication failures",
		"no more authentication methods", "no supported authentication methods"}
	for i := len(lines) - 1; i >= 0; i-- {
		l := strings.ToLower(lines[i])
		switch {
		case strings.Contains(l, "host key verification failed"),
			strings.Contains(l, "remote host identification has changed"):
			return "host key verification failed", ErrAuth
		case containsAny(l, auth):
			return lines[i], ErrAuth
		case containsAny(l, unreachable):
			return lines[i], ErrUnreachable
		}
	}
	if len(lines) > 0 {
		return lines[len(lines)-1], ErrSSH
	}
	return "", ErrSSH
}

func containsAny(s string, subs []string) bool {
	for _, sub := range subs {
		if strings.Contains(s, sub) {
			return true
		}
	}
	return false
}

// SFTP status codes (draft-ietf-secsh-filexfer-02).
const (
	fxEOF            = 1
	fxNoSuchFile     = 2
	fxPermission     = 3
	fxFailure        = 4
	fxBadMessage     = 5
	fxNoConnection   = 6
	fxConnectionLost = 7
	fxOpUnsupported  = 8
)

// statusCode returns the SFTP status an error carries, 0 if it is not a
// server answer. pkg/sftp turns some statuses into io.EOF and fs errors.
func statusCode(err error) uint32 {
	var se *sftp.StatusError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &se):
		return se.Code
	case errors.Is(err, io.EOF):
		return fxEOF
	case errors.Is(err, fs.ErrNotExist):
		return fxNoSuchFile
	case errors.Is(err, fs.ErrPermission):
		return fxPermission
	}
	return 0
}

// isAnswer reports whether err is the server's answer (as opposed to a
// broken channel or a local failure).
func isAnswer(err error) bool { return statusCode(err) != 0 }

// mapStatus turns a server answer into an error the FUSE layer understands:
// fs.ErrNotExist, fs.ErrPermission, io.EOF or a syscall.Errno.
func mapStatus(err error) error {
	switch statusCode(err) {
	case fxEOF:
		return io.EOF
	case fxNoSuchFile:
		return fs.ErrNotExist
	case fxPermission:
		return fs.ErrPermission
	case fxFailure:
		return syscall.EIO
	case fxBadMessage:
		return syscall.EBADMSG
	case fxNoConnection, fxConnectionLost:
		return syscall.ENOTCONN
	case fxOpUnsupported:
		return syscall.ENOTSUP
	}
	return err
}

// isFailure reports whether err is the generic SSH_FX_FAILURE that OpenSSH
// sends for most errnos, worth a disambiguating probe.
func isFailure(err error) bool { return statusCode(err) == fxFailure }
