package main

import (
	"archive/tar"
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path"
	"sort"
	"sync"
	"time"
)

// The SFTP floor (writes group): the untar and the rm -rf done by a bare
// SFTP client of the bench's own, over the same ssh and latency proxy as
// the mounts, sending only the requests the commands' system calls need
// and waiting only where a mount in sshfsm's default mode must, since
// each call returns what the server said:
//   - untar (GNU tar's calls, strace): per directory its mkdir, and at the
//     end its utimes and chmod by path (MKDIR with its mode, SETSTAT,
//     SETSTAT: three round trips); per file its exclusive create (OPEN
//     with its mode: one round trip), then its writes and futimens on the
//     descriptor pipelined with the CLOSE, whose answer close waits for
//     (WRITE…, FSETSTAT, CLOSE: one round trip);
//   - rm -rf: the whole tree listed by one remote find over the session's
//     connection (as sshfsm's tree listings; per directory OPENDIR and
//     READDIRs when the server runs no commands), each name removed with
//     one request waited for (REMOVE, RMDIR), children first; the
//     lookups before them are answered by the listing.
//
// The mount's own costs (FUSE, the kernel, its bookkeeping) are left out:
// sshfsm's time minus this is what it spends above what the protocol and
// the link allow. The session is opened before the clock starts, as a
// mount is.
const sftpFloorKey = "sftp-floor"

func sftpFloorTool() *tool {
	return &tool{key: sftpFloorKey, name: "SFTP floor (bare client, the round trips POSIX forces)"}
}

// SFTP v3 packet types and flags used by the floor.
const (
	sfInit     = 1
	sfVersion  = 2
	sfOpen     = 3
	sfClose    = 4
	sfWrite    = 6
	sfSetstat  = 9
	sfFsetstat = 10
	sfOpendir  = 11
	sfReaddir  = 12
	sfRemove   = 13
	sfMkdir    = 14
	sfRmdir    = 15
	sfStatus   = 101
	sfHandle   = 102
	sfName     = 104

	sfWriteFlag = 0x02
	sfCreat     = 0x08
	sfTrunc     = 0x10
	sfExcl      = 0x20

	sfAttrSize  = 0x01
	sfAttrIDs   = 0x02
	sfAttrPerm  = 0x04
	sfAttrTimes = 0x08
	sfAttrExt   = 0x80000000

	sfEOF = 1

	// sfChunk is the data of one WRITE, as OpenSSH's sftp and pkg/sftp
	// send.
	sfChunk = 32 << 10
)

// bareSFTP is a minimal SFTP v3 client: requests are written at once and
// their answers matched by id, so that any number may be in flight.
type bareSFTP struct {
	cmd *exec.Cmd
	// cfg, alias and sock run commands over the session's connection
	// (its ssh is their ControlMaster).
	cfg, alias, sock string
	w                *bufio.Writer
	wmu              sync.Mutex
	in               io.WriteCloser

	mu      sync.Mutex
	nextID  uint32
	waiting map[uint32]chan sfReply
	err     error // the session's end
}

type sfReply struct {
	typ  byte
	data []byte // after the id
	err  error
}

// dialBareSFTP starts the sftp subsystem of alias with the system's ssh.
// Its ssh is the ControlMaster of sock, for commands (listTree).
func dialBareSFTP(ctx context.Context, cfg, alias, sock string) (*bareSFTP, error) {
	cmd := exec.CommandContext(ctx, "ssh", "-F", cfg, "-oControlMaster=yes", "-oControlPath="+sock, "-oControlPersist=no", "-s", alias, "sftp")
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	c := &bareSFTP{cmd: cmd, cfg: cfg, alias: alias, sock: sock, in: in, w: bufio.NewWriterSize(in, 64<<10), waiting: map[uint32]chan sfReply{}}
	r := bufio.NewReaderSize(out, 64<<10)
	init := binary.BigEndian.AppendUint32([]byte{sfInit}, 3)
	if err := c.writePacket(init); err != nil {
		c.close()
		return nil, err
	}
	typ, _, err := readPacket(r)
	if err == nil && typ != sfVersion {
		err = fmt.Errorf("sftp: answer %d to INIT", typ)
	}
	if err != nil {
		c.close()
		return nil, fmt.Errorf("sftp session with %s: %w", alias, err)
	}
	go c.readLoop(r)
	return c, nil
}

func (c *bareSFTP) close() {
	c.in.Close()
	c.cmd.Process.Kill()
	c.cmd.Wait()
}

