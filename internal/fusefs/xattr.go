package fusefs

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"syscall"

	"sshfsm/internal/namespace"
	"sshfsm/internal/transport"
)

// Extended attributes of the mount itself (Options.Xattr): the SHA-256
// of a file's content and the host that serves it. SFTP has no extended
// attributes of its own; nothing else exists and nothing can be set.
//
// They are opt-in: once the filesystem serves any attribute, the kernel
// asks for every file's ACL during ls -l (one request per file, answered
// ENODATA by go-fuse without reaching the nodes), where ENOSYS once
// stops it asking for the whole mount (misc.go).
const (
	xattrSHA256 = "user.sshfsm.sha256"
	xattrHost   = "user.sshfsm.host"
)

// digester is a branch that computes digests where the file lives
// (transport: sha256sum over the host's connection).
type digester interface {
	SHA256(ctx context.Context, p string) ([32]byte, error)
}

// hostNamer is a branch that knows the host serving it (transport).
type hostNamer interface{ HostName() string }

// getxattr answers the mount's own attributes.
func (n *node) getxattr(ctx context.Context, attr string, dest []byte) (uint32, syscall.Errno) {
	var val string
	switch attr {
	case xattrSHA256:
		if n.Mode()&syscall.S_IFMT != syscall.S_IFREG {
			return 0, syscall.ENODATA
		}
		if len(dest) == 0 { // a size query: the hex digest's length is fixed
			return 2 * sha256.Size, 0
		}
		sum, errno := n.digest(ctx)
		if errno != 0 {
			return 0, errno
		}
		val = hex.EncodeToString(sum[:])
	case xattrHost:
		h, errno := n.hostName(ctx)
		if errno != 0 {
			return 0, errno
		}
		val = h
	default:
		return 0, syscall.ENODATA
	}
	if len(dest) < len(val) {
		return uint32(len(val)), syscall.ERANGE
	}
	return uint32(copy(dest, val)), 0
}

// listxattr lists the digest for regular files and the host for all.
func (n *node) listxattr(dest []byte) (uint32, syscall.Errno) {
	list := xattrHost + "\x00"
	if n.Mode()&syscall.S_IFMT == syscall.S_IFREG {
		list = xattrSHA256 + "\x00" + list
	}
	if len(dest) < len(list) {
		return uint32(len(list)), syscall.ERANGE
	}
	return uint32(copy(dest, list)), 0
}

// digest returns the SHA-256 of the file's content: from the disk cache
// when it knows the version the node has, else computed on the server,
// else by reading the file through the mount (which fills the disk cache).
func (n *node) digest(ctx context.Context) (sum [32]byte, errno syscall.Errno) {
	p, ok := n.path()
	if !ok {
		return sum, syscall.ENOENT
	}
	// Writes still queued are part of the content the caller sees.
	if err := n.pending.wait(ctx); err != nil {
		return sum, n.fsys.toErrno(err)
	}
	a, cacheable, errno := n.contentVersion(ctx, p)
	if errno != 0 {
		return sum, errno
	}
	if cacheable && a.Size == 0 {
		return sha256.Sum256(nil), 0
	}
	var v versionKey
	if cacheable {
		var err error
		if v, err = n.fsys.version(ctx, p, a); err != nil {
			cacheable = false
		}
	}
	if cacheable {
		if e := n.fsys.contentEntry(p, v); e != nil {
			sum, ok := e.Digest()
			e.Release()
			if ok {
				return sum, 0
			}
		}
	}
	sum, err := n.serverDigest(ctx, p)
	switch {
	case err == nil:
		if cacheable {
			n.fsys.learnDigest(ctx, p, v, sum)
		}
		return sum, 0
	case ctx.Err() != nil:
		return sum, n.fsys.toErrno(err)
	case !errors.Is(err, errNoDigester) && !errors.Is(err, transport.ErrNoExec):
		n.fsys.log.Debug("digest on the server failed; reading the file", "path", p, "err", err)
	}
	return n.streamDigest(ctx, p)
}

