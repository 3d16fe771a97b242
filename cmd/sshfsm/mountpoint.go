package main

import (
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"sshfsm/internal/config"
	"sshfsm/internal/mountinfo"
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
	case errors.Is(err, syscall.ENOTCONN), caughtByEnd(err) && isDead(abs):
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
	if m, ok := mountinfo.At(real); ok {
		fstype := m.FSType
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
	for range 2 {
		err := listWithin(dir, time.Second)
		if !caughtByEnd(err) {
			return errors.Is(err, syscall.ENOTCONN)
		}
	}
	return false
}

// caughtByEnd reports an error of the first call to reach a FUSE mount
// whose server has just died: the kernel fails that request with
// ECONNABORTED, or EIO, and the next with ENOTCONN.
func caughtByEnd(err error) bool {
	return errors.Is(err, syscall.ECONNABORTED) || errors.Is(err, syscall.EIO)
}

// listWithin opens dir and reads a name of it; a call still blocked
// after d is left behind and reported as nil.
func listWithin(dir string, d time.Duration) error {
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
		return err
	case <-time.After(d):
		return nil
	}
}

func unwrapPath(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
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

// fuseConf is where fusermount3 reads whether ordinary users may use
// allow_other and allow_root.
const fuseConf = "/etc/fuse.conf"

// checkAllowOther fails early, with one line, when an ordinary user asks
// for allow_other or allow_root and conf does not permit it: fusermount3
// would refuse later, with a message of its own and after ssh connected.
func checkAllowOther(cfg *config.Config, euid int, conf string) error {
	if euid == 0 || (!cfg.FUSE.AllowOther && !cfg.FUSE.AllowRoot) {
		return nil
	}
	opt := "allow_other"
	if cfg.FUSE.AllowRoot {
		opt = "allow_root"
	}
	b, err := os.ReadFile(conf)
	if err == nil {
		for line := range strings.SplitSeq(string(b), "\n") {
			if strings.TrimSpace(line) == "user_allow_other" {
				return nil
			}
		}
	}
	return config.Errorf(config.ExitMount, "%s needs user_allow_other in %s for users other than root (ask the administrator), or mount as root", opt, conf)
}

// warnPermissions warns about allow_other with nodefault_permissions: the
// kernel then lets every local user do whatever the remote user may.
func warnPermissions(cfg *config.Config, log *slog.Logger) {
	if cfg.FUSE.AllowOther && !cfg.FUSE.DefaultPermissions {
		log.Warn("allow_other with nodefault_permissions: every local user can read and change files " +
			"as the remote user, whatever their modes show")
	}
}
