package transport

import (
	"encoding/binary"
	"os"

	"github.com/pkg/sftp"

	"sshfsm/internal/remote"
)

// A file created exclusively costs one round trip: its OPEN carries the
// permissions (pkg/sftp's cannot: the session's writer adds them to it,
// openHook) and an LSTAT of the path follows it at once, on the same
// session. The server handles a session's requests in order — OpenSSH's
// sftp-server one at a time, pkg/sftp's server its OPEN and LSTAT on one
// worker — so when the exclusive OPEN succeeded, the LSTAT found the file
// it made, with the permissions the server's umask left. Only when those
// differ from the ones asked for does an FSETSTAT follow, as before, and
// any other way this fails falls back to it (chmodStat). A MKDIR, which
// fails when the name exists, goes the same way.

const (
	fxpOpen      = 3
	fxpMkdir     = 14
	sftpCreat    = 0x08 // SSH_FXF_CREAT
	sftpExcl     = 0x20 // SSH_FXF_EXCL
	maxHookedLen = 64 << 10
)

// openHook asks the session's writer to add permissions to pkg/sftp's
// exclusive OPEN (or MKDIR) of abs, and tells when that packet is queued.
type openHook struct {
	typ  byte // fxpOpen or fxpMkdir
	abs  string
	perm uint32
	sent chan struct{} // closed once the packet, with perm, is queued
}

// hookOpen registers h; false when an OPEN of the same path is already
// hooked on this channel (two creates of one name: neither may get the
// other's permissions).
func (c *wireWriter) hookOpen(h *openHook) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, o := range c.opens {
		if o.abs == h.abs {
			return false
		}
	}
	c.opens = append(c.opens, h)
	return true
}

// unhookOpen forgets h, whether or not its OPEN went out.
func (c *wireWriter) unhookOpen(h *openHook) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i, o := range c.opens {
		if o == h {
			c.opens = append(c.opens[:i], c.opens[i+1:]...)
			return
		}
	}
}

// hooked returns p, a whole packet pkg/sftp writes (mu held, at a packet
// boundary), with the permissions of the hook it matches added, and that
// hook; p and nil when it matches none. A match is an OPEN that creates
// its path exclusively, or a MKDIR, carrying no attributes.
func (c *wireWriter) hooked(p []byte) ([]byte, *openHook) {
	if len(p) < 9+4 || (p[4] != fxpOpen && p[4] != fxpMkdir) || int(binary.BigEndian.Uint32(p))+4 != len(p) || len(p) > maxHookedLen {
		return p, nil
	}
	typ := p[4]
	n := int(binary.BigEndian.Uint32(p[9:13]))
	rest := p[13:]
	tail := 4 // the attributes' flags
	if typ == fxpOpen {
		tail = 8 // pflags first
	}
	if n > len(rest) || len(rest)-n != tail {
		return p, nil
	}
	path := string(rest[:n])
	if binary.BigEndian.Uint32(rest[len(rest)-4:]) != 0 {
		return p, nil
	}
	if pflags := binary.BigEndian.Uint32(rest[n:]); typ == fxpOpen && pflags&(sftpCreat|sftpExcl) != sftpCreat|sftpExcl {
		return p, nil
	}
	for i, h := range c.opens {
		if h.abs != path || h.typ != typ {
			continue
		}
		c.opens = append(c.opens[:i], c.opens[i+1:]...)
		q := make([]byte, 0, len(p)+4)
		q = binary.BigEndian.AppendUint32(q, uint32(len(p)))
		q = append(q, p[4:len(p)-4]...)
		q = binary.BigEndian.AppendUint32(q, attrPermissions)
		q = binary.BigEndian.AppendUint32(q, h.perm&07777)
		return q, h
	}
	return p, nil
}

