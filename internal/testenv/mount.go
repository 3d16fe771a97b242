package testenv

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sshfsm/internal/mountinfo"
	"strings"
	"time"
)

// FSType is the filesystem type sshfsm mounts appear with in mountinfo.
const FSType = "fuse.sshfsm"

// Mount is one line of /proc/self/mountinfo.
type Mount = mountinfo.Mount

// Mounts lists the mounts this process sees.
func Mounts() ([]Mount, error) { return mountinfo.All() }

// resolve makes mnt absolute and resolves symlinks in its parent, without
// touching mnt itself (a dead FUSE mount fails every stat).
func resolve(mnt string) string {
	abs, err := filepath.Abs(mnt)
	if err != nil {
		return filepath.Clean(mnt)
	}
	if parent, err := filepath.EvalSymlinks(filepath.Dir(abs)); err == nil {
		return filepath.Join(parent, filepath.Base(abs))
	}
	return abs
}

// MountedAt reports whether something is mounted at mnt.
func MountedAt(mnt string) bool {
	mnt = resolve(mnt)
	ms, _ := Mounts()
	for _, m := range ms {
		if m.Point == mnt {
			return true
		}
	}
	return false
}

// WaitMounted polls until something is mounted at mnt or d has passed.
func WaitMounted(mnt string, d time.Duration) error {
	deadline := time.Now().Add(d)
	for !MountedAt(mnt) {
		if time.Now().After(deadline) {
			return fmt.Errorf("testenv: nothing mounted at %s after %v", mnt, d)
		}
		time.Sleep(10 * time.Millisecond)
	}
	return nil
}

// Unmount unmounts every mount stacked at mnt: first normally; when that
// fails (a busy, dead or stalled mount) it aborts the FUSE connection
// (AbortFUSE), so that no process stays in uninterruptible sleep on it,
// then unmounts lazily (fusermount3 -uz). It is not an error when nothing
// is mounted there.
func Unmount(mnt string) error {
	mnt = resolve(mnt)
	var errs []error
	for range 8 {
		if !MountedAt(mnt) {
			return nil
		}
		err := unmountOnce(mnt, false)
		if err != nil && MountedAt(mnt) {
			errs = append(errs, err)
			if err := AbortFUSE(mnt); err != nil {
				errs = append(errs, err)
			}
			if err := unmountOnce(mnt, true); err != nil {
				errs = append(errs, err)
			}
		}
	}
	if MountedAt(mnt) {
		return fmt.Errorf("testenv: %s is still mounted: %w", mnt, errors.Join(errs...))
	}
	return nil
}

func unmountOnce(mnt string, lazy bool) error {
	var cmd *exec.Cmd
	if _, err := exec.LookPath("fusermount3"); err == nil {
		flag := "-u"
		if lazy {
			flag = "-uz"
		}
		cmd = exec.Command("fusermount3", flag, mnt)
	} else if os.Geteuid() == 0 {
		flag := "--"
		if lazy {
			flag = "-l"
		}
		cmd = exec.Command("umount", flag, mnt)
	} else {
		return errors.New("testenv: fusermount3 not found: install fuse3")
	}
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("%s: %v: %s", strings.Join(cmd.Args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}

// AbortFUSE aborts the FUSE connection of the mount at mnt (see
// mountinfo.AbortFUSE): every process waiting on it gets an error at once.
// Call it before anything that could wait on a dead or stalled mount.
func AbortFUSE(mnt string) error { return mountinfo.AbortFUSE(resolve(mnt)) }
