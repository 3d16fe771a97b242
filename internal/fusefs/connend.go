package fusefs

import (
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// The kernel ends a FUSE connection when the filesystem is unmounted (by
// the daemon, or from outside by fusermount3 -u or umount) or aborted
// through /sys/fs/fuse/connections/N/abort: every request still waiting
// is answered with ENOTCONN, and nobody waits for the daemon's answers
// any more. go-fuse's Server.Wait returns only once the daemon's own
// requests have returned, which for a mutation already sent on a stalled
// link is its timeout, minutes perhaps. Options.Ended tells the daemon at
// once, so that it can bound its exit from then on.
//
// A /dev/fuse descriptor polls POLLERR once its connection has ended
// (fuse_dev_poll), and the kernel wakes its pollers then: a goroutine
// blocked in poll(2) on a descriptor of our own, with no event asked for,
// returns exactly then, at no cost before.

// fuseFDs returns this process's descriptors of /dev/fuse.
func fuseFDs() map[int]bool {
	fds := map[int]bool{}
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return fds
	}
	for _, e := range ents {
		fd, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if target, err := os.Readlink("/proc/self/fd/" + e.Name()); err == nil && target == "/dev/fuse" {
			fds[fd] = true
		}
	}
	return fds
}

// watchEnd closes ended when the connection of the mount just made ends.
// The mount's descriptor is the one /dev/fuse descriptor that appeared
// since before; when it cannot be told (none, or mounts made at once in
// one process), ended is never closed. The watch holds a close-on-exec
// duplicate, so that the number polled stays this connection's after
// go-fuse closes its own.
func watchEnd(before map[int]bool, ended chan<- struct{}) {
	if ended == nil {
		return
	}
	fd := -1
	for d := range fuseFDs() {
		if before[d] {
			continue
		}
		if fd >= 0 {
			return // two new ones: which is ours?
		}
		fd = d
	}
	if fd < 0 {
		return
	}
	own, err := unix.FcntlInt(uintptr(fd), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		return
	}
	go awaitEnd(own, ended)
}

// awaitEnd blocks until the FUSE connection of descriptor fd has ended,
// closes ended and fd. A poll that fails otherwise leaves ended open:
// not knowing is not an end.
func awaitEnd(fd int, ended chan<- struct{}) {
	defer unix.Close(fd)
	fds := []unix.PollFd{{Fd: int32(fd)}}
	for {
		n, err := unix.Poll(fds, -1)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return
		}
		if n > 0 && fds[0].Revents&(unix.POLLERR|unix.POLLHUP|unix.POLLNVAL) != 0 {
			close(ended)
			return
		}
	}
}
