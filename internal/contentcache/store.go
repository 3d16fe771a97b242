package contentcache

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	"golang.org/x/sys/unix"
)

// Directories under Dir/content.
const (
	entriesDir = "e"     // one directory per Key
	objectsDir = "o"     // one directory per shared content (dedup)
	tmpDir     = "tmp"   // directories being built, renamed into place when whole
	trashDir   = "trash" // directories being removed, renamed here first
)

var (
	errNotExist = errors.New("no such entry")
	errBroken   = errors.New("damaged entry")
)

// pair is the record file and the data file of one entry directory. They
// are opened through one descriptor of the directory, and a directory's
// two files are never replaced one at a time, so they always belong to
// each other: a record's slots and marker describe exactly that data file.
type pair struct {
	dirIno uint64
	dIno   uint64
	dMtime int64 // unix nanoseconds, when opened
	alloc  int64 // bytes allocated to both files, as last seen (fillMu of its state)
	r, d   *os.File
	off    int64 // where the content starts in d: 0, or smallHdrLen for a small file (r == d)
}

func (p *pair) close() {
	_ = p.r.Close()
	if p.d != p.r {
		_ = p.d.Close()
	}
}

// readData reads content bytes at off.
func (p *pair) readData(b []byte, off int64) (int, error) {
	return p.d.ReadAt(b, off+p.off)
}

// openPair opens the entry or object directory dir. errNotExist: there is
// none; errBroken: it is not a whole, valid entry of this block size and
// of the given content size (-1: any); the pair returned then has only
// dirIno set, to remove that directory and no other.
func (c *Cache) openPair(dir string, size int64) (*pair, header, error) {
	dfd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		if errors.Is(err, unix.ENOENT) {
			return nil, header{}, errNotExist
		}
		return nil, header{}, fmt.Errorf("open %s: %w", dir, err)
	}
	defer unix.Close(dfd)
	var st unix.Stat_t
	if err := unix.Fstat(dfd, &st); err != nil {
		return nil, header{}, fmt.Errorf("stat %s: %w", dir, err)
	}
	p := &pair{dirIno: st.Ino}
	if p.r, err = openAt(dfd, dir, "r"); err == nil {
		if p.d, err = openAt(dfd, dir, "d"); err != nil {
			_ = p.r.Close()
		}
	}
	var h header
	if err == nil {
		if h, err = c.checkPair(p, size); err != nil {
			p.close()
		}
	}
	if errors.Is(err, errBroken) {
		return &pair{dirIno: st.Ino}, header{}, err
	}
	if err != nil {
		return nil, header{}, err
	}
	return p, h, nil
}

func openAt(dfd int, dir, name string) (*os.File, error) {
	fd, err := unix.Openat(dfd, name, unix.O_RDWR|unix.O_CLOEXEC|unix.O_NOFOLLOW, 0)
	if err != nil {
		if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ELOOP) {
			return nil, errBroken
		}
		return nil, fmt.Errorf("open %s/%s: %w", dir, name, err)
	}
	return os.NewFile(uintptr(fd), filepath.Join(dir, name)), nil
}

func (c *Cache) checkPair(p *pair, size int64) (header, error) {
	b := make([]byte, recordLen)
	n, err := p.r.ReadAt(b, headerOff)
	if err != nil && n < len(b) && !isEOF(err) {
		return header{}, fmt.Errorf("read %s: %w", p.r.Name(), err)
	}
	h, ok := decodeHeader(b[:n])
	if !ok || h.bs != c.bs || (size >= 0 && h.size != size) {
		return header{}, errBroken
	}
	var st unix.Stat_t
	if err := unix.Fstat(int(p.d.Fd()), &st); err != nil {
		return header{}, fmt.Errorf("stat %s: %w", p.d.Name(), err)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		return header{}, errBroken
	}
	p.dIno = st.Ino
	p.dMtime = st.Mtim.Nano()
	p.alloc = p.allocated()
	return h, nil
}

// allocated is the space both files take on disk.
func (p *pair) allocated() int64 {
	var n int64
	for _, f := range [2]*os.File{p.r, p.d} {
		var st unix.Stat_t
		if unix.Fstat(int(f.Fd()), &st) == nil {
			n += st.Blocks * 512
		}
	}
	return n
}

