package transport

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"sshfsm/internal/privdir"
)

// ctlDirPrefix starts the name of a private master's socket directory,
// followed by the process id of the sshfsm that made it and a random part.
const ctlDirPrefix = "sshfsm-ctl-"

// ctlDirPattern is the os.MkdirTemp pattern of this process's directories.
func ctlDirPattern() string { return ctlDirPrefix + strconv.Itoa(os.Getpid()) + "-" }

// sweptParents are the temporary directories swept in this process.
var sweptParents sync.Map

// sweepCtlDirs removes, once per process and parent, the socket directories
// that an sshfsm which is gone (killed, crashed) left in parent. Only a
// directory that is ours, is no link, names a process that no longer runs,
// and holds nothing but sockets of ours that refuse connections (their ssh
// master is gone too) is removed; anything else stays.
func sweepCtlDirs(parent string) {
	if _, done := sweptParents.LoadOrStore(parent, true); done {
		return
	}
	dirs, _ := filepath.Glob(filepath.Join(parent, ctlDirPrefix+"*"))
	for _, dir := range dirs {
		if pid := ctlDirPID(filepath.Base(dir)); privdir.Gone(pid) {
			removeStaleCtlDir(dir)
		}
	}
}

// ctlDirPID is the process id in a socket directory's name, 0 for a name
// that carries none.
func ctlDirPID(name string) int {
	rest := strings.TrimPrefix(name, ctlDirPrefix)
	i := strings.IndexByte(rest, '-')
	if i <= 0 {
		return 0
	}
	pid, err := strconv.Atoi(rest[:i])
	if err != nil {
		return 0
	}
	return pid
}

// removeStaleCtlDir removes dir and the stale sockets in it, unless dir is
// not a private directory of ours or holds anything else.
func removeStaleCtlDir(dir string) {
	if privdir.Check(dir, privdir.Private) != nil {
		return
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range ents {
		sock := filepath.Join(dir, e.Name())
		fi, stale := privdir.StaleSocket(sock)
		if !stale || !privdir.RemoveIfSame(sock, fi) {
			return
		}
	}
	// Fails, leaving it, if something appeared in it meanwhile.
	_ = syscall.Rmdir(dir)
}