func readPacket(r *bufio.Reader) (byte, []byte, error) {
	var hdr [5]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return 0, nil, err
	}
	n := binary.BigEndian.Uint32(hdr[:4])
	if n < 1 || n > 1<<20 {
		return 0, nil, fmt.Errorf("sftp: packet of %d bytes", n)
	}
	b := make([]byte, n-1)
	_, err := io.ReadFull(r, b)
	return hdr[4], b, err
}

func (c *bareSFTP) readLoop(r *bufio.Reader) {
	for {
		typ, b, err := readPacket(r)
		if err == nil && len(b) < 4 {
			err = fmt.Errorf("sftp: short packet")
		}
		if err != nil {
			c.mu.Lock()
			c.err = err
			for id, ch := range c.waiting {
				ch <- sfReply{err: err}
				delete(c.waiting, id)
			}
			c.mu.Unlock()
			return
		}
		id := binary.BigEndian.Uint32(b)
		c.mu.Lock()
		ch := c.waiting[id]
		delete(c.waiting, id)
		c.mu.Unlock()
		if ch != nil {
			ch <- sfReply{typ: typ, data: b[4:]}
		}
	}
}

func (c *bareSFTP) writePacket(body []byte) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if _, err := c.w.Write(binary.BigEndian.AppendUint32(nil, uint32(len(body)))); err != nil {
		return err
	}
	if _, err := c.w.Write(body); err != nil {
		return err
	}
	return c.w.Flush()
}

// send writes one request of type typ whose fields after the id are
// body, and returns where its answer will arrive.
func (c *bareSFTP) send(typ byte, body []byte) <-chan sfReply {
	ch := make(chan sfReply, 1)
	c.mu.Lock()
	if c.err != nil {
		c.mu.Unlock()
		ch <- sfReply{err: c.err}
		return ch
	}
	c.nextID++
	id := c.nextID
	c.waiting[id] = ch
	c.mu.Unlock()
	p := binary.BigEndian.AppendUint32([]byte{typ}, id)
	if err := c.writePacket(append(p, body...)); err != nil {
		c.mu.Lock()
		delete(c.waiting, id)
		c.mu.Unlock()
		ch <- sfReply{err: err}
	}
	return ch
}

// status waits for an answer that must be a STATUS of success.
func status(what string, ch <-chan sfReply) error {
	r := <-ch
	if r.err != nil {
		return r.err
	}
	if r.typ != sfStatus || len(r.data) < 4 {
		return fmt.Errorf("%s: answer of type %d", what, r.typ)
	}
	if code := binary.BigEndian.Uint32(r.data); code != 0 {
		return fmt.Errorf("%s: SFTP status %d", what, code)
	}
	return nil
}

// handle waits for a HANDLE answer.
func handle(what string, ch <-chan sfReply) ([]byte, error) {
	r := <-ch
	if r.err != nil {
		return nil, r.err
	}
	if r.typ == sfHandle {
		if h, _, ok := sfString(r.data); ok {
			return h, nil
		}
	}
	if r.typ == sfStatus && len(r.data) >= 4 {
		return nil, fmt.Errorf("%s: SFTP status %d", what, binary.BigEndian.Uint32(r.data))
	}
	return nil, fmt.Errorf("%s: answer of type %d", what, r.typ)
}

func sfString(b []byte) ([]byte, []byte, bool) {
	if len(b) < 4 {
		return nil, nil, false
	}
	n := binary.BigEndian.Uint32(b)
	if uint64(len(b)-4) < uint64(n) {
		return nil, nil, false
	}
	return b[4 : 4+n], b[4+n:], true
}

func appendString(p []byte, s []byte) []byte {
	return append(binary.BigEndian.AppendUint32(p, uint32(len(s))), s...)
}

// attrs encodes permissions (perm ≥ 0) and times (mtime ≥ 0).
func attrs(perm int64, mtime int64) []byte {
	var flags uint32
	var p []byte
	if perm >= 0 {
		flags |= sfAttrPerm
		p = binary.BigEndian.AppendUint32(p, uint32(perm))
	}
	if mtime >= 0 {
		flags |= sfAttrTimes
		p = binary.BigEndian.AppendUint32(p, uint32(mtime))
		p = binary.BigEndian.AppendUint32(p, uint32(mtime))
	}
	return append(binary.BigEndian.AppendUint32(nil, flags), p...)
}

