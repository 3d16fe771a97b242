package fsx

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// runner holds the state of one run. It is used by one goroutine only.
type runner struct {
	o       Options
	rng     *rand.Rand
	names   [2]string // the file under test and the name Rename moves it to
	cur     int       // index into names of the file's current name
	fd      int       // open O_RDWR descriptor of the file, -1 when closed
	model   []byte    // reference contents; len(model) is the reference size
	sibs    []*sibling
	src     string // second file CopyRange copies from, "" without CopyRange
	srcFd   int    // its O_RDONLY descriptor
	srcData []byte // its contents, written once at setup
	total   int    // sum of the weights of the enabled kinds

	op   int    // index of the current operation
	what string // description of the current operation
	tail []string
}

// sibling is a small extra file with its own reference.
type sibling struct {
	path   string
	exists bool
	data   []byte
}

func (r *runner) path() string { return r.names[r.cur] }

func (r *runner) run() error {
	r.what = "setup"
	for _, p := range r.names {
		if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
			return r.fail("remove leftover "+p, err)
		}
	}
	for _, s := range r.sibs {
		if err := os.Remove(s.path); err != nil && !errors.Is(err, os.ErrNotExist) {
			return r.fail("remove leftover "+s.path, err)
		}
	}
	if err := r.open(unix.O_CREAT | unix.O_TRUNC); err != nil {
		return err
	}
	if err := r.openSource(); err != nil {
		return err
	}
	for r.op = 0; r.op < r.o.NumOps; r.op++ {
		if err := r.do(r.pick()); err != nil {
			return err
		}
		if r.o.AfterOp != nil {
			r.o.AfterOp(r.op, r.path())
		}
		if (r.op+1)%r.o.FullCheckEvery == 0 || r.op == r.o.NumOps-1 {
			if err := r.checkAll("whole-file check"); err != nil {
				return err
			}
		}
	}
	return nil
}

func (r *runner) pick() Kind {
	n := r.rng.IntN(r.total)
	for _, k := range r.o.Kinds {
		if n < weights[k] {
			return k
		}
		n -= weights[k]
	}
	return r.o.Kinds[len(r.o.Kinds)-1]
}

func (r *runner) do(k Kind) error {
	switch k {
	case Write:
		return r.opWrite()
	case Read:
		return r.opRead()
	case Truncate:
		return r.opTruncate()
	case MapRead:
		return r.opMapRead()
	case MapWrite:
		return r.opMapWrite()
	case Append:
		return r.opAppend()
	case Fsync:
		return r.opFsync()
	case Reopen:
		return r.opReopen()
	case Rename:
		return r.opRename()
	case Stat:
		return r.opStat()
	case Sibling:
		return r.opSibling()
	case Huge:
		return r.opHuge()
	case Fallocate:
		return r.opFallocate()
	case CopyRange:
		return r.opCopyRange()
	}
	return fmt.Errorf("fsx: unknown operation kind %d", int(k))
}

// logf records the current operation in the trace and the failure tail.
func (r *runner) logf(format string, args ...any) {
	r.what = fmt.Sprintf(format, args...)
	line := fmt.Sprintf("#%d %s", r.op, r.what)
	if len(r.tail) == r.o.TailLen {
		copy(r.tail, r.tail[1:])
		r.tail = r.tail[:len(r.tail)-1]
	}
	r.tail = append(r.tail, line)
	if r.o.Trace != nil {
		fmt.Fprintln(r.o.Trace, line)
	}
}

func (r *runner) fail(detail string, err error) *Failure {
	return &Failure{
		Seed: r.o.Seed, Op: r.op, What: r.what, Offset: -1,
		Detail: detail, Err: err, Tail: append([]string(nil), r.tail...),
	}
}

// compare reports the first difference between got and want, which start
// at file offset off; a length difference counts as a difference at the
// end of the shorter one.
func (r *runner) compare(detail string, off int64, got, want []byte) error {
	if bytes.Equal(got, want) {
		return nil
	}
	i := 0
	for i < len(got) && i < len(want) && got[i] == want[i] {
		i++
	}
	f := r.fail(fmt.Sprintf("%s: read %d bytes, want %d", detail, len(got), len(want)), nil)
	f.Offset = off + int64(i)
	f.Got = clip(got[i:], 16)
	f.Want = clip(want[i:], 16)
	return f
}

func clip(b []byte, n int) []byte {
	if len(b) > n {
		b = b[:n]
	}
	return append([]byte(nil), b...)
}

// retry repeats a system call interrupted by a signal (the Go runtime's
// preemption signals interrupt calls into a FUSE filesystem).
func retry(f func() error) error {
	for i := 0; ; i++ {
		err := f()
		if err != syscall.EINTR || i == 100 {
			return err
		}
	}
}

func (r *runner) open(flags int) error {
	var fd int
	err := retry(func() (err error) {
		fd, err = unix.Open(r.path(), unix.O_RDWR|unix.O_CLOEXEC|flags, 0o644)
		return err
	})
	if err != nil {
		return r.fail("open "+r.path(), err)
	}
	r.fd = fd
	if flags&unix.O_TRUNC != 0 {
		r.model = r.model[:0]
	}
	return nil
}

