package control

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"

	"sshfsm/internal/privdir"
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
// that it is private and that no one else could swap it or a directory
// above it: the sweep removes files in it (privdir.Make).
func makePrivateDir(dir string) error { return privdir.Make(dir, privdir.Private) }

// checkPrivateDir refuses a directory that someone else could have
// planted, could read, or could swap with a directory above it
// (privdir.CheckPath).
func checkPrivateDir(dir string) error { return privdir.CheckPath(dir, privdir.Private) }

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