// skipAttrs returns b after the ATTRS at its start.
func skipAttrs(b []byte) ([]byte, uint32, bool) {
	if len(b) < 4 {
		return nil, 0, false
	}
	flags := binary.BigEndian.Uint32(b)
	b = b[4:]
	var perm uint32
	skip := func(n int) bool {
		if len(b) < n {
			return false
		}
		b = b[n:]
		return true
	}
	if flags&sfAttrSize != 0 && !skip(8) {
		return nil, 0, false
	}
	if flags&sfAttrIDs != 0 && !skip(8) {
		return nil, 0, false
	}
	if flags&sfAttrPerm != 0 {
		if len(b) < 4 {
			return nil, 0, false
		}
		perm = binary.BigEndian.Uint32(b)
		b = b[4:]
	}
	if flags&sfAttrTimes != 0 && !skip(8) {
		return nil, 0, false
	}
	if flags&sfAttrExt != 0 {
		if len(b) < 4 {
			return nil, 0, false
		}
		n := binary.BigEndian.Uint32(b)
		b = b[4:]
		for i := uint32(0); i < 2*n; i++ {
			var ok bool
			if _, b, ok = sfString(b); !ok {
				return nil, 0, false
			}
		}
	}
	return b, perm, true
}

// sfEntry is a name a listing returned.
type sfEntry struct {
	name string
	dir  bool
}

// list lists dir: OPENDIR, then READDIR until the end, each waited for;
// the CLOSE is sent without waiting, as a FUSE RELEASEDIR.
func (c *bareSFTP) list(dir string) ([]sfEntry, error) {
	h, err := handle("OPENDIR "+dir, c.send(sfOpendir, appendString(nil, []byte(dir))))
	if err != nil {
		return nil, err
	}
	defer c.send(sfClose, appendString(nil, h))
	var out []sfEntry
	for {
		r := <-c.send(sfReaddir, appendString(nil, h))
		if r.err != nil {
			return nil, r.err
		}
		if r.typ == sfStatus && len(r.data) >= 4 && binary.BigEndian.Uint32(r.data) == sfEOF {
			return out, nil
		}
		if r.typ != sfName || len(r.data) < 4 {
			return nil, fmt.Errorf("READDIR %s: answer of type %d", dir, r.typ)
		}
		n := binary.BigEndian.Uint32(r.data)
		b := r.data[4:]
		for i := uint32(0); i < n; i++ {
			var name []byte
			var perm uint32
			var ok bool
			if name, b, ok = sfString(b); ok {
				_, b, ok = sfString(b) // the long name
			}
			if ok {
				b, perm, ok = skipAttrs(b)
			}
			if !ok {
				return nil, fmt.Errorf("READDIR %s: malformed answer", dir)
			}
			if s := string(name); s != "." && s != ".." {
				out = append(out, sfEntry{name: s, dir: perm&0o170000 == 0o040000})
			}
		}
	}
}

// listTree lists everything below dir, children before their directory,
// with one find run over the session's connection; ok is false when the
// server runs no commands.
func (c *bareSFTP) listTree(ctx context.Context, dir string) (ents []sfEntry, ok bool) {
	out, err := exec.CommandContext(ctx, "ssh", "-F", c.cfg, "-oControlMaster=no", "-oControlPath="+c.sock, c.alias, "--",
		"find "+shellQuote(dir)+" -mindepth 1 -depth -printf '%y %P\\0'").Output()
	if err != nil {
		return nil, false
	}
	for _, rec := range bytes.Split(out, []byte{0}) {
		if len(rec) < 3 || rec[1] != ' ' {
			continue
		}
		ents = append(ents, sfEntry{name: string(rec[2:]), dir: rec[0] == 'd'})
	}
	return ents, true
}

// removeListed removes dir and everything below it, listed by listTree.
func (c *bareSFTP) removeListed(dir string, ents []sfEntry) error {
	for _, e := range ents {
		p := path.Join(dir, e.name)
		typ, what := byte(sfRemove), "REMOVE "
		if e.dir {
			typ, what = sfRmdir, "RMDIR "
		}
		if err := status(what+p, c.send(typ, appendString(nil, []byte(p)))); err != nil {
			return err
		}
	}
	return status("RMDIR "+dir, c.send(sfRmdir, appendString(nil, []byte(dir))))
}

