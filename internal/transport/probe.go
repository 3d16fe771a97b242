package transport

import (
	"context"
	"io/fs"
	"syscall"
)

// OpenSSH's sftp-server reports most errnos as SSH_FX_FAILURE. After such a
// failure (never on success) one cheap probe finds the likely errno.
type probeKind int

const (
	probeExists   probeKind = iota // target exists → EEXIST
	probeIsDir                     // target is a directory → EISDIR
	probeNotDir                    // target is not a directory → ENOTDIR
	probeNotEmpty                  // target directory has entries → ENOTEMPTY
	probeFS                        // filesystem mounted read-only → EROFS
	probeSpace                     // no blocks available → ENOSPC (or EROFS)
)

// stRdonly is SSH2_FXE_STATVFS_ST_RDONLY of statvfs@openssh.com.
const stRdonly = 0x1

// probe returns the first errno a probe confirms, else err unchanged.
func (r hostRemote) probe(ctx context.Context, p string, err error, kinds ...probeKind) error {
	for _, k := range kinds {
		if e := r.probeOne(ctx, p, k); e != nil {
			return e
		}
	}
	return err
}

// settle is probe after a mutation the server answered: its caller is owed
// the real errno, so the probes ignore ctx's cancellation (not its
// deadline; each probe is bounded by Options.Timeout).
func (r hostRemote) settle(ctx context.Context, p string, err error, kinds ...probeKind) error {
	ctx, cancel := detach(ctx)
	defer cancel()
	return r.probe(ctx, p, err, kinds...)
}

func (r hostRemote) probeOne(ctx context.Context, p string, k probeKind) error {
	switch k {
	case probeExists, probeIsDir, probeNotDir:
		a, err := r.stat(ctx, p, false)
		if err != nil {
			return nil
		}
		isDir := a.Mode&syscall.S_IFMT == syscall.S_IFDIR
		switch {
		case k == probeExists:
			return fs.ErrExist
		case k == probeIsDir && isDir:
			return syscall.EISDIR
		case k == probeNotDir && !isDir:
			return syscall.ENOTDIR
		}
	case probeNotEmpty:
		if es, err := r.ReadDir(ctx, p); err == nil && len(es) > 0 {
			return syscall.ENOTEMPTY
		}
	case probeFS, probeSpace:
		return r.probeStatFS(ctx, p, k == probeSpace)
	}
	return nil
}

func (r hostRemote) probeStatFS(ctx context.Context, p string, space bool) error {
	var flag, bavail uint64
	var offered bool
	err := r.h.do(ctx, idempotent, func(c *channel) error {
		if offered = c.ext("statvfs@openssh.com"); !offered {
			return nil
		}
		v, err := c.client.StatVFS(r.abs(p))
		if err == nil {
			flag, bavail = v.Flag, v.Bavail
		}
		return err
	})
	switch {
	case err != nil || !offered:
		return nil
	case flag&stRdonly != 0:
		return syscall.EROFS
	case space && bavail == 0:
		return syscall.ENOSPC
	}
	return nil
}

// settleRename is renameProbe ignoring ctx's cancellation, as settle.
func (r hostRemote) settleRename(ctx context.Context, oldp, newp string, err error) error {
	ctx, cancel := detach(ctx)
	defer cancel()
	return r.renameProbe(ctx, oldp, newp, err)
}

// renameProbe explains a failed rename from the types of both ends.
func (r hostRemote) renameProbe(ctx context.Context, oldp, newp string, err error) error {
	oa, oerr := r.stat(ctx, oldp, false)
	na, nerr := r.stat(ctx, newp, false)
	if oerr == nil && nerr == nil {
		oldDir := oa.Mode&syscall.S_IFMT == syscall.S_IFDIR
		newDir := na.Mode&syscall.S_IFMT == syscall.S_IFDIR
		switch {
		case oldDir && !newDir:
			return syscall.ENOTDIR
		case !oldDir && newDir:
			return syscall.EISDIR
		case oldDir && newDir:
			if e := r.probeOne(ctx, newp, probeNotEmpty); e != nil {
				return e
			}
		}
	}
	return r.probe(ctx, newp, err, probeFS)
}