// errNoDigester: the branch serving the path cannot compute digests.
var errNoDigester = errors.New("the branch cannot compute digests")

// serverDigest runs the digest on the host of the branch serving p.
func (n *node) serverDigest(ctx context.Context, p string) (sum [32]byte, err error) {
	r, rp, err := namespace.Serving(ctx, n.fsys.ns, p)
	if err != nil {
		return sum, err
	}
	d, ok := r.(digester)
	if !ok {
		return sum, errNoDigester
	}
	return d.SHA256(ctx, rp)
}

// learnDigest hands a digest the server computed to the disk cache, if
// the file is still the version a: the version's entry shares the stored
// content of the same digest found under another path, or records the
// digest for its own blocks to be checked against once complete.
func (f *filesys) learnDigest(ctx context.Context, p string, v versionKey, sum [32]byte) {
	now, err := f.ns.Lstat(ctx, p)
	if err != nil {
		return
	}
	if cur, err := f.version(ctx, p, now); err != nil || cur != v {
		return // changed while summed: the digest may be of either version
	}
	if e, ok := f.opts.Content.ByDigest(sum, f.cacheKey(p, v)); ok {
		e.Release()
		return
	}
	if e := f.contentEntry(p, v); e != nil {
		e.SetDigest(sum)
		e.Release()
	}
}

// streamDigest reads the file through a handle of its own, served like
// any read-only open (disk cache first), and hashes what it reads. The
// handle is not the kernel's: the node's page cache bookkeeping stays as
// the kernel's opens left it.
func (n *node) streamDigest(ctx context.Context, p string) (sum [32]byte, errno syscall.Errno) {
	h := &handle{n: n}
	if a, ok, errno := n.contentVersion(ctx, p); errno != 0 {
		return sum, errno
	} else if ok {
		if v, err := n.fsys.version(ctx, p, a); err == nil {
			if e := n.fsys.contentEntry(p, v); e != nil {
				h.ce, h.ck = e, v
			}
		}
	}
	f, from, err := namespace.OpenFrom(ctx, n.fsys.ns, p, syscall.O_RDONLY, 0)
	if err != nil {
		h.dropCache()
		return sum, n.fsys.toErrno(err)
	}
	h.f, h.from = f, from
	defer h.Release(context.Background())
	hash := sha256.New()
	buf := make([]byte, blockSize)
	for off := int64(0); ; {
		res, errno := h.Read(ctx, buf, off)
		if errno != 0 {
			return sum, errno
		}
		data, st := res.Bytes(buf)
		k := len(data)
		hash.Write(data)
		res.Done()
		if !st.Ok() {
			return sum, syscall.EIO
		}
		if k == 0 {
			break
		}
		off += int64(k)
	}
	hash.Sum(sum[:0])
	// The entry hashes its blocks in the background once complete; the
	// claim lets the next ask be answered now, and is checked then. The
	// last blocks read may still be on their way to the disk cache.
	if e := h.cached(); e != nil {
		n.fsys.fills.settle(ctx, p, h.ck)
		if _, known := e.Digest(); !known && e.Complete() {
			e.SetDigest(sum)
		}
	}
	return sum, 0
}

// hostName names the host serving the node: for a replica set, its
// members (replica.Set is a hostNamer).
func (n *node) hostName(ctx context.Context) (string, syscall.Errno) {
	p, ok := n.path()
	if !ok {
		return "", syscall.ENOENT
	}
	r, _, err := namespace.Serving(ctx, n.fsys.ns, p)
	if err != nil {
		return "", n.fsys.toErrno(err)
	}
	switch r := r.(type) {
	case hostNamer:
		return r.HostName(), 0
	case interface{ Host() *transport.Host }: // redial: once connected
		if h := r.Host(); h != nil {
			if hn, ok := h.Remote().(hostNamer); ok {
				return hn.HostName(), 0
			}
		}
	}
	return "", syscall.ENODATA
}