// removeTree removes dir and everything below it as rm -rf does, listing
// directory by directory.
func (c *bareSFTP) removeTree(dir string) error {
	ents, err := c.list(dir)
	if err != nil {
		return err
	}
	for _, e := range ents {
		p := path.Join(dir, e.name)
		if e.dir {
			err = c.removeTree(p)
		} else {
			err = status("REMOVE "+p, c.send(sfRemove, appendString(nil, []byte(p))))
		}
		if err != nil {
			return err
		}
	}
	return status("RMDIR "+dir, c.send(sfRmdir, appendString(nil, []byte(dir))))
}

// untar unpacks the tar archive held in archive below dir as tar -xf
// --no-same-owner does (directories and regular files; the bench's tree
// has nothing else).
func (c *bareSFTP) untar(archive []byte, dir string) error {
	tr := tar.NewReader(bytes.NewReader(archive))
	type dirTimes struct {
		p     string
		perm  int64
		mtime int64
	}
	var dirs []dirTimes
	buf := make([]byte, 0, 1<<20)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return err
		}
		p := path.Join(dir, h.Name)
		perm := h.Mode & 0o7777
		switch h.Typeflag {
		case tar.TypeDir:
			// tar makes it 0700 and sets its mode once its files are in.
			if err := status("MKDIR "+p, c.send(sfMkdir, append(appendString(nil, []byte(p)), attrs(0o700, -1)...))); err != nil {
				return err
			}
			dirs = append(dirs, dirTimes{p, perm, h.ModTime.Unix()})
		case tar.TypeReg:
			open := binary.BigEndian.AppendUint32(appendString(nil, []byte(p)), sfWriteFlag|sfCreat|sfExcl|sfTrunc)
			fh, err := handle("OPEN "+p, c.send(sfOpen, append(open, attrs(perm, -1)...)))
			if err != nil {
				return err
			}
			buf = buf[:0]
			if buf, err = readAllInto(buf, tr); err != nil {
				return err
			}
			var pending []<-chan sfReply
			for off := 0; off < len(buf); off += sfChunk {
				chunk := buf[off:min(off+sfChunk, len(buf))]
				w := binary.BigEndian.AppendUint64(appendString(nil, fh), uint64(off))
				pending = append(pending, c.send(sfWrite, appendString(w, chunk)))
			}
			pending = append(pending, c.send(sfFsetstat, append(appendString(nil, fh), attrs(-1, h.ModTime.Unix())...)))
			pending = append(pending, c.send(sfClose, appendString(nil, fh)))
			for _, ch := range pending {
				if err := status("writing "+p, ch); err != nil {
					return err
				}
			}
		default:
			return fmt.Errorf("%s: tar entry of type %q", h.Name, h.Typeflag)
		}
	}
	// tar sets the directories' times and modes at the end, deepest first.
	sort.SliceStable(dirs, func(i, j int) bool { return len(dirs[i].p) > len(dirs[j].p) })
	for _, d := range dirs {
		if err := status("SETSTAT "+d.p, c.send(sfSetstat, append(appendString(nil, []byte(d.p)), attrs(-1, d.mtime)...))); err != nil {
			return err
		}
		if err := status("SETSTAT "+d.p, c.send(sfSetstat, append(appendString(nil, []byte(d.p)), attrs(d.perm, -1)...))); err != nil {
			return err
		}
	}
	return nil
}

func readAllInto(buf []byte, r io.Reader) ([]byte, error) {
	for {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		n, err := r.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if errors.Is(err, io.EOF) {
			return buf, nil
		}
		if err != nil {
			return buf, err
		}
	}
}

// floorRun times one op of the writes group done by the bare client
// over link, on the server-side path dst.
func (ws *writesEnv) floorRun(ctx context.Context, link writeLink, op writeOp, dst string) (float64, error) {
	var archive []byte
	if op.id == "untar" {
		var err error
		if archive, err = os.ReadFile(ws.tarball); err != nil {
			return 0, err
		}
	}
	sockDir, err := os.MkdirTemp("", "floor")
	if err != nil {
		return 0, err
	}
	defer os.RemoveAll(sockDir)
	c, err := dialBareSFTP(ctx, ws.cfg, link.alias, path.Join(sockDir, "s"))
	if err != nil {
		return 0, err
	}
	defer c.close()
	start := time.Now()
	switch op.id {
	case "untar":
		err = c.untar(archive, dst)
	case "rm":
		if ents, ok := c.listTree(ctx, dst); ok {
			err = c.removeListed(dst, ents)
		} else {
			err = c.removeTree(dst)
		}
	default:
		return 0, fmt.Errorf("no floor for %s", op.id)
	}
	return time.Since(start).Seconds(), err
}
