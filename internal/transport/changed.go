package transport

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"path"
	"strconv"
	"strings"
	"time"

	"sshfsm/internal/remote"
)

// A change listing is one remote command: the server's time, then GNU
// find prints the ctime and path of every name whose ctime is recent, by
// the server's own clock (-cmin with a relative age); ages are the
// server's time minus those ctimes: no clock of this machine is compared
// with the server's. A mount checks the listings it loaded from its last
// snapshot with it (cache/persist.go): one command per host instead of a
// listing per directory.

// changedMarker is the first line the command prints, as treeMarker.
const changedMarker = "sshfsm-changed-1"

// changedMax bounds the paths one change listing may report; beyond it
// the listing fails, and the caller checks directory by directory.
const changedMax = 100_000

// changedCommand is the sh command listing the names at or below abs
// whose ctime is less than within old. find's errors (unreadable
// directories, which no listing showed either) are dropped; its status
// then is 1.
func changedCommand(abs string, within time.Duration) string {
	mins := strconv.FormatFloat(within.Minutes(), 'f', 4, 64)
	return "echo " + changedMarker + " && date +%s.%N && cd -- " + shellQuote(abs) +
		" && { find . -maxdepth 0 -printf '' || exit " + strconv.Itoa(treeNoFind) + "; }" +
		" && exec find . -cmin -" + mins + " -printf '%C@ %P\\000' 2>/dev/null"
}

// changedPath is one record of a change listing.
type changedPath struct {
	path string
	age  time.Duration
}

var _ remote.ChangeLister = hostRemote{}

func (r hostRemote) ListChanged(ctx context.Context, dir string, within time.Duration, fn func(string, time.Duration)) error {
	err := r.h.listChanged(ctx, r.abs(dir), dir, within, fn)
	if err != nil {
		return fmt.Errorf("list changes %s:%s: %w", r.h.o.Host, dir, err)
	}
	return nil
}

// listChanged runs one change listing of dir, the tree path whose remote
// absolute path is abs. Paths are reported only once the command ended
// well, so that a failure reports nothing.
func (h *Host) listChanged(ctx context.Context, abs, dir string, within time.Duration, fn func(string, time.Duration)) error {
	if h.x.mode == execNone || h.x.noTree.Load() {
		return remote.ErrTreeUnsupported
	}
	var paths []changedPath
	marked := false
	err := h.Exec(ctx, changedCommand(abs, within), func(r io.Reader) error {
		var err error
		marked, paths, err = readChanged(r, dir)
		return err
	})
	var ee *ExecError
	switch {
	case errors.As(err, &ee) && ee.Status == 255:
		return err
	case !marked && (err == nil || errors.As(err, &ee)),
		errors.As(err, &ee) && ee.Status == treeNoFind:
		return remote.ErrTreeUnsupported
	case errors.As(err, &ee) && ee.Status == 1:
		// Directories find could not read: nothing of them was listed.
	case err != nil:
		return err
	}
	for _, p := range paths {
		fn(p.path, p.age)
	}
	return nil
}

// readChanged reads the output of changedCommand: the marker line, the
// server's time, then records of a ctime, a space and a path below dir's
// remote directory, each ended by a NUL. It returns the paths as tree
// paths (dir itself for find's starting point) with their ages. A path
// that is not clean and relative, or a time that is not one, is hostile:
// the listing fails.
func readChanged(r io.Reader, dir string) (marked bool, paths []changedPath, err error) {
	if dir == "." {
		dir = ""
	}
	br := bufio.NewReaderSize(r, 64<<10)
	for range 64 {
		line, err := br.ReadSlice('\n')
		if string(bytes.TrimRight(line, "\r\n")) == changedMarker {
			marked = true
			break
		}
		if err == io.EOF {
			return false, nil, nil
		}
		if err != nil && err != bufio.ErrBufferFull {
			return false, nil, err
		}
	}
	if !marked {
		return false, nil, nil
	}
	line, err := br.ReadString('\n')
	now, ok := parseEpoch(strings.TrimRight(line, "\r\n"))
	if err != nil || !ok {
		return true, nil, fmt.Errorf("change listing: no server time (%q)", line)
	}
	for {
		rec, err := br.ReadBytes(0)
		if err == io.EOF && len(rec) == 0 {
			return true, paths, nil
		}
		if err != nil {
			return true, nil, fmt.Errorf("change listing cut short: %w", io.ErrUnexpectedEOF)
		}
		ctime, rel, found := strings.Cut(string(rec[:len(rec)-1]), " ")
		t, ok := parseEpoch(ctime)
		if !found || !ok {
			return true, nil, fmt.Errorf("change listing: bad record %q", rec)
		}
		if rel != "" && (path.IsAbs(rel) || path.Clean(rel) != rel || rel == ".." || strings.HasPrefix(rel, "../")) {
			return true, nil, fmt.Errorf("change listing: bad path %q", rel)
		}
		if len(paths) >= changedMax {
			return true, nil, fmt.Errorf("change listing: more than %d paths", changedMax)
		}
		paths = append(paths, changedPath{joinTree(dir, rel), max(now-t, 0)})
	}
}

// parseEpoch parses seconds since the epoch with a fraction, as date
// +%s.%N and find's %C@ print them, into a duration since the epoch.
func parseEpoch(s string) (time.Duration, bool) {
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsNaN(f) || f < 0 || f > 1e11 {
		return 0, false
	}
	return time.Duration(f * float64(time.Second)), true
}
