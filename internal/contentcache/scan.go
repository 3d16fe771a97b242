package contentcache

import (
	"os"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// How old leftovers must be before a scan removes them: younger ones may
// be another process's work in progress.
const (
	staleTmp    = 10 * time.Minute
	staleBroken = time.Minute
)

// group is the stored content of one data file and every directory (entry
// or stored copy) naming it: evicting frees its space only if all go.
type group struct {
	ino  uint64
	size int64 // bytes allocated to the data file and (estimated) the record
	used int64 // mtime of the data file: its last use, unix nanoseconds
	dirs []string
	keys int64 // how many of dirs are entries (the others are stored copies)
}

// scanResult is what the disk holds, as one scan saw it.
type scanResult struct {
	groups  map[uint64]*group
	total   int64
	entries int64
	sizes   map[storedSize]bool // of the stored copies larger than a block, by owner
}

// scan reads the metadata of every entry and stored copy (no data) and
// removes leftovers of interrupted work. It goes through directory
// descriptors and raw getdents: a few system calls per entry.
func (c *Cache) scan() scanResult {
	res := scanResult{groups: map[uint64]*group{}, sizes: map[storedSize]bool{}}
	r := dirReader{buf: make([]byte, 64<<10)}
	e := filepath.Join(c.root, entriesDir)
	r.each(unix.AT_FDCWD, e, func(efd int, xx string) {
		r.each(efd, xx, func(xfd int, hp string) {
			if c.ctx.Err() != nil {
				return // closing
			}
			empty := true
			r.each(xfd, hp, func(hfd int, ver string) {
				empty = false
				c.scanDir(&res, hfd, ver, e+"/"+xx+"/"+hp, true)
			})
			// A young empty one may be about to receive an entry.
			var st unix.Stat_t
			if empty && unix.Fstatat(xfd, hp, &st, unix.AT_SYMLINK_NOFOLLOW) == nil &&
				time.Since(time.Unix(st.Mtim.Unix())) > staleBroken {
				_ = unix.Unlinkat(xfd, hp, unix.AT_REMOVEDIR)
			}
		})
	})
	o := filepath.Join(c.root, objectsDir)
	r.each(unix.AT_FDCWD, o, func(ofd int, xx string) {
		r.each(ofd, xx, func(xfd int, name string) {
			switch {
			case strings.HasSuffix(name, smallSuffix):
				c.scanFile(&res, xfd, name, o+"/"+xx, false)
			case tagOfObject(name) == "":
				// A stored copy named before owner tags: no key finds it
				// any more. Its entries keep their own names of the data.
				_ = c.remove(o + "/" + xx + "/" + name)
			default:
				c.scanDir(&res, xfd, name, o+"/"+xx, false)
			}
		})
	})
	s := filepath.Join(c.root, smallDir)
	r.each(unix.AT_FDCWD, s, func(sfd int, xx string) {
		r.each(sfd, xx, func(xfd int, name string) {
			c.scanFile(&res, xfd, name, s+"/"+xx, true)
		})
	})
	c.sweep(tmpDir, staleTmp)
	c.sweep(trashDir, 0)
	return res
}

// scanDir adds the directory name under parent (descriptor pfd, path
// ppath), an entry or a stored copy, to its group.
func (c *Cache) scanDir(res *scanResult, pfd int, name, ppath string, entry bool) {
	var d unix.Stat_t
	if err := unix.Fstatat(pfd, name+"/d", &d, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		var st unix.Stat_t
		if unix.Fstatat(pfd, name, &st, unix.AT_SYMLINK_NOFOLLOW) == nil && time.Since(time.Unix(st.Mtim.Unix())) > staleBroken {
			_ = c.remove(ppath + "/" + name)
		}
		return
	}
	if d.Size <= c.bs && c.oldSmall(pfd, name) {
		_ = c.remove(ppath + "/" + name)
		return
	}
	g := res.groups[d.Ino]
	if g == nil {
		// The record's size is estimated from the data's rather than
		// read: one system call less per entry. From the data's blocks
		// on disk, not its length: a file the server says is huge takes
		// a slot for each block stored only.
		rec := (slotsOff + slotLen*(d.Blocks*512+c.bs-1)/c.bs + 4095) &^ 4095
		g = &group{ino: d.Ino, size: d.Blocks*512 + rec, used: d.Mtim.Nano()}
		res.groups[d.Ino] = g
		res.total += g.size
	}
	g.dirs = append(g.dirs, ppath+"/"+name)
	if entry {
		g.keys++
		res.entries++
	} else if tag := tagOfObject(name); d.Size > c.bs && tag != "" {
		res.sizes[storedSize{tag, d.Size}] = true
	}
}

// scanFile adds the small file name under parent (descriptor pfd, path
// ppath), an entry or a stored copy, to its group.
func (c *Cache) scanFile(res *scanResult, pfd int, name, ppath string, entry bool) {
	var st unix.Stat_t
	if err := unix.Fstatat(pfd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil || st.Mode&unix.S_IFMT != unix.S_IFREG {
		return
	}
	g := res.groups[st.Ino]
	if g == nil {
		g = &group{ino: st.Ino, size: st.Blocks * 512, used: st.Mtim.Nano()}
		res.groups[st.Ino] = g
		res.total += g.size
	}
	g.dirs = append(g.dirs, ppath+"/"+name)
	if entry {
		g.keys++
		res.entries++
	}
}

// oldSmall reports whether the entry directory name under pfd holds
// content of at most one block: the layout before small files, which
// this version never reads. Only directories whose data file is that
// short are asked, so this costs a read per entry once.
func (c *Cache) oldSmall(pfd int, name string) bool {
	fd, err := unix.Openat(pfd, name+"/r", unix.O_RDONLY|unix.O_CLOEXEC|unix.O_NOFOLLOW, 0)
	if err != nil {
		return false
	}
	defer unix.Close(fd)
	b := make([]byte, recordLen)
	n, _ := unix.Pread(fd, b, headerOff)
	h, ok := decodeHeader(b[:max(n, 0)])
	return ok && h.size <= h.bs
}

// sweep removes what sub holds that is older than age.
func (c *Cache) sweep(sub string, age time.Duration) {
	dir := filepath.Join(c.root, sub)
	for _, n := range readNames(dir) {
		var st unix.Stat_t
		p := filepath.Join(dir, n)
		if unix.Lstat(p, &st) == nil && time.Since(time.Unix(st.Mtim.Unix())) >= age {
			_ = os.RemoveAll(p)
		}
	}
}

func readNames(dir string) []string {
	f, err := os.Open(dir)
	if err != nil {
		return nil
	}
	defer f.Close()
	names, _ := f.Readdirnames(-1)
	return names
}

// dirReader lists directories through descriptors.
type dirReader struct{ buf []byte }

// each calls fn with a descriptor of the directory name under parent and
// each name in it. Unreadable directories are skipped.
func (r *dirReader) each(parent int, name string, fn func(fd int, name string)) {
	fd, err := unix.Openat(parent, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC|unix.O_NOFOLLOW, 0)
	if err != nil {
		return
	}
	defer unix.Close(fd)
	var names []string
	for {
		n, err := unix.Getdents(fd, r.buf)
		if err != nil || n <= 0 {
			break
		}
		_, _, names = unix.ParseDirent(r.buf[:n], -1, names)
	}
	for _, n := range names {
		fn(fd, n)
	}
}
