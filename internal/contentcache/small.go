package contentcache

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	"golang.org/x/sys/unix"
)

// Small entries: content of at most one block is stored as one file,
// header then data, written whole under tmp and renamed into place, and
// never written again. Its header carries the CRC-32C and the SHA-256 of
// the data (hashed at Fill, from memory), so it needs no record file,
// no directory and no background hashing.
const (
	smallDir     = "s" // small entries: s/<xx>/<entry id>
	smallSuffix  = ".s"
	smallHdrLen  = 64
	smallMagic   = "SSHFSMCS"
	smallFormat  = 1
	smallHdrSize = 16 // offsets in the header
	smallHdrCRC  = 12
	smallHdrSum  = 24
)

// smallHeader describes the content of a small file. Like a record, it
// holds nothing about a Key: entries of the same content share the file.
type smallHeader struct {
	size int64
	crc  uint32 // CRC-32C of the data
	sum  [32]byte
}

func (h smallHeader) encode() []byte {
	b := make([]byte, smallHdrLen)
	copy(b, smallMagic)
	binary.LittleEndian.PutUint32(b[8:], smallFormat)
	binary.LittleEndian.PutUint32(b[smallHdrCRC:], h.crc)
	binary.LittleEndian.PutUint64(b[smallHdrSize:], uint64(h.size))
	copy(b[smallHdrSum:], h.sum[:])
	seal(b)
	return b
}

func decodeSmall(b []byte) (smallHeader, bool) {
	if len(b) < smallHdrLen || string(b[:8]) != smallMagic || !sealed(b[:smallHdrLen]) ||
		binary.LittleEndian.Uint32(b[8:]) != smallFormat {
		return smallHeader{}, false
	}
	h := smallHeader{
		size: int64(binary.LittleEndian.Uint64(b[smallHdrSize:])),
		crc:  binary.LittleEndian.Uint32(b[smallHdrCRC:]),
	}
	copy(h.sum[:], b[smallHdrSum:])
	return h, h.size >= 0
}

// isSmall reports whether content of size bytes is stored as a small
// file: at most one block.
func (c *Cache) isSmall(size int64) bool { return size <= c.bs }

// smallPath is where the small entry id lives: content/s/<2 hex>/<id>.
// All versions of a path share the first half of the name, which Forget
// looks for.
func (c *Cache) smallPath(id string) string {
	return filepath.Join(c.root, smallDir, id[:2], id)
}

// smallObject is the stored copy, among host's files, of small content
// whose SHA-256 is sum: content/o/<2 hex>/<64 hex>.s, a file.
func (c *Cache) smallObject(host string, sum [32]byte) string {
	h := objectID(host, sum)
	return filepath.Join(c.root, objectsDir, h[:2], h+smallSuffix)
}

// openSmall checks that f is a whole small file of content size bytes and
// returns it as a pair (one file, data at smallHdrLen). ok=false: it is
// not (torn, damaged, another size); ino is then set to remove that file
// and no other.
func openSmall(f *os.File, size int64) (p *pair, h smallHeader, ino uint64, ok bool) {
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil {
		return nil, h, 0, false
	}
	b := make([]byte, smallHdrLen)
	if st.Mode&unix.S_IFMT != unix.S_IFREG || st.Size != smallHdrLen+size {
		return nil, h, st.Ino, false
	}
	if n, _ := f.ReadAt(b, 0); n < smallHdrLen {
		return nil, h, st.Ino, false
	}
	if h, ok = decodeSmall(b); !ok || h.size != size {
		return nil, h, st.Ino, false
	}
	p = &pair{dirIno: st.Ino, dIno: st.Ino, dMtime: st.Mtim.Nano(), alloc: st.Blocks * 512, r: f, d: f, off: smallHdrLen}
	return p, h, st.Ino, true
}

func openFile(path string) (*os.File, error) {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC|unix.O_NOFOLLOW, 0)
	if err != nil {
		return nil, err
	}
	return os.NewFile(uintptr(fd), path), nil
}

// reloadSmall (fillMu held) makes the state describe the small file its
// name holds now, if any. A damaged one is removed.
func (s *state) reloadSmall() error {
	if s.size == 0 {
		// Nothing to store: an empty file is complete as it is.
		s.attach(nil, nil, digestNone, [32]byte{})
		return nil
	}
	f, err := openFile(s.dir)
	if errors.Is(err, unix.ENOENT) {
		s.attach(nil, nil, digestNone, [32]byte{})
		return nil
	}
	if err != nil {
		return fmt.Errorf("open %s: %w", s.dir, err)
	}
	p, h, ino, ok := openSmall(f, s.size)
	s.mu.Lock()
	wrong := ok && s.digestOf == digestTrusted && s.digest != h.sum
	s.mu.Unlock()
	if !ok || wrong {
		_ = f.Close()
		s.c.log.Warn("content cache: removing a damaged entry", "file", s.dir)
		s.attach(nil, nil, digestNone, [32]byte{})
		return s.c.removeFileIf(s.dir, ino)
	}
	s.attachSmall(p, h, false)
	s.c.touch(s, p, false)
	return nil
}

