package transport

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"

	"sshfsm/internal/remote"
)

// SFTP has no request that creates a FIFO, a socket or a device node. A
// server that runs commands creates them with mkfifo, mknod, and python3
// or perl binding a Unix socket; one that does not (ForceCommand
// internal-sftp, a restricted shell) never prints mknodMarker, and the
// node cannot be made (remote.ErrNoNodes, EPERM).

// mknodMarker is the first line the command prints.
const mknodMarker = "sshfsm-mknod-1"

// Exit statuses of the command besides the tools' own.
const (
	mknodExists  = 17 // the name exists (EEXIST)
	mknodNoTool  = 98 // no tool creates this kind of node
	mknodBadType = 99 // not a special file type (never sent)
)

// mknodSocketPy and mknodSocketPl bind a Unix socket at their first
// argument and give it the mode of their second (octal); the socket is
// closed when they exit, leaving the node as bind(2) on a local disk
// leaves it after its process ended.
const (
	mknodSocketPy = "import os, socket, sys\n" +
		"s = socket.socket(socket.AF_UNIX)\n" +
		"s.bind(sys.argv[1])\n" +
		"os.chmod(sys.argv[1], int(sys.argv[2], 8))\n"
	mknodSocketPl = `use Socket; socket(S, PF_UNIX, SOCK_STREAM, 0) or die "$!\n"; ` +
		`bind(S, pack_sockaddr_un($ARGV[0])) or die "$!\n"; chmod(oct($ARGV[1]), $ARGV[0]) or die "$!\n";`
)

// mknodCommand is the sh command creating abs as the special file of mode
// and dev. The name is used relative to its directory, so that a socket's
// address fits sun_path however deep the directory is.
func mknodCommand(abs string, mode, dev uint32) string {
	dir, name := path.Split(abs)
	name = shellQuote("./" + name)
	perm := fmt.Sprintf("%04o", mode&07777)
	var mk string
	switch mode & syscall.S_IFMT {
	case syscall.S_IFIFO:
		mk = "command -v mkfifo >/dev/null || exit " + strconv.Itoa(mknodNoTool) +
			"; exec mkfifo -m " + perm + " -- " + name
	case syscall.S_IFCHR, syscall.S_IFBLK:
		kind := "c"
		if mode&syscall.S_IFMT == syscall.S_IFBLK {
			kind = "b"
		}
		mk = "command -v mknod >/dev/null || exit " + strconv.Itoa(mknodNoTool) +
			"; exec mknod -m " + perm + " -- " + name + " " + kind + " " +
			strconv.FormatUint(uint64(unix.Major(uint64(dev))), 10) + " " +
			strconv.FormatUint(uint64(unix.Minor(uint64(dev))), 10)
	case syscall.S_IFSOCK:
		mk = "if command -v python3 >/dev/null; then exec python3 -c " + shellQuote(mknodSocketPy) + " " + name + " " + perm +
			"; elif command -v perl >/dev/null; then exec perl -e " + shellQuote(mknodSocketPl) + " " + name + " " + perm +
			"; else exit " + strconv.Itoa(mknodNoTool) + "; fi"
	default:
		mk = "exit " + strconv.Itoa(mknodBadType)
	}
	return "echo " + mknodMarker + " && LC_ALL=C && export LC_ALL && cd -- " + shellQuote(dir) +
		" && { if [ -e " + name + " ] || [ -h " + name + " ]; then exit " + strconv.Itoa(mknodExists) + "; fi; } && " + mk
}

var _ remote.NodeMaker = hostRemote{}

func (r hostRemote) Mknod(ctx context.Context, p string, mode, dev uint32) error {
	if err := r.h.mknod(ctx, r.abs(p), mode, dev); err != nil {
		return fmt.Errorf("mknod %s:%s: %w", r.h.o.Host, p, err)
	}
	return nil
}

// mknod runs the command creating abs on the host.
func (h *Host) mknod(ctx context.Context, abs string, mode, dev uint32) error {
	if h.x.mode == execNone {
		return remote.ErrNoNodes
	}
	var out []byte
	err := h.Exec(ctx, mknodCommand(abs, mode, dev), func(rd io.Reader) error {
		var err error
		out, err = io.ReadAll(io.LimitReader(rd, 4096))
		return err
	})
	marked := strings.HasPrefix(string(out), mknodMarker+"\n")
	var ee *ExecError
	switch {
	case errors.As(err, &ee) && ee.Status == 255:
		return err // ssh failed: the connection, not the server's abilities
	case !marked && (err == nil || ee != nil):
		return remote.ErrNoNodes // the server runs no commands
	case ee != nil && ee.Status == mknodExists:
		return syscall.EEXIST
	case ee != nil && (ee.Status == mknodNoTool || ee.Status == mknodBadType || ee.Status == 127):
		return remote.ErrNoNodes
	case ee != nil:
		if errno, ok := errnoOfMessage(ee.Stderr); ok {
			return fmt.Errorf("%w (%s)", errno, ee.Stderr)
		}
	}
	return err
}

// errnoMessages are strerror's texts (C locale) of the errors creating a
// node can meet, as the tools print them.
var errnoMessages = []struct {
	text  string
	errno syscall.Errno
}{
	{"File exists", syscall.EEXIST},
	{"Address already in use", syscall.EEXIST},
	{"No such file or directory", syscall.ENOENT},
	{"Not a directory", syscall.ENOTDIR},
	{"Permission denied", syscall.EACCES},
	{"Operation not permitted", syscall.EPERM},
	{"No space left on device", syscall.ENOSPC},
	{"Disk quota exceeded", syscall.EDQUOT},
	{"Read-only file system", syscall.EROFS},
	{"File name too long", syscall.ENAMETOOLONG},
	{"Too many levels of symbolic links", syscall.ELOOP},
	{"Invalid argument", syscall.EINVAL},
	{"Operation not supported", syscall.EPERM},
}

// errnoOfMessage finds the errno whose text the last lines of a tool's
// standard error carry.
func errnoOfMessage(stderr string) (syscall.Errno, bool) {
	for _, m := range errnoMessages {
		if strings.Contains(stderr, m.text) {
			return m.errno, true
		}
	}
	return 0, false
}