// createPair makes the entry directory dir with a fresh record (header and,
// when known, a digest record) and an empty data file. It is built under
// tmp and renamed into place whole; when dir already exists (another
// process made it first) that one is kept.
func (c *Cache) createPair(dir string, h header, digest []byte) error {
	tmp, err := c.tempDir()
	if err != nil {
		return err
	}
	if err := writeNewPair(tmp, h, digest); err != nil {
		_ = os.RemoveAll(tmp)
		return fmt.Errorf("create %s: %w", dir, err)
	}
	_, err = c.install(tmp, dir, 0)
	return err
}

func writeNewPair(tmp string, h header, digest []byte) error {
	r, err := os.OpenFile(filepath.Join(tmp, "r"), os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	_, err = r.WriteAt(h.encode(), headerOff)
	if err == nil && digest != nil {
		_, err = r.WriteAt(digest, digestOff)
	}
	if cerr := r.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	d, err := os.OpenFile(filepath.Join(tmp, "d"), os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	return d.Close()
}

// linkedDir builds, under tmp, a directory whose files are hard links to
// p's: another name for the same pair.
func (c *Cache) linkedDir(p *pair) (string, error) {
	tmp, err := c.tempDir()
	if err != nil {
		return "", err
	}
	for _, f := range [2]struct {
		file *os.File
		name string
	}{{p.r, "r"}, {p.d, "d"}} {
		src := "/proc/self/fd/" + strconv.Itoa(int(f.file.Fd()))
		err := unix.Linkat(unix.AT_FDCWD, src, unix.AT_FDCWD, filepath.Join(tmp, f.name), unix.AT_SYMLINK_FOLLOW)
		if err != nil {
			_ = os.RemoveAll(tmp)
			return "", fmt.Errorf("link %s: %w", f.file.Name(), err)
		}
	}
	return tmp, nil
}

// install renames the whole directory tmp to dir. With replace 0 only an
// absent dir is installed; otherwise dir may be the directory with inode
// replace, which is removed first. When dir is another one (some process
// installed it meanwhile) it is left alone and install reports false.
func (c *Cache) install(tmp, dir string, replace uint64) (ok bool, err error) {
	defer func() {
		if !ok {
			_ = os.RemoveAll(tmp)
		}
	}()
	if replace != 0 {
		var st unix.Stat_t
		if err := unix.Lstat(dir, &st); err == nil {
			if st.Ino != replace {
				return false, nil
			}
			if err := c.remove(dir); err != nil {
				return false, err
			}
		}
	}
	// The parent may vanish (Forget, or a scan removing it empty) between
	// making it and the rename: then again.
	for range 3 {
		if err = os.MkdirAll(filepath.Dir(dir), 0o700); err != nil {
			break
		}
		if err = os.Rename(tmp, dir); !errors.Is(err, unix.ENOENT) {
			break
		}
	}
	if errors.Is(err, unix.EEXIST) || errors.Is(err, unix.ENOTEMPTY) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("install %s: %w", dir, err)
	}
	return true, nil
}

// remove takes dir out of the layout at once (a rename into trash) and
// then deletes it. Open files of it stay readable; a crash in between
// leaves a trash directory that the next scan removes.
func (c *Cache) remove(dir string) error {
	t := filepath.Join(c.root, trashDir, randName())
	if err := os.Rename(dir, t); err != nil {
		if errors.Is(err, unix.ENOENT) {
			return nil
		}
		return fmt.Errorf("remove %s: %w", dir, err)
	}
	if err := os.RemoveAll(t); err != nil {
		return fmt.Errorf("remove %s: %w", dir, err)
	}
	return nil
}

// removeIf removes dir if it is the directory with inode ino.
func (c *Cache) removeIf(dir string, ino uint64) error {
	var st unix.Stat_t
	if err := unix.Lstat(dir, &st); err != nil || st.Ino != ino {
		return nil
	}
	return c.remove(dir)
}

func (c *Cache) tempDir() (string, error) {
	t := filepath.Join(c.root, tmpDir, randName())
	if err := os.Mkdir(t, 0o700); err != nil {
		return "", fmt.Errorf("create %s: %w", t, err)
	}
	return t, nil
}

func randName() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
