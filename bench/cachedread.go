package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"path/filepath"

	"sshfsm/internal/control"
)

// The cached read workloads (group "cache"): a sequential buffered read
// of a c.seqMiB MiB file (1 GiB by default) that sshfsm holds whole in
// its disk cache, against the same read from local disk. sshfsm reads it
// once through the latency proxy, is unmounted and mounted again; then
// each timed read starts with the page cache dropped, so both sides read
// from the disk. With cache=immutable a daemon running as root hands the
// cache's file to the kernel (FUSE passthrough); with the default
// cache=auto the daemon answers every READ from the same file. sshfs,
// which keeps nothing across mounts, reads through the proxy.
const cachedFile = "cached.dat" // below fioDir

var (
	wCachedReadPT   = &workload{id: "cached-read-passthrough", title: "fully cached file, seq read 1M buffered (sshfsm: cache=immutable, passthrough)", unit: "MiB/s", higher: true, target: &target{ref: localKey, limit: 0.5}}
	wCachedReadAuto = &workload{id: "cached-read-auto", title: "fully cached file, seq read 1M buffered (sshfsm: cache=auto, through the daemon)", unit: "MiB/s", higher: true}
)

// runCachedRead measures every tool on the cached file.
func runCachedRead(ctx context.Context, e *env, r *results) error {
	read := fioJob{rw: "read", bs: "1m", depth: 1, file: cachedFile, mib: e.c.seqMiB, buffered: true}
	for _, t := range e.toolsFor(true) {
		if t.key != sshfsmKey {
			read.w = wCachedReadPT // the reference row of both sshfsm modes
			if err := cachedReads(ctx, e, r, t, read, false); err != nil {
				r.fail(t, read.w.id, err)
			}
			continue
		}
		for _, mode := range []struct {
			opt string
			w   *workload
		}{{"cache=immutable", wCachedReadPT}, {"cache=auto", wCachedReadAuto}} {
			read.w = mode.w
			if err := cachedReads(ctx, e, r, sshfsmWith(t, mode.opt), read, true); err != nil {
				r.fail(t, read.w.id, err)
			}
		}
	}
	return nil
}

// cachedReads times read c.rttRepeats times in one mount of t, each
// after dropping the page cache. With fill, a mount before reads the file
// whole first, and afterwards the daemon's status tells how much of the
// timed reads it served itself.
func cachedReads(ctx context.Context, e *env, r *results, t *tool, read fioJob, fill bool) error {
	dropCaches()
	if fill {
		if _, err := e.cacheSession(ctx, t, fioDir, "cat "+cachedFile+" > /dev/null"); err != nil {
			return err
		}
	}
	m, err := doMount(ctx, t, e.cfg, e.rttAlias, e.host.Dir, e.mnt(t))
	if err != nil {
		return err
	}
	defer unmount(m)
	at := m.path
	if t.local {
		at = e.host.Dir
	}
	for rep := 1; rep <= e.c.rttRepeats; rep++ {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		dropPageCache()
		v, err := runFioJob(ctx, at, read, e.c.runtime)
		if err != nil {
			return err
		}
		r.add(read.w, t, v)
		logf("%-13s %-24s %8.1f MiB/s", t.key, read.w.id, v)
	}
	if fill {
		served, err := daemonServed(ctx, t, m)
		if err != nil {
			return err
		}
		how := "the daemon answered READs"
		if served.disk == 0 && served.remote == 0 {
			how = "passthrough: the kernel read the cache's file directly"
		}
		e.note("%s: of the timed reads of the cached file, the daemon served %d bytes from its disk cache and %d from the server (%s)",
			read.w.id, served.disk, served.remote, how)
	}
	return unmount(m)
}

// served is what a daemon answered READs with.
type served struct{ disk, remote int64 }

// daemonServed asks the sshfsm daemon of m what it served since it
// started, through `sshfsm status --json`.
func daemonServed(ctx context.Context, t *tool, m *mount) (served, error) {
	bin := t.argv("", "", "", "")[0]
	out, err := exec.CommandContext(ctx, bin, "status", "--json", m.path).Output()
	if err != nil {
		return served{}, fmt.Errorf("%s status --json %s: %w", filepath.Base(bin), m.path, err)
	}
	var st control.Status
	if err := json.Unmarshal(out, &st); err != nil {
		return served{}, fmt.Errorf("status --json %s: %w", m.path, err)
	}
	var s served
	if st.Disk != nil {
		s.disk = st.Disk.HitBytes
	}
	for _, b := range st.Branches {
		for _, h := range b.Hosts {
			s.remote += int64(h.BytesRead)
		}
	}
	return s, nil
}
