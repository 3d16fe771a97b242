package mountinfo

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// ConnectionsDir is where the kernel's fusectl file system lists the FUSE
// connections, one directory per connection named by the minor number of
// its device.
const ConnectionsDir = "/sys/fs/fuse/connections"

// AbortFUSE aborts the FUSE connection of the mount at point, as writing
// to its fusectl abort file does: every request waiting for an answer
// fails at once (ENOTCONN), and so does every later one, so no process
// can be left in uninterruptible sleep on a server that will not answer.
// The mount itself stays until it is unmounted. It mounts fusectl when
// that is not mounted yet (which needs root).
func AbortFUSE(point string) error {
	ms, err := All()
	if err != nil {
		return err
	}
	var dev string
	for _, m := range ms {
		if m.Point == point && strings.HasPrefix(m.FSType, "fuse") {
			dev = m.Dev // the last one stacked there is the one reached
		}
	}
	if dev == "" {
		return fmt.Errorf("abort FUSE connection: no FUSE mount at %s", point)
	}
	_, minor, ok := strings.Cut(dev, ":")
	if !ok {
		return fmt.Errorf("abort FUSE connection of %s: device %q", point, dev)
	}
	abort := filepath.Join(ConnectionsDir, minor, "abort")
	if _, err := os.Stat(abort); errors.Is(err, os.ErrNotExist) {
		if err := mountFusectl(); err != nil {
			return fmt.Errorf("abort FUSE connection of %s: %w", point, err)
		}
	}
	if err := os.WriteFile(abort, []byte("1"), 0); err != nil {
		return fmt.Errorf("abort FUSE connection of %s: %w", point, err)
	}
	return nil
}

// mountFusectl mounts the fusectl file system on ConnectionsDir unless
// something is mounted there already.
func mountFusectl() error {
	ms, err := All()
	if err != nil {
		return err
	}
	for _, m := range ms {
		if m.Point == ConnectionsDir {
			return nil
		}
	}
	if err := syscall.Mount("fusectl", ConnectionsDir, "fusectl", 0, ""); err != nil {
		return fmt.Errorf("mount fusectl on %s: %w", ConnectionsDir, err)
	}
	return nil
}
