package fsx

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime/debug"

	"golang.org/x/sys/unix"
)

// randLen picks a length: often tiny, often about a page, sometimes long.
func (r *runner) randLen() int {
	switch r.rng.IntN(3) {
	case 0:
		return 1 + r.rng.IntN(16)
	case 1:
		return 1 + r.rng.IntN(min(8192, r.o.MaxLen))
	}
	return 1 + r.rng.IntN(r.o.MaxLen)
}

// randOff picks an offset below limit, page-aligned a quarter of the time.
func (r *runner) randOff(limit int64) int64 {
	if limit <= 0 {
		return 0
	}
	off := r.rng.Int64N(limit)
	if r.rng.IntN(4) == 0 {
		off &^= 4095
	}
	return off
}

func (r *runner) opWrite() error {
	size := int64(len(r.model))
	var off int64
	if size < r.o.MaxSize && r.rng.IntN(4) == 0 {
		off = size + r.randOff(r.o.MaxSize-size) // past EOF: leaves a hole
	} else {
		off = r.randOff(r.o.MaxSize)
	}
	n := int(min(int64(r.randLen()), r.o.MaxSize-off))
	if n <= 0 {
		off, n = 0, 1
	}
	buf := r.pattern(off, n)
	r.logf("write off=%d len=%d (size %d)", off, n, size)
	if err := pwriteFull(r.fd, buf, off); err != nil {
		return r.fail("pwrite", err)
	}
	r.setModel(off, buf)
	from := min(off, size) // includes the hole, if any
	if err := r.checkRange("read back", from, int(off+int64(n)-from)); err != nil {
		return err
	}
	return r.checkSize("after write")
}

func (r *runner) opRead() error {
	size := int64(len(r.model))
	off := r.randOff(size + 4096)
	n := r.randLen()
	r.logf("read off=%d len=%d (size %d)", off, n, size)
	return r.checkRange("read", off, n)
}

func (r *runner) opTruncate() error {
	size := int64(len(r.model))
	var to int64
	switch r.rng.IntN(3) {
	case 0:
		to = max(0, min(r.o.MaxSize, size+int64(r.rng.IntN(8193))-4096))
	case 1:
		to = r.rng.Int64N(r.o.MaxSize + 1)
	default:
		to = r.randOff(r.o.MaxSize + 1)
	}
	r.logf("truncate %d -> %d", size, to)
	if err := retry(func() error { return unix.Ftruncate(r.fd, to) }); err != nil {
		return r.fail("ftruncate", err)
	}
	r.resizeModel(to)
	if err := r.checkSize("after truncate"); err != nil {
		return err
	}
	from := min(size, to) - 4096
	return r.checkRange("around the new end", from, int(max(size, to)-from)+1)
}

// mapRange picks a range inside the file for the mmap operations.
func (r *runner) mapRange() (int64, int) {
	size := int64(len(r.model))
	off := r.randOff(size)
	return off, int(min(int64(r.randLen()), size-off))
}

// touchMap runs f, which reads or writes a mapping of the file, turning
// a fault (SIGBUS: the file system failed to supply a page) into an error
// rather than a crash of the whole process.
func touchMap(f func()) (err error) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("fault on the mapping: %v", p)
		}
	}()
	f()
	return nil
}

func (r *runner) opMapRead() error {
	size := len(r.model)
	if size == 0 {
		r.logf("mapread: skipped, file empty")
		return nil
	}
	off, n := r.mapRange()
	r.logf("mapread off=%d len=%d (size %d)", off, n, size)
	m, err := unix.Mmap(r.fd, 0, size, unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		return r.fail("mmap", err)
	}
	var got []byte
	if err := touchMap(func() { got = append([]byte(nil), m[off:off+int64(n)]...) }); err != nil {
		unix.Munmap(m)
		return r.fail("mapped read", err)
	}
	if err := unix.Munmap(m); err != nil {
		return r.fail("munmap", err)
	}
	return r.compare("mapped read", off, got, r.model[off:off+int64(n)])
}

func (r *runner) opMapWrite() error {
	size := len(r.model)
	if size == 0 {
		r.logf("mapwrite: skipped, file empty")
		return nil
	}
	off, n := r.mapRange()
	buf := r.pattern(off, n)
	r.logf("mapwrite off=%d len=%d (size %d)", off, n, size)
	m, err := unix.Mmap(r.fd, 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		return r.fail("mmap", err)
	}
	if err := touchMap(func() { copy(m[off:], buf) }); err != nil {
		unix.Munmap(m)
		return r.fail("mapped write", err)
	}
	if err := retry(func() error { return unix.Msync(m, unix.MS_SYNC) }); err != nil {
		unix.Munmap(m)
		return r.fail("msync", err)
	}
	if err := unix.Munmap(m); err != nil {
		return r.fail("munmap", err)
	}
	r.setModel(off, buf)
	if err := r.checkRange("read back", off, n); err != nil {
		return err
	}
	return r.checkSize("after mapwrite")
}

