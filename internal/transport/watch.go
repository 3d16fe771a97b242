package transport

import (
	"context"
	"io"
)

// A watcher on the server (internal/watch) is a remote command that runs
// as long as the mount: it is silent for as long as nothing changes, it
// must end on the server when we stop it or lose the connection, and its
// diagnostics matter while it runs. Exec suits none of that, so Stream
// differs from it in three ways:
//
//   - no idle limit: a dead link still ends the stream, because ssh's
//     ServerAliveInterval (or the channel watchdog of slot 0) ends the
//     connection the command runs on;
//   - its standard input is a pipe held open until Stream returns: the
//     remote command sees end of file on it when we stop, when the local
//     ssh dies and when sshd loses the connection, and is expected to
//     exit then (sshd does not signal a command whose session closed);
//   - each line of its standard error goes to errLine as it arrives
//     (from another goroutine than out's).

// streamIdle stands for "no idle limit" in the reader Exec uses.
const streamIdle = 1 << 62

// Stream runs command like Exec, with the differences above. out reads the
// standard output until it ends or out fails; a failure of out kills the
// command. Stream returns once the local ssh process has exited, with the
// same errors as Exec (*ExecError for a command that exited non-zero).
func (h *Host) Stream(ctx context.Context, command string, out func(io.Reader) error, errLine func(string)) error {
	return h.runCommand(ctx, command, commandOpts{kind: "watch", idle: streamIdle, stdin: true, errLine: errLine}, out)
}