// openSource writes the second file CopyRange copies from and opens it
// for reading.
func (r *runner) openSource() error {
	if r.src == "" {
		return nil
	}
	r.srcData = r.pattern(0, r.o.MaxLen)
	for i := range r.srcData {
		r.srcData[i] ^= 0x80 // unlike anything the file under test holds
		if r.srcData[i] == 0 {
			r.srcData[i] = 0x80
		}
	}
	if err := os.WriteFile(r.src, r.srcData, 0o644); err != nil {
		return r.fail("write copy source", err)
	}
	err := retry(func() (err error) {
		r.srcFd, err = unix.Open(r.src, unix.O_RDONLY|unix.O_CLOEXEC, 0)
		return err
	})
	if err != nil {
		return r.fail("open copy source", err)
	}
	return nil
}

func (r *runner) closeSource() {
	if r.srcFd >= 0 {
		unix.Close(r.srcFd)
		r.srcFd = -1
	}
}

func (r *runner) close() error {
	if r.fd < 0 {
		return nil
	}
	err := unix.Close(r.fd)
	r.fd = -1
	return err
}

// preadFull reads n bytes at off, fewer only at end of file.
func preadFull(fd int, off int64, n int) ([]byte, error) {
	buf := make([]byte, n)
	got := 0
	for got < n {
		var m int
		err := retry(func() (err error) {
			m, err = unix.Pread(fd, buf[got:], off+int64(got))
			return err
		})
		if err != nil {
			return buf[:got], err
		}
		if m == 0 {
			break
		}
		got += m
	}
	return buf[:got], nil
}

func pwriteFull(fd int, b []byte, off int64) error {
	for len(b) > 0 {
		var m int
		err := retry(func() (err error) {
			m, err = unix.Pwrite(fd, b, off)
			return err
		})
		if err != nil {
			return err
		}
		if m == 0 {
			return fmt.Errorf("pwrite wrote 0 of %d bytes", len(b))
		}
		b, off = b[m:], off+int64(m)
	}
	return nil
}

func (r *runner) fsize() (int64, error) {
	var st unix.Stat_t
	err := retry(func() error { return unix.Fstat(r.fd, &st) })
	return st.Size, err
}

// checkSize compares fstat's size with the reference.
func (r *runner) checkSize(detail string) error {
	size, err := r.fsize()
	if err != nil {
		return r.fail(detail+": fstat", err)
	}
	if size != int64(len(r.model)) {
		return r.fail(fmt.Sprintf("%s: fstat size %d, want %d", detail, size, len(r.model)), nil)
	}
	return nil
}

// checkRange reads [off, off+n) back through the descriptor and compares it
// with the reference, which ends at the reference size.
func (r *runner) checkRange(detail string, off int64, n int) error {
	if off < 0 {
		n += int(off)
		off = 0
	}
	if n <= 0 {
		return nil
	}
	got, err := preadFull(r.fd, off, n)
	if err != nil {
		return r.fail(fmt.Sprintf("%s: pread off=%d len=%d", detail, off, n), err)
	}
	return r.compare(fmt.Sprintf("%s: pread off=%d len=%d", detail, off, n), off, got, r.want(off, n))
}

// want is the reference's view of [off, off+n).
func (r *runner) want(off int64, n int) []byte {
	size := int64(len(r.model))
	if off >= size {
		return nil
	}
	end := min(off+int64(n), size)
	return r.model[off:end]
}

// checkAll compares size and entire contents, reading one byte past the
// reference end to catch extra data.
func (r *runner) checkAll(detail string) error {
	if err := r.checkSize(detail); err != nil {
		return err
	}
	return r.checkRange(detail, 0, len(r.model)+1)
}

// pattern fills a buffer for offset off with bytes that depend on the
// operation index, so a stale byte in a report hints at the operation that
// wrote it. It never yields zero, which is what holes read as.
func (r *runner) pattern(off int64, n int) []byte {
	b := make([]byte, n)
	base := uint64(r.op)*37 + 1
	for i := range b {
		v := byte(base + uint64(off+int64(i))%251)
		if v == 0 {
			v = 1
		}
		b[i] = v
	}
	return b
}

// setModel stores b at off in the reference, growing it with zeros.
func (r *runner) setModel(off int64, b []byte) {
	r.resizeModel(max(int64(len(r.model)), off+int64(len(b))))
	copy(r.model[off:], b)
}

func (r *runner) resizeModel(size int64) {
	old := int64(len(r.model))
	if size <= old {
		r.model = r.model[:size]
		return
	}
	if size <= int64(cap(r.model)) {
		r.model = r.model[:size]
		clear(r.model[old:])
		return
	}
	m := make([]byte, size, max(size, r.o.MaxSize))
	copy(m, r.model)
	r.model = m
}
