package control

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
)

// RuntimeDir is the directory holding the calling user's status sockets:
// $XDG_RUNTIME_DIR/sshfsm when XDG_RUNTIME_DIR is set, /tmp/sshfsm-UID
// otherwise. Daemon and client agree as long as they see the same
// XDG_RUNTIME_DIR.
func RuntimeDir() string {
	return runtimeDir(os.Getenv("XDG_RUNTIME_DIR"), os.Getuid())
}

func runtimeDir(xdg string, uid int) string {
	if xdg != "" && filepath.IsAbs(xdg) {
		return filepath.Join(xdg, "sshfsm")
	}
	return filepath.Join("/tmp", "sshfsm-"+strconv.Itoa(uid))
}

// makePrivateDir creates dir (mode 0700) unless it exists, then checks
// that it is private.
func makePrivateDir(dir string) error {
	err := os.Mkdir(dir, 0o700)
	switch {
	case err == nil:
		// The umask may have taken the owner's bits away.
		if err := os.Chmod(dir, 0o700); err != nil {
			return err
		}
	case !errors.Is(err, os.ErrExist):
		return err
	}
	return checkPrivateDir(dir)
}

// checkPrivateDir refuses a directory that someone else could have planted
// or could read: it must be a real directory (not a symbolic link), owned
// by the calling user, with no permissions for group or others.
func checkPrivateDir(dir string) error {
	fi, err := os.Lstat(dir)
	if err != nil {
		return err
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	switch {
	case !fi.IsDir():
		return fmt.Errorf("%s is not a directory (%v); remove it", dir, fi.Mode().Type())
	case !ok:
		return fmt.Errorf("%s: no owner information", dir)
	case int(st.Uid) != os.Getuid():
		return fmt.Errorf("%s is owned by uid %d, not by you (uid %d); remove it", dir, st.Uid, os.Getuid())
	case fi.Mode().Perm()&0o077 != 0:
		return fmt.Errorf("%s has mode %04o, not private; chmod 700 %s", dir, fi.Mode().Perm(), dir)
	}
	return nil
}

// socketName is the file name of the socket serving mountpoint: a hash,
// because a mountpoint may be longer than a socket path may be.
func socketName(mountpoint string) string {
	sum := sha256.Sum256([]byte(mountpoint))
	return hex.EncodeToString(sum[:12]) + ".sock"
}

// sidecar describes a socket, so that a client can name the mount of a
// daemon that does not answer.
type sidecar struct {
	Mountpoint string `json:"mountpoint"`
	PID        int    `json:"pid"`
}

// sidecarPath is the sidecar file of socket path sock.
func sidecarPath(sock string) string {
	return sock[:len(sock)-len(".sock")] + ".json"
}

// writeSidecar writes the sidecar of sock atomically, readable by the owner
// only.
func writeSidecar(sock string, sc sidecar) error {
	b, err := json.Marshal(sc)
	if err != nil {
		return err
	}
	tmp := sidecarPath(sock) + ".tmp"
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return err
	}
	if err := os.Rename(tmp, sidecarPath(sock)); err != nil {
		os.Remove(tmp)
		return err
	}
	return nil
}

// readSidecar reads the sidecar of sock; ok is false when it is missing or
// unreadable.
func readSidecar(sock string) (sc sidecar, ok bool) {
	b, err := os.ReadFile(sidecarPath(sock))
	if err != nil || json.Unmarshal(b, &sc) != nil {
		return sidecar{}, false
	}
	return sc, true
}
