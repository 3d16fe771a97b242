package watch

import (
	"strconv"
	"strings"
)

// marker is the first line of every command's output: a server that runs
// no commands (ForceCommand internal-sftp, a restricted shell) never
// prints it, and anything a login script prints comes before it.
const marker = "sshfsm-watch-1"

// exitNoProgram is the probe's exit status when inotifywait is missing.
const exitNoProgram = 97

// watchedEvents are the inotify events asked for: every change of a name,
// of attributes, contents once written (close_write), and the end of a
// watched directory.
//
// Each write(2) on the server is a modify event, which wakes inotifywait:
// thousands a second while a file is written through the mount, whose
// own writes need no pushing. Measured on 2 cores shared with the server
// (128 KiB O_DIRECT writes through the mount), those wakeups also move
// ssh and sshd between the cores, and cost about 15% of the throughput. So
// modify is asked for only with Options.Writes; without it, a file
// written in place and kept open (a log being appended) or truncated by
// path (truncate(2)) shows its change when closed or at the timeouts.
const watchedEvents = "create,delete,close_write,attrib,moved_from,moved_to,delete_self,move_self"

// writeEvents adds every write and truncation (Options.Writes).
const writeEvents = watchedEvents + ",modify"

// events returns the inotify events to ask for.
func events(writes bool) string {
	if writes {
		return writeEvents
	}
	return watchedEvents
}

// probeCommand checks, with an empty standard input, that the server
// runs commands and has the program, and prints the file system of dir
// (fsCommand). It is separate from the watcher because the watcher keeps
// its standard input open: a server that runs internal-sftp instead of
// commands would wait on it forever.
func probeCommand(program, dir string) string {
	return "echo " + marker + " && { command -v " + quote(program) +
		" >/dev/null 2>&1 || exit " + strconv.Itoa(exitNoProgram) + "; } && " + fsCommand(dir)
}

// watchCommand runs the watcher of events on dir until its standard input
// ends.
// sshd does not signal a command whose session closed, and an idle
// inotifywait would never notice (it writes only when something changes),
// so a reader of the standard input kills it at end of file, which comes
// when we stop, when our ssh dies and when sshd loses the connection.
// inotifywait gets an empty standard input of its own; fd 3 carries the
// original to the reader (an asynchronous command's standard input is
// /dev/null). inotifywait's first line, from the sh that becomes it, is its
// process id, for that reader.
//
// inotifywait writes each event as it comes: a checkout is thousands of
// events, and with modify a file being written is one event per WRITE,
// each of which would wake sshd, our ssh and the mount. So its output is
// passed on in batches: dd forwards what has arrived (one read of up to
// 32 KiB), then the loop sleeps before the next read, for how long
// depending on what dd read:
//   - a full block: none, a burst (a checkout) is under way and more waits;
//   - under 1000 bytes (a lone change: a few events): pauseShort, which
//     gathers the rest of that change;
//   - more: pauseLong. A stream of events (a file being written) then
//     costs the server two short-lived processes (dd, sleep) per pauseLong
//     instead of per pauseShort.
//
// At end of file (dd read nothing), it kills the reader and ends. A
// server whose sleep takes no fractions passes events on without the
// pause, one whose dd does not report bytes copied pauses pauseLong; an
// idle one costs nothing, dd waiting in its read.
//
// inotifywait -r sets one watch per directory before it reports
// anything: on a large tree it takes a while, says "Watches established."
// on its standard error when done, and only changes made after that are
// reported.
func watchCommand(program, dir, events string) string {
	return "echo " + marker + "; exec 3<&0 </dev/null; " +
		`sh -c 'echo $$; exec "$0" "$@"' ` + quote(program) + " -m -r -e " + events +
		" --no-newline --format '%e %w%f%0' -- " + quote(dir) + " 3<&- | { " +
		"read -r w; { read -r line <&3; kill $w 2>/dev/null; } & r=$!; exec 3<&-; " +
		"while s=$(LC_ALL=C dd bs=32768 count=1 2>&1 >&4); case $s in 0+0*) false;; esac; " +
		"do case $s in 1+0*) ;; " + smallBatch + ") sleep " + pauseShort + " 2>/dev/null;; " +
		"*) sleep " + pauseLong + " 2>/dev/null;; esac; done 4>&1; kill $r 2>/dev/null; }"
}

// How long the server gathers events between two batches.
const (
	pauseShort = "0.025"
	pauseLong  = "0.1"
)

// smallBatch matches dd's report (LC_ALL=C) of under 1000 bytes copied:
// "0+1 records in", "0+1 records out", then "N bytes ... copied".
const smallBatch = `*out?[0-9]" bytes"*|*out?[0-9][0-9]" bytes"*|*out?[0-9][0-9][0-9]" bytes"*`

// quote quotes s as one word for a POSIX shell.
func quote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// What the watcher says on its standard error (inotify-tools 3.x).
const (
	msgReady = "Watches established."
	// "Failed to watch DIR; upper limit on inotify watches reached!"
	msgLimit = "upper limit on inotify watches reached"
	// "Couldn't watch new directory DIR: REASON", while running.
	msgNewDir = "Couldn't watch new directory "
)
