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
	"time"

	"sshfsm/internal/remote"
)

// SFTP's SETSTAT follows symbolic links, and OpenSSH's lsetstat extension
// is not spoken by the client library: a server that runs commands
// changes a link's own owner with chown -h and its times with touch -h.

// linkAttrMarker is the first line the command prints.
const linkAttrMarker = "sshfsm-linkattr-1"

// linkAttrNotLink is the exit status when the path is not a symbolic link
// (any more): the caller's view is stale.
const linkAttrNotLink = 96

// linkAttrCommand is the sh command applying a's owner and times to the
// link abs. Times are given to touch as @SECONDS.NANOSECONDS.
func linkAttrCommand(abs string, a remote.SetAttr) string {
	dir, name := path.Split(abs)
	name = shellQuote("./" + name)
	cmd := "echo " + linkAttrMarker + " && LC_ALL=C && export LC_ALL && cd -- " + shellQuote(dir) +
		" && { [ -h " + name + " ] || exit " + strconv.Itoa(linkAttrNotLink) + "; }"
	if a.UID != nil || a.GID != nil {
		owner := ""
		if a.UID != nil {
			owner = strconv.FormatUint(uint64(*a.UID), 10)
		}
		if a.GID != nil {
			owner += ":" + strconv.FormatUint(uint64(*a.GID), 10)
		}
		cmd += " && chown -h " + owner + " -- " + name
	}
	stamp := func(t time.Time) string { return fmt.Sprintf("@%d.%09d", t.Unix(), t.Nanosecond()) }
	if a.Atime != nil {
		cmd += " && touch -h -a -d " + stamp(*a.Atime) + " -- " + name
	}
	if a.Mtime != nil {
		cmd += " && touch -h -m -d " + stamp(*a.Mtime) + " -- " + name
	}
	return cmd
}

var _ remote.LinkAttrSetter = hostRemote{}

func (r hostRemote) SetLinkAttr(ctx context.Context, p string, a remote.SetAttr) error {
	if err := r.h.setLinkAttr(ctx, r.abs(p), a); err != nil {
		return fmt.Errorf("set link attributes %s:%s: %w", r.h.o.Host, p, err)
	}
	return nil
}

func (h *Host) setLinkAttr(ctx context.Context, abs string, a remote.SetAttr) error {
	if a.Mode != nil || a.Size != nil || h.x.mode == execNone {
		return remote.ErrNoLinkAttr
	}
	var out []byte
	err := h.Exec(ctx, linkAttrCommand(abs, a), func(rd io.Reader) error {
		var err error
		out, err = io.ReadAll(io.LimitReader(rd, 4096))
		return err
	})
	marked := strings.HasPrefix(string(out), linkAttrMarker+"\n")
	var ee *ExecError
	switch {
	case errors.As(err, &ee) && ee.Status == 255:
		return err
	case !marked && (err == nil || ee != nil):
		return remote.ErrNoLinkAttr
	case ee != nil && ee.Status == linkAttrNotLink:
		return syscall.ENOENT
	case ee != nil && ee.Status == 127:
		return remote.ErrNoLinkAttr
	case ee != nil:
		if errno, ok := errnoOfMessage(ee.Stderr); ok {
			return fmt.Errorf("%w (%s)", errno, ee.Stderr)
		}
	}
	return err
}
