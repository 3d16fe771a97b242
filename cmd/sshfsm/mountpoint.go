package main

import (
	"bufio"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"sshfsm/internal/config"
)

// checkMountpoint returns the absolute, symlink-free mountpoint, or an
// ExitMountpoint error when it is missing, not a directory, or already a
// mountpoint. A non-empty directory is fine.
func checkMountpoint(p string) (string, error) {
	abs, err := filepath.Abs(p)
	if err != nil {
		return "", config.Errorf(config.ExitMountpoint, "mountpoint %s: %v", p, err)
	}
	fi, err := os.Stat(abs)
	switch {
	case errors.Is(err, syscall.ENOTCONN):
		return "", deadMount(p, abs)
	case errors.Is(err, os.ErrNotExist):
		return "", config.Errorf(config.ExitMountpoint, "mountpoint %s does not exist; create it first (mkdir %s)", p, p)
	case err != nil:
		return "", config.Errorf(config.ExitMountpoint, "mountpoint %s: %v", p, unwrapPath(err))
	case !fi.IsDir():
		return "", config.Errorf(config.ExitMountpoint, "mountpoint %s is not a directory; give an existing directory", p)
	}
	real, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return "", config.Errorf(config.ExitMountpoint, "mountpoint %s: %v", p, unwrapPath(err))
	}
	if fstype, ok := mountedAt(real); ok {
		if strings.HasPrefix(fstype, "fuse") && isDead(real) {
			return "", deadMount(p, real)
		}
		unmount := "umount"
		if strings.HasPrefix(fstype, "fuse") {
			unmount = "fusermount3 -u"
		}
		return "", config.Errorf(config.ExitMountpoint, "mountpoint %s is already a mountpoint (%s); unmount it first (%s %s) or give another directory",
			p, fstype, unmount, p)
	}
	return real, nil
}

func deadMount(p, abs string) error {
	return config.Errorf(config.ExitMountpoint,
		"mountpoint %s is a dead mount (transport endpoint is not connected); run fusermount3 -u %s", p, abs)
}

// isDead reports whether the FUSE filesystem at dir lost its server. A
// server that does not answer within a second counts as alive.
func isDead(dir string) bool {
	done := make(chan error, 1)
	go func() {
		f, err := os.Open(dir)
		if err == nil {
			_, err = f.Readdirnames(1)
			f.Close()
		}
		done <- err
	}()
	select {
	case err := <-done:
		return errors.Is(err, syscall.ENOTCONN)
	case <-time.After(time.Second):
		return false
	}
}

func unwrapPath(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// mountedAt reports whether dir is a mountpoint in /proc/self/mountinfo,
// with the type of the filesystem mounted there.
func mountedAt(dir string) (fstype string, ok bool) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return "", false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		// id parent major:minor root mountpoint options [optional...] - type source super
		fields := strings.Fields(sc.Text())
		if len(fields) < 5 || unescapeMountinfo(fields[4]) != dir {
			continue
		}
		fstype = "unknown type"
		for i, fld := range fields {
			if fld == "-" && i+1 < len(fields) {
				fstype = fields[i+1]
			}
		}
		return fstype, true
	}
	return "", false
}

// unescapeMountinfo decodes the \ooo octal escapes of mountinfo paths.
func unescapeMountinfo(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+4 <= len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// fuseDevice is the device every FUSE mount needs.
const fuseDevice = "/dev/fuse"

// checkFUSE fails early, before any ssh prompt, when dev cannot be used:
// root opens it directly, other users through fusermount3, which opens it
// with their own permissions.
func checkFUSE(dev string) error {
	err := unix.Access(dev, unix.R_OK|unix.W_OK)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, unix.ENOENT):
		return config.Errorf(config.ExitMount, "%s is missing: load the fuse kernel module (modprobe fuse) or install fuse3", dev)
	case errors.Is(err, unix.EACCES), errors.Is(err, unix.EPERM):
		return config.Errorf(config.ExitMount, "%s is not readable and writable for you: it is usually crw-rw-rw- (chmod 666 %s as root), or mount as root", dev, dev)
	}
	return config.Errorf(config.ExitMount, "%s: %v", dev, err)
}