// attachSmall makes p, described by h, the state's files; verified: its
// data was checked (or written) by this process.
func (s *state) attachSmall(p *pair, h smallHeader, verified bool) {
	s.attach(p, []slot{{i: 0, crc: h.crc}}, digestComputed, h.sum)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.lastTouch.Store(p.dMtime)
	if verified && s.present.has(0) && !s.verified.has(0) {
		s.verified.set(0)
		s.nVerified++
	}
}

// fillSmall (fillMu held) stores the whole content of a small entry as a
// new file, or as another name of the stored copy of the same bytes.
func (s *state) fillSmall(data []byte) error {
	s.mu.Lock()
	have := s.files != nil && s.present.has(0)
	trusted, claimed := s.digestOf == digestTrusted, s.digest
	s.mu.Unlock()
	if have && s.current() {
		return nil
	}
	h := smallHeader{size: s.size, crc: checksum(data), sum: sha256.Sum256(data)}
	if trusted && h.sum != claimed {
		s.c.log.Warn("content cache: content differs from the digest the remote gave; not stored", "file", s.dir)
		return nil
	}
	if err := s.c.reserve(smallHdrLen + s.size); err != nil {
		return fmt.Errorf("fill %s: %w", s.dir, err)
	}
	p, shared, err := s.c.storeSmall(s.dir, s.host, h, data)
	if err != nil {
		return err
	}
	s.attachSmall(p, h, true)
	s.c.stats.fillBytes.Add(s.size)
	s.c.entries.Add(1)
	if shared {
		s.c.stats.shared.Add(1)
	} else {
		s.c.total.Add(p.alloc)
	}
	s.c.touch(s, p, true)
	return nil
}

// storeSmall installs at path a file of header h and data: a new name of
// the stored copy of that content when it holds exactly these bytes
// (shared), otherwise a new file, which becomes the stored copy.
func (c *Cache) storeSmall(path, host string, h smallHeader, data []byte) (p *pair, shared bool, err error) {
	obj := c.smallObject(host, h.sum)
	if o := c.sameSmall(obj, h, data); o != nil {
		tmp := filepath.Join(c.root, tmpDir, randName())
		src := "/proc/self/fd/" + strconv.Itoa(int(o.d.Fd()))
		err := unix.Linkat(unix.AT_FDCWD, src, unix.AT_FDCWD, tmp, unix.AT_SYMLINK_FOLLOW)
		if err == nil {
			if err = c.renameInto(tmp, path); err == nil {
				return o, true, nil
			}
		}
		o.close()
		c.logErr("content cache: share", err)
	}
	buf := make([]byte, smallHdrLen+len(data))
	copy(buf, h.encode())
	copy(buf[smallHdrLen:], data)
	tmp := filepath.Join(c.root, tmpDir, randName())
	f, err := os.OpenFile(tmp, os.O_RDWR|os.O_CREATE|os.O_EXCL|unix.O_CLOEXEC, 0o600)
	if err == nil {
		if _, err = f.Write(buf); err != nil {
			_ = f.Close()
			_ = os.Remove(tmp)
		}
	}
	if err != nil {
		return nil, false, fmt.Errorf("fill %s: %w", path, err)
	}
	// The stored copy is another name of the same file; without it the
	// content is only not shared.
	if err := c.linkInto(tmp, obj); err != nil && !errors.Is(err, unix.EEXIST) {
		c.logErr("content cache: publish", err)
	}
	if err := c.renameInto(tmp, path); err != nil {
		_ = f.Close()
		return nil, false, err
	}
	p, _, _, ok := openSmall(f, h.size)
	if !ok {
		_ = f.Close()
		return nil, false, fmt.Errorf("fill %s: %w", path, errBroken)
	}
	return p, false, nil
}

// sameSmall opens the stored copy obj if it holds exactly header h and
// data. One that is damaged is removed, so that it can be published
// again.
func (c *Cache) sameSmall(obj string, h smallHeader, data []byte) *pair {
	f, err := openFile(obj)
	if err != nil {
		return nil
	}
	p, got, ino, ok := openSmall(f, h.size)
	if ok && got == h {
		b := make([]byte, len(data))
		if n, _ := p.readData(b, 0); n == len(b) && bytes.Equal(b, data) {
			return p
		}
	}
	_ = f.Close()
	if err := c.removeFileIf(obj, ino); err != nil {
		c.logErr("content cache", err)
	}
	return nil
}

