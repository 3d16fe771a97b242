package askpass

import (
	"os"
	"strconv"
	"strings"
)

// A prompt names user@host but no port, so the ssh of a jump host whose
// account has the destination's name (the same machine on another port, a
// tunnel) asks with the very prompt of the destination. What tells them
// apart is who asks: ssh runs its askpass program as a child of its own,
// the ssh that sshfsm started is a child of sshfsm (or of a wrapper that
// ssh_command names), and the ssh of a ProxyJump or ProxyCommand is a
// descendant of that ssh, running the same program.

// maxDepth bounds the walk from the asking process up to sshfsm.
const maxDepth = 16

// procs reads the process tree.
type procs interface {
	parent(pid int) (int, error)
	exe(pid int) (string, error)
}

// askedByOwnSSH reports whether asker, the process that ran askpass, is
// one that owner started, directly or through programs other than the
// asker's own: no process between them runs the asker's program.
func askedByOwnSSH(p procs, owner, asker int) bool {
	exe, err := p.exe(asker)
	if err != nil {
		return false
	}
	pid := asker
	for i := 0; i < maxDepth; i++ {
		ppid, err := p.parent(pid)
		switch {
		case err != nil || ppid <= 0:
			return false
		case ppid == owner:
			return true
		}
		if e, err := p.exe(ppid); err != nil || e == exe {
			return false
		}
		pid = ppid
	}
	return false
}

// procFS reads the process tree from /proc.
type procFS struct{}

func (procFS) parent(pid int) (int, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, err
	}
	// "pid (comm) state ppid ...": comm may hold spaces and parentheses.
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(f) < 2 {
		return 0, os.ErrInvalid
	}
	return strconv.Atoi(f[1])
}

func (procFS) exe(pid int) (string, error) {
	return os.Readlink("/proc/" + strconv.Itoa(pid) + "/exe")
}
