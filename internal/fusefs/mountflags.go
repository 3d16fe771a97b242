package fusefs

import "syscall"

// mountFlag is what one of mount(8)'s generic flags does to the flags of
// mount(2): it sets or clears bit.
type mountFlag struct {
	bit uintptr
	set bool
}

// mountFlags are the generic flags a mount passes to the kernel, as
// fusermount3 knows them. nosuid and nodev are not among them: every mount
// has both, as fusermount3 gives every mount of an ordinary user.
var mountFlags = map[string]mountFlag{
	"exec":          {syscall.MS_NOEXEC, false},
	"noexec":        {syscall.MS_NOEXEC, true},
	"async":         {syscall.MS_SYNCHRONOUS, false},
	"sync":          {syscall.MS_SYNCHRONOUS, true},
	"dirsync":       {syscall.MS_DIRSYNC, true},
	"atime":         {syscall.MS_NOATIME, false},
	"noatime":       {syscall.MS_NOATIME, true},
	"diratime":      {syscall.MS_NODIRATIME, false},
	"nodiratime":    {syscall.MS_NODIRATIME, true},
	"norelatime":    {syscall.MS_RELATIME, false},
	"relatime":      {syscall.MS_RELATIME, true},
	"nostrictatime": {syscall.MS_STRICTATIME, false},
	"strictatime":   {syscall.MS_STRICTATIME, true},
	"nolazytime":    {msLazyTime, false},
	"lazytime":      {msLazyTime, true},
}

// msLazyTime is MS_LAZYTIME, which package syscall lacks.
const msLazyTime = 1 << 25

// flagNames are the names under which set bits are passed: fusermount3
// reads them from its -o, a direct mount(2) takes the bits. relatime has
// no name: the kernel mounts relatime unless noatime or strictatime says
// otherwise, and many a fusermount3 (3.14 among them) refuses the name,
// which would fail the fstab lines that spell the default out.
var flagNames = []struct {
	bit  uintptr
	name string
}{
	{syscall.MS_RDONLY, "ro"},
	{syscall.MS_NOSUID, "nosuid"},
	{syscall.MS_NODEV, "nodev"},
	{syscall.MS_NOEXEC, "noexec"},
	{syscall.MS_SYNCHRONOUS, "sync"},
	{syscall.MS_DIRSYNC, "dirsync"},
	{syscall.MS_NOATIME, "noatime"},
	{syscall.MS_NODIRATIME, "nodiratime"},
	{syscall.MS_STRICTATIME, "strictatime"},
	{msLazyTime, "lazytime"},
}

// kernelFlags folds the generic flags given, in order (the last of a pair
// wins), into the bits of mount(2) and the names fusermount3 reads. Every
// mount is nosuid and nodev; readOnly adds ro. A name that is not a generic
// flag is an error: dropping one could drop a restriction (noexec).
func kernelFlags(given []string, readOnly bool) (bits uintptr, names []string, err error) {
	bits = syscall.MS_NOSUID | syscall.MS_NODEV
	if readOnly {
		bits |= syscall.MS_RDONLY
	}
	for _, g := range given {
		f, ok := mountFlags[g]
		switch {
		case !ok:
			return 0, nil, &unknownFlagError{g}
		case f.set:
			bits |= f.bit
		default:
			bits &^= f.bit
		}
	}
	for _, n := range flagNames {
		if bits&n.bit != 0 {
			names = append(names, n.name)
		}
	}
	return bits, names, nil
}

// unknownFlagError is a mount flag that sshfsm cannot pass to the kernel.
type unknownFlagError struct{ name string }

func (e *unknownFlagError) Error() string {
	return "mount flag " + e.name + " is not supported"
}