func (r *runner) opAppend() error {
	size := int64(len(r.model))
	if size >= r.o.MaxSize {
		r.logf("append: skipped, file at max size")
		return nil
	}
	n := int(min(int64(r.randLen()), r.o.MaxSize-size))
	buf := r.pattern(size, n)
	r.logf("append len=%d (size %d)", n, size)
	f, err := os.OpenFile(r.path(), os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		return r.fail("open O_APPEND", err)
	}
	_, err = f.Write(buf)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return r.fail("append write", err)
	}
	r.setModel(size, buf)
	if err := r.checkSize("after append"); err != nil {
		return err
	}
	return r.checkRange("read back", size-1, n+2)
}

func (r *runner) opFsync() error {
	var err error
	if r.rng.IntN(2) == 0 {
		r.logf("fsync")
		err = wrapErr(r, "fsync", retry(func() error { return unix.Fsync(r.fd) }))
	} else {
		r.logf("fsync (fdatasync)")
		err = wrapErr(r, "fdatasync", retry(func() error { return unix.Fdatasync(r.fd) }))
	}
	if err != nil || r.o.AfterFsync == nil {
		return err
	}
	if err := r.o.AfterFsync(r.path(), r.model); err != nil {
		return r.fail("after fsync", err)
	}
	return nil
}

func wrapErr(r *runner, detail string, err error) error {
	if err != nil {
		return r.fail(detail, err)
	}
	return nil
}

func (r *runner) opReopen() error {
	flags := 0
	if r.rng.IntN(8) == 0 {
		flags = unix.O_TRUNC
	}
	r.logf("reopen (close first; O_TRUNC=%v)", flags != 0)
	if err := r.close(); err != nil {
		return r.fail("close", err)
	}
	if err := r.open(flags); err != nil {
		return err
	}
	return r.checkAll("after reopen")
}

func (r *runner) opRename() error {
	from, to := r.path(), r.names[1-r.cur]
	r.logf("rename %s -> %s (while open)", filepath.Base(from), filepath.Base(to))
	if err := retry(func() error { return unix.Rename(from, to) }); err != nil {
		return r.fail("rename", err)
	}
	r.cur = 1 - r.cur
	if _, err := os.Lstat(from); !errors.Is(err, os.ErrNotExist) {
		return r.fail("old name after rename: want ENOENT", err)
	}
	st, err := os.Stat(to)
	if err != nil {
		return r.fail("stat new name", err)
	}
	if st.Size() != int64(len(r.model)) {
		return r.fail(fmt.Sprintf("stat new name: size %d, want %d", st.Size(), len(r.model)), nil)
	}
	return r.checkSize("after rename")
}

func (r *runner) opStat() error {
	r.logf("stat (size %d)", len(r.model))
	st, err := os.Stat(r.path())
	if err != nil {
		return r.fail("stat", err)
	}
	if !st.Mode().IsRegular() || st.Size() != int64(len(r.model)) {
		return r.fail(fmt.Sprintf("stat: mode %v size %d, want regular file of %d", st.Mode(), st.Size(), len(r.model)), nil)
	}
	return r.checkSize("fstat")
}

// sibMax bounds the size of a sibling file.
const sibMax = 16 << 10

func (r *runner) opSibling() error {
	if len(r.sibs) == 0 {
		r.logf("sibling: none configured")
		return nil
	}
	i := r.rng.IntN(len(r.sibs))
	s := r.sibs[i]
	switch a := r.rng.IntN(6); {
	case a == 0 && s.exists:
		r.logf("sibling %d: unlink", i)
		if err := os.Remove(s.path); err != nil {
			return r.fail("unlink sibling", err)
		}
		s.exists, s.data = false, nil
	case a <= 3 || !s.exists:
		off := r.randOff(sibMax)
		n := int(min(int64(1+r.rng.IntN(4096)), sibMax-off))
		buf := r.pattern(off, n)
		r.logf("sibling %d: write off=%d len=%d (size %d)", i, off, n, len(s.data))
		f, err := os.OpenFile(s.path, os.O_RDWR|os.O_CREATE, 0o644)
		if err != nil {
			return r.fail("open sibling", err)
		}
		_, err = f.WriteAt(buf, off)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return r.fail("write sibling", err)
		}
		if end := off + int64(n); end > int64(len(s.data)) {
			s.data = append(s.data, make([]byte, end-int64(len(s.data)))...)
		}
		copy(s.data[off:], buf)
		s.exists = true
	default:
		r.logf("sibling %d: check (size %d)", i, len(s.data))
	}
	got, err := os.ReadFile(s.path)
	if !s.exists {
		if !errors.Is(err, os.ErrNotExist) {
			return r.fail("read unlinked sibling: want ENOENT", err)
		}
		return nil
	}
	if err != nil {
		return r.fail("read sibling", err)
	}
	return r.compare("sibling "+s.path, 0, got, s.data)
}