// renameInto renames the file tmp to path, replacing what path held (the
// same content, by the Key's contract, or a damaged file), making its
// parent if needed. tmp is removed on failure.
func (c *Cache) renameInto(tmp, path string) error {
	var err error
	for range 3 {
		if err = os.Rename(tmp, path); !errors.Is(err, unix.ENOENT) {
			break
		}
		if err = os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			break
		}
	}
	if err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("install %s: %w", path, err)
	}
	return nil
}

// linkInto gives the file tmp the name path, unless path exists.
func (c *Cache) linkInto(tmp, path string) error {
	var err error
	for range 3 {
		if err = os.Link(tmp, path); !errors.Is(err, unix.ENOENT) {
			break
		}
		if err = os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			break
		}
	}
	return err
}

// removeFileIf removes the file path if it is the inode ino. Descriptors
// open on it stay readable.
func (c *Cache) removeFileIf(path string, ino uint64) error {
	var st unix.Stat_t
	if ino == 0 || unix.Lstat(path, &st) != nil || st.Ino != ino {
		return nil
	}
	if err := unix.Unlink(path); err != nil && !errors.Is(err, unix.ENOENT) {
		return fmt.Errorf("remove %s: %w", path, err)
	}
	return nil
}

// forgetSmall removes every small entry of the path whose hostPathID is hp.
func (c *Cache) forgetSmall(hp string) error {
	dir := filepath.Join(c.root, smallDir, hp[:2])
	var first error
	for _, n := range readNames(dir) {
		if len(n) > len(hp) && n[:len(hp)] == hp && n[len(hp)] == '-' {
			if err := unix.Unlink(filepath.Join(dir, n)); err != nil && !errors.Is(err, unix.ENOENT) && first == nil {
				first = fmt.Errorf("remove %s/%s: %w", dir, n, err)
			}
		}
	}
	return first
}

// verifiedSmall gives a small entry's content, checked now, as a file of
// its own: the entry's file holds a header before the data, so it
// cannot be handed to the kernel as it is.
func (s *state) verifiedSmall() (*os.File, bool) {
	s.mu.Lock()
	p, copied := s.files, s.copied
	ok := !s.dead && (s.nblk == 0 || p != nil && s.present.has(0))
	var crc uint32
	if s.nblk > 0 {
		crc = s.crcs[0]
	}
	s.mu.Unlock()
	if !ok {
		return nil, false
	}
	if copied != nil {
		return s.reopen(&pair{d: copied})
	}
	f, err := os.CreateTemp(filepath.Join(s.c.root, tmpDir), "v")
	if err != nil {
		s.c.logErr("content cache", err)
		return nil, false
	}
	_ = os.Remove(f.Name())
	keep := false
	defer func() {
		if !keep {
			_ = f.Close()
		}
	}()
	if s.nblk > 0 {
		var werr error
		ok, err = s.checkBlock(p, 0, crc, func(b []byte) { _, werr = f.Write(b) })
		if err == nil {
			err = werr
		}
		if !ok || err != nil {
			if err != nil {
				s.c.logErr("content cache", err)
			}
			return nil, false
		}
	}
	// Kept for the next opens while the entry is held, unless its files
	// changed meanwhile.
	s.mu.Lock()
	if s.files == p && s.copied == nil && !s.dead {
		s.copied, keep = f, true
	}
	s.mu.Unlock()
	return s.reopen(&pair{d: f})
}

// linkSmallObject makes s's name another name of the stored copy of the
// small content whose digest is sum, and reports whether s is then
// complete. The data is checked at its first read, like any block.
func (c *Cache) linkSmallObject(s *state, sum [32]byte) bool {
	f, err := openFile(c.smallObject(s.host, sum))
	if err != nil {
		return false
	}
	o, h, _, ok := openSmall(f, s.size)
	if !ok || h.sum != sum {
		_ = f.Close()
		return false
	}
	s.fillMu.Lock()
	defer s.fillMu.Unlock()
	s.mu.Lock()
	cur, dead := s.files, s.dead
	s.mu.Unlock()
	if dead || cur != nil && cur.dIno == o.dIno {
		o.close()
		return !dead
	}
	tmp := filepath.Join(c.root, tmpDir, randName())
	src := "/proc/self/fd/" + strconv.Itoa(int(o.d.Fd()))
	err = unix.Linkat(unix.AT_FDCWD, src, unix.AT_FDCWD, tmp, unix.AT_SYMLINK_FOLLOW)
	if err == nil {
		err = c.renameInto(tmp, s.dir)
	}
	if err != nil {
		o.close()
		c.logErr("content cache", err)
		return false
	}
	s.attachSmall(o, h, false)
	c.entries.Add(1)
	return true
}