// createOn creates abs exclusively on c with perm, opened with flags
// (which hold O_CREATE and O_EXCL), and returns the file's attributes;
// made reports that the OPEN succeeded (an error is then the one of
// setting the permissions, and the file is closed).
func createOn(c *channel, abs string, flags int, perm uint32) (sf *sftp.File, made bool, a remote.Attr, err error) {
	h := &openHook{typ: fxpOpen, abs: abs, perm: perm & 07777, sent: make(chan struct{})}
	if c.wire == nil || !c.wire.hookOpen(h) {
		return createChmod(c.client, abs, flags, perm)
	}
	var fi os.FileInfo
	sent, ferr := lstatBehind(c, h, func() error {
		sf, err = c.client.OpenFile(abs, flags)
		return err
	}, &fi)
	if err != nil {
		return nil, false, remote.Attr{}, err
	}
	if !sent || ferr != nil || !fi.Mode().IsRegular() {
		// The OPEN went without the permissions (pkg/sftp sent it
		// otherwise than expected), or the LSTAT did not tell.
		return chmodOrClose(sf, perm)
	}
	a = attrOf(fi)
	if a.Mode&07777 != perm&07777 {
		// The server's umask took bits away.
		if err := sf.Chmod(os.FileMode(perm & 07777)); err != nil {
			sf.Close()
			return nil, true, remote.Attr{}, err
		}
		a.Mode = a.Mode&^07777 | perm&07777
	}
	return sf, true, a, nil
}

// lstatBehind runs op, which sends h's packet, and an LSTAT of h.abs on
// the same session right behind that packet, and waits for both. sent
// reports that the packet went out with the permissions; the LSTAT's
// outcome is in fi and ferr (os.ErrInvalid when it was not sent).
func lstatBehind(c *channel, h *openHook, op func() error, fi *os.FileInfo) (sent bool, ferr error) {
	done := make(chan struct{})
	looked := make(chan error, 1)
	go func() {
		select {
		case <-h.sent:
		case <-done:
			select {
			case <-h.sent: // both ready: the packet went out first
			default:
				looked <- os.ErrInvalid // not sent as hooked
				return
			}
		}
		var err error
		*fi, err = c.client.Lstat(h.abs)
		looked <- err
	}()
	_ = op()
	close(done)
	c.wire.unhookOpen(h)
	ferr = <-looked
	select {
	case <-h.sent:
		return true, ferr
	default:
		return false, ferr
	}
}

// mkdirLstat makes the directory abs on c with perm in its MKDIR and an
// LSTAT behind it, and sets *a to its attributes; tried is false, with
// nothing sent, when the session cannot hook the MKDIR.
func mkdirLstat(c *channel, abs string, perm uint32, a *remote.Attr) (tried bool, err error) {
	h := &openHook{typ: fxpMkdir, abs: abs, perm: perm & 07777, sent: make(chan struct{})}
	if c.wire == nil || !c.wire.hookOpen(h) {
		return false, nil
	}
	var fi os.FileInfo
	sent, ferr := lstatBehind(c, h, func() error {
		err = c.client.Mkdir(abs)
		return err
	}, &fi)
	switch {
	case err != nil:
		return true, err
	case !sent || ferr != nil || !fi.IsDir():
		*a, err = chmodLstat(c, abs, perm)
		return true, err
	}
	*a = attrOf(fi)
	if a.Mode&07777 != perm&07777 {
		// The server's umask took bits away.
		if err := c.client.Chmod(abs, os.FileMode(perm&07777)); err != nil {
			return true, err
		}
		a.Mode = a.Mode&^07777 | perm&07777
	}
	return true, nil
}

// createChmod is createOn without the hook: the OPEN, then FSETSTAT and
// FSTAT together.
func createChmod(cl *sftp.Client, abs string, flags int, perm uint32) (*sftp.File, bool, remote.Attr, error) {
	sf, err := cl.OpenFile(abs, flags)
	if err != nil {
		return nil, false, remote.Attr{}, err
	}
	return chmodOrClose(sf, perm)
}

// chmodOrClose sets the permissions of sf, just created, and returns its
// attributes; it closes sf when that fails.
func chmodOrClose(sf *sftp.File, perm uint32) (*sftp.File, bool, remote.Attr, error) {
	a, err := chmodStat(sf, perm&07777)
	if err != nil {
		sf.Close()
		return nil, true, remote.Attr{}, err
	}
	return sf, true, a, nil
}
