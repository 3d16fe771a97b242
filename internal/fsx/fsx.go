// Package fsx is a seeded, reproducible data-integrity exerciser: it runs a
// random sequence of file operations in one directory, mirrors each on an
// in-memory reference and reports the first place where the two disagree.
package fsx

import (
	"fmt"
	"io"
	"math/rand/v2"
	"path/filepath"
	"strings"
)

// Kind is one class of operation.
type Kind int

const (
	Write     Kind = iota // pwrite at a random offset, possibly past EOF (sparse hole)
	Read                  // pread of a random range, possibly crossing EOF
	Truncate              // ftruncate up or down
	MapRead               // mmap(PROT_READ) and compare a range
	MapWrite              // mmap(MAP_SHARED) store + msync(MS_SYNC)
	Append                // write through a separate O_APPEND descriptor
	Fsync                 // fsync or fdatasync
	Reopen                // close and reopen, sometimes with O_TRUNC
	Rename                // rename the open file to its other name (toggles)
	Stat                  // stat by path and fstat, compare sizes
	Sibling               // rewrite, check or unlink a small sibling file
	Huge                  // pwrite beyond 4 GiB, check, truncate back down
	Fallocate             // fallocate: mode 0 (growing or inside) or FALLOC_FL_KEEP_SIZE
	CopyRange             // copy_file_range inside the file or from a second file
	numKinds
)

var kindNames = [numKinds]string{
	"write", "read", "truncate", "mapread", "mapwrite", "append",
	"fsync", "reopen", "rename", "stat", "sibling", "huge",
	"fallocate", "copyrange",
}

func (k Kind) String() string {
	if k >= 0 && k < numKinds {
		return kindNames[k]
	}
	return fmt.Sprintf("kind(%d)", int(k))
}

// ParseKinds turns a comma-separated list of kind names ("write,read,mapwrite")
// into kinds.
func ParseKinds(s string) ([]Kind, error) {
	var out []Kind
	for _, name := range strings.Split(s, ",") {
		name = strings.TrimSpace(name)
		found := false
		for k, n := range kindNames {
			if n == name {
				out = append(out, Kind(k))
				found = true
			}
		}
		if !found {
			return nil, fmt.Errorf("fsx: unknown operation %q", name)
		}
	}
	return out, nil
}

// DefaultKinds is every kind except Huge.
func DefaultKinds() []Kind {
	var out []Kind
	for k := Kind(0); k < numKinds; k++ {
		if k != Huge {
			out = append(out, k)
		}
	}
	return out
}

// weights makes data-changing and checking operations common and the
// expensive or structural ones rarer.
var weights = [numKinds]int{
	Write: 30, Read: 20, Truncate: 8, MapRead: 6, MapWrite: 6, Append: 8,
	Fsync: 4, Reopen: 4, Rename: 3, Stat: 5, Sibling: 5, Huge: 1,
	Fallocate: 4, CopyRange: 6,
}

// Options configure one run. The zero value of every field but Seed picks a
// default.
type Options struct {
	Seed     uint64
	NumOps   int    // default 1000
	MaxSize  int64  // upper bound of the file size outside Huge; default 256 KiB
	MaxLen   int    // longest single write or read; default 64 KiB
	Kinds    []Kind // default DefaultKinds()
	Name     string // base name of the file under test; default "fsx.data"
	Siblings int    // number of sibling files; default 2, negative for none
	// FullCheckEvery compares the whole file after every that many
	// operations (and always at the end); default 50.
	FullCheckEvery int
	TailLen        int // operations shown in a failure report; default 20
	// Trace, when set, receives one line per operation.
	Trace io.Writer
	// AfterOp, when set, runs after operation i has been checked, with the
	// current path of the file under test.
	AfterOp func(i int, path string)
	// AfterFsync, when set, runs after every successful fsync of the file
	// under test with its current path and the reference contents (which
	// it must not keep): a check that the server holds them.
	AfterFsync func(path string, want []byte) error
}

func (o *Options) fill() {
	if o.NumOps == 0 {
		o.NumOps = 1000
	}
	if o.MaxSize == 0 {
		o.MaxSize = 256 << 10
	}
	if o.MaxLen == 0 {
		o.MaxLen = 64 << 10
	}
	if int64(o.MaxLen) > o.MaxSize {
		o.MaxLen = int(o.MaxSize)
	}
	if len(o.Kinds) == 0 {
		o.Kinds = DefaultKinds()
	}
	if o.Name == "" {
		o.Name = "fsx.data"
	}
	if o.Siblings == 0 {
		o.Siblings = 2
	}
	if o.Siblings < 0 {
		o.Siblings = 0
	}
	if o.FullCheckEvery == 0 {
		o.FullCheckEvery = 50
	}
	if o.TailLen == 0 {
		o.TailLen = 20
	}
}

// Failure is a disagreement between the file and the reference, or an
// unexpected error from an operation.
type Failure struct {
	Seed   uint64
	Op     int    // index of the failing operation
	What   string // the failing operation, as in the trace
	Offset int64  // first differing file offset; -1 when not a data mismatch
	Got    []byte // bytes read from Offset on (at most 16)
	Want   []byte // reference bytes from Offset on (at most 16)
	Detail string // what was compared, or the failing step
	Err    error  // the system call error, if that is the failure
	Tail   []string
}

func (f *Failure) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "fsx: seed %d, op %d (%s): %s", f.Seed, f.Op, f.What, f.Detail)
	if f.Err != nil {
		fmt.Fprintf(&b, ": %v", f.Err)
	}
	if f.Offset >= 0 {
		fmt.Fprintf(&b, "; first difference at offset %d (%#x): got % x, want % x",
			f.Offset, f.Offset, f.Got, f.Want)
	}
	b.WriteString("\nlast operations:")
	for _, l := range f.Tail {
		b.WriteString("\n  ")
		b.WriteString(l)
	}
	return b.String()
}

func (f *Failure) Unwrap() error { return f.Err }

// Run executes the operations in dir, which must exist. It returns nil when
// the file always matched the reference, a *Failure otherwise. The files it
// creates are left in dir for inspection.
func Run(dir string, o Options) error {
	o.fill()
	r := &runner{
		o:   o,
		rng: rand.New(rand.NewPCG(o.Seed, 0x5eed_f5c)),
		names: [2]string{
			filepath.Join(dir, o.Name),
			filepath.Join(dir, o.Name+".moved"),
		},
		fd:    -1,
		srcFd: -1,
	}
	for _, k := range o.Kinds {
		if k < 0 || k >= numKinds {
			return fmt.Errorf("fsx: unknown operation kind %d", int(k))
		}
		r.total += weights[k]
	}
	for _, k := range o.Kinds {
		if k == CopyRange {
			r.src = filepath.Join(dir, o.Name+".src")
		}
	}
	for i := 0; i < o.Siblings; i++ {
		r.sibs = append(r.sibs, &sibling{path: filepath.Join(dir, fmt.Sprintf("%s.sib%d", o.Name, i))})
	}
	defer r.close()
	defer r.closeSource()
	return r.run()
}