// opHuge writes past 4 GiB, checks the data, the size and the hole before
// it, then truncates back so the reference stays small.
func (r *runner) opHuge() error {
	size := int64(len(r.model))
	off := int64(4<<30) + r.rng.Int64N(1<<20)
	n := 1 + r.rng.IntN(4096)
	buf := r.pattern(off, n)
	r.logf("huge write off=%d len=%d, then truncate back to %d", off, n, size)
	if err := pwriteFull(r.fd, buf, off); err != nil {
		return r.fail("pwrite beyond 4 GiB", err)
	}
	if got, err := r.fsize(); err != nil || got != off+int64(n) {
		return r.fail(fmt.Sprintf("fstat after huge write: size %d, want %d", got, off+int64(n)), err)
	}
	got, err := preadFull(r.fd, off, n)
	if err != nil {
		return r.fail("pread beyond 4 GiB", err)
	}
	if err := r.compare("read back beyond 4 GiB", off, got, buf); err != nil {
		return err
	}
	for _, h := range []int64{off - 16, size + r.rng.Int64N(off-16-size)} {
		got, err := preadFull(r.fd, h, 16)
		if err != nil {
			return r.fail("pread hole", err)
		}
		if err := r.compare("hole before huge write", h, got, make([]byte, 16)); err != nil {
			return err
		}
	}
	if err := retry(func() error { return unix.Ftruncate(r.fd, size) }); err != nil {
		return r.fail("ftruncate back", err)
	}
	if err := r.checkSize("after truncating back"); err != nil {
		return err
	}
	return r.checkRange("end after truncating back", size-4096, 4097)
}

// FALLOC_FL_KEEP_SIZE: allocate without changing the size.
const fallocKeepSize = 0x01

// opFallocate allocates a range with mode 0, which grows the file when the
// range ends past it and leaves the contents alone, or with
// FALLOC_FL_KEEP_SIZE, which changes neither size nor contents.
func (r *runner) opFallocate() error {
	size := int64(len(r.model))
	var off int64
	if size > 0 && r.rng.IntN(2) == 0 {
		off = r.randOff(size) // starts inside the file
	} else {
		off = r.randOff(r.o.MaxSize)
	}
	n := max(1, min(int64(r.randLen()), r.o.MaxSize-off))
	mode := uint32(0)
	if r.rng.IntN(3) == 0 {
		mode = fallocKeepSize
	}
	r.logf("fallocate off=%d len=%d keep_size=%v (size %d)", off, n, mode != 0, size)
	if err := retry(func() error { return unix.Fallocate(r.fd, mode, off, n) }); err != nil {
		return r.fail("fallocate", err)
	}
	if mode == 0 && off+n > size {
		r.resizeModel(off + n)
	}
	if err := r.checkSize("after fallocate"); err != nil {
		return err
	}
	from := min(off, size) - 4096
	return r.checkRange("around the allocated range", from, int(max(off+n, size)-from)+1)
}

// opCopyRange copies with copy_file_range, either a range of the file to
// a place in it that the range does not overlap (possibly past the end,
// leaving a hole) or a range of the second file into it. A source range
// crossing its file's end copies up to that end.
func (r *runner) opCopyRange() error {
	size := int64(len(r.model))
	fromSelf := size > 0 && r.rng.IntN(2) == 0
	srcFd, src := r.srcFd, r.srcData
	if fromSelf {
		srcFd, src = r.fd, r.model
	}
	srcOff := r.randOff(int64(len(src)) + 512)
	n := int64(r.randLen())
	dstOff := r.randOff(r.o.MaxSize)
	n = max(1, min(n, r.o.MaxSize-dstOff))
	if fromSelf && srcOff < dstOff+n && dstOff < srcOff+n {
		// Overlapping ranges of one file are EINVAL: copy to just past the
		// source range instead, if there is room.
		dstOff = srcOff + n
		if dstOff >= r.o.MaxSize {
			r.logf("copyrange: skipped, no room for a copy that does not overlap")
			return nil
		}
		n = min(n, r.o.MaxSize-dstOff)
	}
	name := "second file"
	if fromSelf {
		name = "itself"
	}
	r.logf("copyrange from %s off=%d to off=%d len=%d (size %d)", name, srcOff, dstOff, n, size)
	// Each call copies from the source as it is then: a copy within the
	// file that grew it may go on to copy the hole it left.
	var done int64
	for done < n {
		if fromSelf {
			src = r.model
		}
		so, do := srcOff+done, dstOff+done
		var m int
		err := retry(func() (err error) {
			m, err = unix.CopyFileRange(srcFd, &so, r.fd, &do, int(n-done), 0)
			return err
		})
		if err != nil {
			return r.fail(fmt.Sprintf("copy_file_range after %d bytes", done), err)
		}
		avail := max(0, int64(len(src))-(srcOff+done))
		if m == 0 && avail > 0 || int64(m) > avail {
			return r.fail(fmt.Sprintf("copy_file_range copied %d bytes after %d, want %d", m, done, min(avail, n-done)), nil)
		}
		if m == 0 {
			break // the source's end
		}
		data := append([]byte(nil), src[srcOff+done:srcOff+done+int64(m)]...)
		r.setModel(dstOff+done, data)
		done += int64(m)
	}
	if err := r.checkSize("after copy_file_range"); err != nil {
		return err
	}
	from := min(dstOff, size)
	return r.checkRange("read back", from, int(dstOff+done-from)+1)
}
