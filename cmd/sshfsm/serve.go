package main

import (
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"sshfsm/internal/fusefs"
	"sshfsm/internal/mountinfo"
)

// notifySignals returns the signals that end a mount: SIGINT and SIGTERM,
// and SIGHUP in the foreground (the terminal went away).
func notifySignals(foreground bool) <-chan os.Signal {
	sigs := make(chan os.Signal, 1)
	list := []os.Signal{syscall.SIGINT, syscall.SIGTERM}
	if foreground {
		list = append(list, syscall.SIGHUP)
	}
	signal.Notify(sigs, list...)
	return sigs
}

// serve runs until the filesystem is unmounted from outside, its
// connection aborted or a signal arrives, then unmounts and closes the
// connections.
//
// The time allowed to exit counts from the end of the FUSE connection,
// not from the end of the requests being served: once the kernel has
// ended it, it has answered every caller itself, and a request still
// waiting here (an fsync for writes on a stalled link) answers nobody,
// yet could keep the daemon for its whole timeout.
func (m *mounted) serve(sigs <-chan os.Signal) {
	m.tree.startWatch() // now that the mount answers: its first listings come first
	done := make(chan struct{})
	go func() {
		m.server.Wait()
		close(done)
	}()
	sig := m.early
	if sig == nil {
		select {
		case <-done:
		case <-m.ended:
		case sig = <-sigs:
		}
	}
	// However the mount ends, closing the connections is bounded too.
	defer m.exitBy(shutdownLimit, sigs).Stop()
	if sig == nil {
		m.log.Info("unmounted or aborted", "mountpoint", m.mountpoint)
		m.detach()
		// Writes still in flight may yet land: the requests waiting for
		// them get part of the time; closing the connections ends them.
		select {
		case <-done:
		case <-time.After(shutdownLimit / 2):
			m.log.Warn("requests still in flight after the FUSE connection ended; closing", "mountpoint", m.mountpoint)
		}
	} else {
		m.log.Info("unmounting", "mountpoint", m.mountpoint, "signal", sig.String())
		if lazy := m.unmount(); lazy {
			// The kernel keeps a lazily unmounted filesystem until its last
			// user lets go; exiting ends it at once (ENOTCONN for them).
			select {
			case <-done:
			case <-time.After(time.Second):
			}
		}
	}
	m.stopStatus()
	m.stopMetrics()
	m.close()
}

// detach lazily unmounts the mount if its connection was aborted from
// outside and it is still mounted, dead, as libfuse's daemons do when
// they exit.
func (m *mounted) detach() {
	if !m.mountedHere() || !isDead(m.mountpoint) {
		return
	}
	m.log.Info("detaching the aborted mount", "mountpoint", m.mountpoint)
	if err := detachLazily(m.mountpoint); err != nil {
		m.log.Warn("lazy unmount failed", "mountpoint", m.mountpoint, "err", err)
	}
}

// close writes the snapshot of listings, ends the connections and closes
// the disk cache, once the mount has stopped serving; it must be done
// before the process exits.
func (m *mounted) close() {
	m.dirs.Close()
	m.tree.Close()
	closeContent(m.content, m.log)
}

// unmount detaches the filesystem; when it is busy, it falls back to a lazy
// unmount and reports so.
func (m *mounted) unmount() (lazy bool) {
	m.stopStatus()
	m.stopMetrics()
	err := fusefs.Unmount(m.server, m.mountpoint, m.autoUnmount)
	if err == nil {
		return false
	}
	m.log.Warn("unmount failed; aborting the FUSE connection and unmounting lazily", "mountpoint", m.mountpoint, "err", err)
	m.abort()
	if err := detachLazily(m.mountpoint); err != nil {
		m.log.Error("lazy unmount failed", "mountpoint", m.mountpoint, "err", err)
	}
	return true
}

// detachLazily unmounts point lazily: at once for new users, for good
// once the last one lets go.
func detachLazily(point string) error {
	if os.Geteuid() == 0 {
		return syscall.Unmount(point, syscall.MNT_DETACH)
	}
	return exec.Command("fusermount3", "-u", "-z", point).Run()
}

// shutdownLimit is how long a stop signal may take to end the daemon,
// whatever requests are in flight: past it the FUSE connection is aborted
// and the process exits.
const shutdownLimit = 4 * time.Second

// exitBy ends the process once limit has passed, or at a stop signal
// after the first, after aborting the FUSE connection if it is still
// mounted: a request the kernel waits for (a stalled server, a page
// fault on a mapped file) or a connection that does not close must not
// keep the daemon, nor the processes waiting on the mount, for longer.
func (m *mounted) exitBy(limit time.Duration, sigs <-chan os.Signal) *time.Timer {
	t := time.AfterFunc(limit, func() {
		m.log.Error("shutdown did not finish in time; aborting the FUSE connection", "mountpoint", m.mountpoint, "limit", limit)
		m.abortAndExit()
	})
	go func() {
		if sig, ok := <-sigs; ok {
			m.log.Error("second stop signal; aborting the FUSE connection", "mountpoint", m.mountpoint, "signal", sig.String())
			m.abortAndExit()
		}
	}()
	return t
}

func (m *mounted) abortAndExit() {
	if m.connEnded() {
		m.detach()
	} else {
		m.abort()
		if m.mountedHere() {
			detachLazily(m.mountpoint)
		}
	}
	os.Exit(1)
}

// connEnded reports whether the kernel is known to have ended the mount's
// FUSE connection: then there is nothing left to abort, and what is
// mounted at the mountpoint is either this mount, dead, or another one.
func (m *mounted) connEnded() bool {
	select {
	case <-m.ended:
		return true
	default:
		return false
	}
}

// abort aborts the mount's FUSE connection through fusectl: every request
// waiting for an answer fails with ENOTCONN at once. Only root may.
func (m *mounted) abort() {
	if os.Geteuid() != 0 || m.connEnded() || !m.mountedHere() {
		return
	}
	if err := mountinfo.AbortFUSE(m.mountpoint); err != nil {
		m.log.Warn("aborting the FUSE connection failed", "mountpoint", m.mountpoint, "err", err)
	}
}

// mountedHere reports whether a FUSE mount of this mount's device (of
// any device when it is not known) is mounted at its mountpoint. Once
// this one is unmounted from outside, the mountpoint may hold another
// mount, a new sshfsm of the same tree perhaps, which must be left alone;
// the kernel may give it the same device number, so after the connection
// ended only a dead mount is taken for this one (detach).
func (m *mounted) mountedHere() bool {
	mt, ok := mountinfo.At(m.mountpoint)
	if !ok || !strings.HasPrefix(mt.FSType, "fuse") {
		return false
	}
	return m.dev == "" || mt.Dev == m.dev
}
