package config

import (
	"errors"
	"fmt"
)

// ExitCode is the status sshfsm exits with.
type ExitCode int

// Exit statuses, documented in the man page from ExitCodes.
const (
	ExitOK         ExitCode = 0
	ExitUsage      ExitCode = 1
	ExitMountpoint ExitCode = 2
	ExitConnect    ExitCode = 3
	ExitAuth       ExitCode = 4
	ExitRemoteDir  ExitCode = 5
	ExitMount      ExitCode = 6
)

// ExitCodeDoc describes one exit status.
type ExitCodeDoc struct {
	Code ExitCode
	Help string
}

// ExitCodes lists every exit status with its meaning, in order.
func ExitCodes() []ExitCodeDoc {
	return []ExitCodeDoc{
		{ExitOK, "success: the filesystem is mounted (or help, version or man page printed); with -f, it was unmounted cleanly"},
		{ExitUsage, "usage error: unknown option, bad option value, bad branch, error in the config file, missing argument"},
		{ExitMountpoint, "the mountpoint does not exist, is not a directory, or is already a mountpoint"},
		{ExitConnect, "the host is unreachable, refused the connection, or ssh failed before the SFTP session started"},
		{ExitAuth, "authentication failed or the host key could not be verified"},
		{ExitRemoteDir, "the remote directory does not exist or is not a directory"},
		{ExitMount, "the FUSE mount failed, the metrics= address could not be bound, or sshfsm was interrupted or died before the mount was ready"},
	}
}

// Error is a failure with the exit status it maps to. Its message is one
// line without the "sshfsm: " prefix.
type Error struct {
	Code ExitCode
	Msg  string
}

func (e *Error) Error() string { return e.Msg }

// Errorf returns an *Error with code and a formatted message.
func Errorf(code ExitCode, format string, args ...any) error {
	return &Error{Code: code, Msg: fmt.Sprintf(format, args...)}
}

// CodeOf returns the exit status that err maps to: the code of the first
// *Error in its chain, ExitOK for nil, and ExitMount otherwise.
func CodeOf(err error) ExitCode {
	if err == nil {
		return ExitOK
	}
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return ExitMount
}
