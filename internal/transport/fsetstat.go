package transport

import (
	"context"
	"encoding/binary"
	"syscall"
	"time"

	"sshfsm/internal/remote"
)

// SFTP attribute flags and the FSETSTAT packet type.
const (
	fxpFsetstat      = 10
	attrUIDGID       = 0x2
	attrPermissions  = 0x4
	attrACModTime    = 0x8
	setuidSetgidBits = 0o6000
)

var _ remote.HandleAttrSetter = (*file)(nil)

// SetAttrs implements remote.HandleAttrSetter: mode, owner and times in
// one FSETSTAT sent past pkg/sftp (which has no such call), on a live
// handle, again on another channel after a transport failure. Servers
// apply the permissions of one SETSTAT before its owner (OpenSSH does),
// and a chown clears the set-user-ID and set-group-ID bits: such a mode
// goes in a second request, after the owner's.
func (f *file) SetAttrs(ctx context.Context, a remote.SetAttr) error {
	if a.Size != nil || (a.UID == nil) != (a.GID == nil) || (a.Atime == nil) != (a.Mtime == nil) {
		return f.r.SetAttr(ctx, f.name, a)
	}
	if a.Mode != nil && *a.Mode&setuidSetgidBits != 0 && a.UID != nil {
		first := a
		first.Mode = nil
		if err := f.SetAttrs(ctx, first); err != nil {
			return err
		}
		a = remote.SetAttr{Mode: a.Mode}
	}
	if a.Mode == nil && a.UID == nil && a.Atime == nil {
		return nil
	}
	deadline := f.h.deadline(ctx)
	for {
		c, err := f.live(ctx, deadline)
		if err != nil {
			return f.fail("fsetstat", err)
		}
		f.mu.Lock()
		raw, ok := f.raws[c]
		f.mu.Unlock()
		if !ok {
			c.unbegin()
			return f.r.SetAttr(ctx, f.name, a)
		}
		err = f.h.rawFsetstat(ctx, deadline, c, raw, a)
		if final(err) {
			if isFailure(err) {
				err = f.r.settle(ctx, f.name, err, probeFS)
			}
			return f.fail("fsetstat", err)
		}
		c.kill(err)
		f.drop(c)
	}
}

// rawFsetstat sends one FSETSTAT of a on handle and waits for its status;
// the request is counted on c (begun by the caller, ended here).
func (h *Host) rawFsetstat(ctx context.Context, deadline time.Time, c *channel, handle string, a remote.SetAttr) error {
	start := time.Now()
	err := h.rawFsetstatOn(ctx, deadline, c, handle, a, start)
	endWrite(c, start, 0, err)
	return err
}

func (h *Host) rawFsetstatOn(ctx context.Context, deadline time.Time, c *channel, handle string, a remote.SetAttr, start time.Time) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	q := &rawReq{write: true, done: make(chan struct{})}
	id, err := c.raw.add(q)
	if err != nil {
		return err
	}
	pkt, err := fsetstatPacket(nil, id, handle, a)
	if err == nil {
		err = c.wire.inject(pkt, nil)
	}
	if err != nil {
		if c.raw.take(id) != nil {
			q.finish(0, err)
		}
		return err
	}
	_, err = h.rawWait(ctx, deadline, c, q, start)
	return err
}

// fsetstatPacket appends an SSH_FXP_FSETSTAT packet carrying a's mode,
// owner and times to b. SFTP version 3 times are whole seconds.
func fsetstatPacket(b []byte, id uint32, handle string, a remote.SetAttr) ([]byte, error) {
	var flags uint32
	var attrs []byte
	if a.UID != nil {
		flags |= attrUIDGID
		attrs = binary.BigEndian.AppendUint32(attrs, *a.UID)
		attrs = binary.BigEndian.AppendUint32(attrs, *a.GID)
	}
	if a.Mode != nil {
		flags |= attrPermissions
		attrs = binary.BigEndian.AppendUint32(attrs, *a.Mode&07777)
	}
	if a.Atime != nil {
		at, mt := a.Atime.Unix(), a.Mtime.Unix()
		if at < 0 || at > 1<<32-1 || mt < 0 || mt > 1<<32-1 {
			return nil, syscall.EINVAL // not representable in SFTP version 3
		}
		flags |= attrACModTime
		attrs = binary.BigEndian.AppendUint32(attrs, uint32(at))
		attrs = binary.BigEndian.AppendUint32(attrs, uint32(mt))
	}
	b = binary.BigEndian.AppendUint32(b, uint32(1+4+4+len(handle)+4+len(attrs)))
	b = append(b, fxpFsetstat)
	b = binary.BigEndian.AppendUint32(b, id)
	b = binary.BigEndian.AppendUint32(b, uint32(len(handle)))
	b = append(b, handle...)
	b = binary.BigEndian.AppendUint32(b, flags)
	return append(b, attrs...), nil
}
