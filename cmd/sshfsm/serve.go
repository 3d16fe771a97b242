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

// serve runs until the filesystem is unmounted from outside or a signal
// arrives, then unmounts and closes the connection.
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
		case sig = <-sigs:
		}
	}
	// However the mount ends, closing the connections is bounded too.
	defer m.exitBy(shutdownLimit, sigs).Stop()
	if sig == nil {
		m.log.Info("unmounted", "mountpoint", m.mountpoint)
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
	if os.Geteuid() == 0 {
		err = syscall.Unmount(m.mountpoint, syscall.MNT_DETACH)
	} else {
		err = exec.Command("fusermount3", "-u", "-z", m.mountpoint).Run()
	}
	if err != nil {
		m.log.Error("lazy unmount failed", "mountpoint", m.mountpoint, "err", err)
	}
	return true
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
	m.abort()
	if os.Geteuid() == 0 {
		syscall.Unmount(m.mountpoint, syscall.MNT_DETACH)
	} else {
		exec.Command("fusermount3", "-u", "-z", m.mountpoint).Run()
	}
	os.Exit(1)
}

// abort aborts the mount's FUSE connection through fusectl: every request
// waiting for an answer fails with ENOTCONN at once. Only root may.
func (m *mounted) abort() {
	if os.Geteuid() != 0 || !fuseMountedAt(m.mountpoint) {
		return
	}
	if err := mountinfo.AbortFUSE(m.mountpoint); err != nil {
		m.log.Warn("aborting the FUSE connection failed", "mountpoint", m.mountpoint, "err", err)
	}
}

// fuseMountedAt reports whether a FUSE file system is mounted at point.
func fuseMountedAt(point string) bool {
	ms, _ := mountinfo.All()
	for _, mt := range ms {
		if mt.Point == point && strings.HasPrefix(mt.FSType, "fuse") {
			return true
		}
	}
	return false
}
