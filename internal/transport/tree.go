package transport

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"sshfsm/internal/remote"
)

// A tree listing is one remote command: GNU find prints one record per
// entry, in pre-order, with the attributes an SFTP READDIR carries (lstat,
// times in whole seconds), and treeParser turns the records back into
// directory listings. One command costs the server a fraction of what
// OPENDIR, READDIR and CLOSE for every directory cost sftp-server, sshd
// and ssh on both sides.

// treeMarker is the first line the command prints: a server that does not
// run commands (ForceCommand internal-sftp, a restricted shell) never
// prints it.
const treeMarker = "sshfsm-tree-1"

// treeNoFind is the exit status of the command when find lacks -printf
// (not GNU find) or is missing.
const treeNoFind = 97

// treeMaxEntries bounds one listing; beyond it the listing stops and what
// was complete is kept.
const treeMaxEntries = 200_000

// treeFormat is find's -printf format of one record: \001, file type,
// permission bits (octal), size, uid, gid, atime and mtime (seconds with a
// fraction), device and inode numbers, link count, ctime (seconds with a
// fraction), then the path below the starting point, ended by a NUL. SFTP
// carries neither identity nor change time; tools like git compare both
// with what they recorded on the server. Error
// messages of find share the stream (2>&1; find flushes its output before
// each one), so they arrive where they happened.
const treeFormat = `\001%y %m %s %U %G %A@ %T@ %D %i %n %C@ %P\000`

// treeCommand is the sh command listing the tree at abs, depth levels of
// directories below it. probe first checks that find is GNU find (whose
// errors would otherwise arrive in the stream).
func treeCommand(abs string, depth int, probe bool) string {
	cmd := "echo " + treeMarker + " && cd -- " + shellQuote(abs)
	if probe {
		cmd += " && { find . -maxdepth 0 -printf '' || exit " + strconv.Itoa(treeNoFind) + "; }"
	}
	return cmd + " && exec find . -mindepth 1 -maxdepth " + strconv.Itoa(depth+1) +
		" -printf '" + treeFormat + "' 2>&1"
}

var _ remote.TreeLister = hostRemote{}

func (r hostRemote) ListTree(ctx context.Context, dir string, depth int, fn func(string, []remote.DirEntry)) error {
	err := r.h.listTree(ctx, r.abs(dir), dir, depth, fn)
	if err != nil {
		return fmt.Errorf("list tree %s:%s: %w", r.h.o.Host, dir, err)
	}
	return nil
}

// listTree runs one tree listing of dir, the tree path whose remote
// absolute path is abs. A host found unable to run it is remembered as
// such.
func (h *Host) listTree(ctx context.Context, abs, dir string, depth int, fn func(string, []remote.DirEntry)) error {
	if h.x.mode == execNone || h.x.noTree.Load() {
		return remote.ErrTreeUnsupported
	}
	if depth < 0 {
		depth = 0
	}
	cmd := treeCommand(abs, depth, !h.x.gnuFind.Load())
	reported := map[string]bool{}
	p := newTreeParser(dir, depth, treeMaxEntries, func(d string, ents []remote.DirEntry) {
		reported[d] = true
		fn(d, ents)
	})
	ran, err := h.sessionExec(ctx, cmd, p.read)
	if !ran {
		// A listing is read-only: one cut short is run again, and
		// reports only what the first run did not.
		p = newTreeParser(dir, depth, treeMaxEntries, func(d string, ents []remote.DirEntry) {
			if !reported[d] {
				fn(d, ents)
			}
		})
		err = h.Exec(ctx, cmd, p.read)
	}
	var ee *ExecError
	switch {
	case errors.Is(err, remote.ErrTreeTruncated):
		return err
	case errors.As(err, &ee) && ee.Status == 255:
		return err // ssh failed: the connection, not the server's abilities
	case !p.marked && (err == nil || errors.As(err, &ee)),
		errors.As(err, &ee) && ee.Status == treeNoFind:
		h.x.noTree.Store(true)
		h.log.Info("tree listings unavailable; listing directory by directory", "host", h.o.Host, "err", err)
		return remote.ErrTreeUnsupported
	case errors.As(err, &ee) && ee.Status == 1 && p.errors > 0:
		// find's status after the errors it reported in the stream,
		// which the parser accounted for.
	case err != nil:
		return err
	}
	h.x.gnuFind.Store(true)
	p.finish()
	return nil
}
