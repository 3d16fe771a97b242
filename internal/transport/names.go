package transport

import (
	"fmt"
	"strings"
	"syscall"
)

// Names of open files. A file re-opens by path when its channel dies, so
// its path must stay the file's name: a rename made through this host
// moves the path of every open file at or below the old name, with the
// replay log of its writable handles (journal.go), and a file unlinked or
// renamed over through this host is marked gone. On a local disk an
// unlinked open file stays readable and writable until closed; over SFTP
// its handle dies with the channel and nothing can open it again by name.
// Opening what the path names now would make the logged changes to
// another file (or recreate the removed one), so a gone file's re-open
// fails with EIO for good instead: the next read, write, fsync or close
// reports it. Renames and removals made on the server by others are not
// seen here: a re-open then finds another file or none, which the re-open
// rule (file) turns into EIO as for any change underneath.

// errGone marks a file that lost its name while its channel was down.
var errGone = fmt.Errorf("file was unlinked or renamed over while its connection was lost: %w", syscall.EIO)

// register records f, just opened, among the open files.
func (h *Host) register(f *file) {
	h.logsMu.Lock()
	defer h.logsMu.Unlock()
	if h.files == nil {
		h.files = map[*file]struct{}{}
	}
	h.files[f] = struct{}{}
}

// unregister forgets f, closed.
func (h *Host) unregister(f *file) {
	h.logsMu.Lock()
	defer h.logsMu.Unlock()
	delete(h.files, f)
}

// where returns the path f has now, and whether it has none.
func (f *file) where() (abs string, gone bool) {
	f.h.logsMu.Lock()
	defer f.h.logsMu.Unlock()
	return f.abs, f.gone
}

// under reports whether p is dir or below it.
func under(p, dir string) bool {
	return p == dir || strings.HasPrefix(p, dir+"/") || dir == "/"
}

// moved brings open files and logs in line with a rename of oldAbs to
// newAbs that succeeded: what newAbs named is gone, what was at or below
// oldAbs is now at or below newAbs.
func (h *Host) moved(oldAbs, newAbs string) {
	if oldAbs == newAbs {
		return
	}
	h.logsMu.Lock()
	defer h.logsMu.Unlock()
	h.goneLocked(newAbs)
	for f := range h.files {
		if !f.gone && under(f.abs, oldAbs) {
			f.abs = newAbs + f.abs[len(oldAbs):]
		}
	}
	for p, l := range h.logs {
		if under(p, oldAbs) {
			delete(h.logs, p)
			h.logs[newAbs+p[len(oldAbs):]] = l
		}
	}
}

// removed marks the open files of abs gone after an unlink that
// succeeded.
func (h *Host) removed(abs string) {
	h.logsMu.Lock()
	defer h.logsMu.Unlock()
	h.goneLocked(abs)
}

// goneLocked marks the files open at abs gone and detaches their log
// from the name: a file opened at abs from now on is another file.
func (h *Host) goneLocked(abs string) {
	for f := range h.files {
		if !f.gone && f.abs == abs {
			f.gone = true
		}
	}
	delete(h.logs, abs)
}
