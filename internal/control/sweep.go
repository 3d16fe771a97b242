package control

import (
	"os"
	"path/filepath"

	"sshfsm/internal/privdir"
)

// sweep removes what daemons that are gone (killed, crashed) left in dir:
// each socket that refuses connections and whose sidecar names a process
// that no longer runs, with its sidecar, then sidecars without a socket.
// A socket without a sidecar may be one a daemon is creating right now (it
// writes the sidecar once listening), so it is left alone; so is anything
// that is not a socket of ours (privdir.StaleSocket follows no link).
func sweep(dir string) {
	socks, _ := filepath.Glob(filepath.Join(dir, "*.sock"))
	for _, sock := range socks {
		sc, ok := readSidecar(sock)
		// A dead daemon whose mount remains keeps its socket: sshfsm
		// status reports that mount until it is unmounted.
		if !ok || !privdir.Gone(sc.PID) || mountedHere(sc.Mountpoint) {
			continue
		}
		if fi, stale := privdir.StaleSocket(sock); stale && privdir.RemoveIfSame(sock, fi) {
			os.Remove(sidecarPath(sock))
		}
	}
	removeOrphans(dir)
}
