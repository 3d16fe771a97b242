package main

import (
	"strconv"
	"time"

	"sshfsm/internal/cache"
	"sshfsm/internal/config"
	"sshfsm/internal/control"
	"sshfsm/internal/fusefs"
	"sshfsm/internal/inflight"
	"sshfsm/internal/transport"
)

// startStatus answers `sshfsm status` for m until stopStatus. Without a
// status socket the mount still works; the warning says why it is missing.
func (m *mounted) startStatus(cfg *config.Config) {
	srv, err := control.Listen(control.Options{
		Mountpoint: m.mountpoint,
		Program:    version,
		Provider:   m.statusProvider(cfg),
		Logger:     m.log,
	})
	if err != nil {
		m.log.Warn("sshfsm status will not see this mount", "err", err)
		return
	}
	m.status = srv
}

// stopStatus removes the status socket; it may be called more than once.
func (m *mounted) stopStatus() {
	if m.status != nil {
		m.status.Close()
	}
}

// statusBranch is one branch as the status reports it: what it is and the
// hosts serving it.
type statusBranch struct {
	kind, name string
	dir        string // as given; the resolved one once a host answered
	readOnly   bool
	reconnect  bool // whether a host that lost every channel tries again
	hosts      []*endpoint
}

// statusProvider returns the function the status server calls for each
// request. Everything fixed is computed once; the counters are read live.
func (m *mounted) statusProvider(cfg *config.Config) func() control.Status {
	opts := optionSummary(cfg)
	branches := make([]statusBranch, len(cfg.Branches))
	for i, b := range cfg.Branches {
		branches[i] = statusBranch{kind: branchKind(cfg, b), name: b.Dest(), dir: b.Dir,
			readOnly: b.ReadOnly || cfg.FUSE.ReadOnly, reconnect: cfg.SSH.Reconnect}
	}
	for _, e := range m.tree.endpoints {
		branches[e.branch].hosts = append(branches[e.branch].hosts, e)
	}
	return func() control.Status {
		st := control.Status{Mount: control.Mount{Options: opts, Log: m.logWhere()}, Cache: cacheStatus(m.dirs.Stats()),
			Meta: metaStatus(m.dirs.PersistStats(), time.Now()), Disk: m.diskStatus(cfg),
			Requests: requestStatus(m.requests)}
		for _, sb := range branches {
			st.Branches = append(st.Branches, sb.status())
		}
		return st
	}
}

// branchKind names what a branch is in the mount.
func branchKind(cfg *config.Config, b config.Branch) string {
	switch {
	case len(cfg.Branches) == 1 && len(b.Hosts) == 1:
		return control.KindSingle
	case b.Name != "":
		return control.KindGraft
	case len(cfg.Branches) == 1:
		return control.KindReplica
	}
	return control.KindUnion
}

func (sb statusBranch) status() control.Branch {
	b := control.Branch{Kind: sb.kind, Name: sb.name, Dir: sb.dir, ReadOnly: sb.readOnly}
	resolved := false
	for _, e := range sb.hosts {
		h := e.currentHost()
		if h == nil {
			detail := "unreachable: " + detailOf(e.lazy.LastError())
			if e.lazy.LastError() == nil {
				detail = "not connected yet: connects at the first access (delay_connect)"
			}
			b.Hosts = append(b.Hosts, control.Host{Name: e.hostName(), State: control.StateReconnecting, Detail: detail})
			continue
		}
		if !resolved {
			b.Dir, resolved = h.Root(), true
			if root := transport.RootOf(e.tree); root != "" {
				b.Dir = root
			}
		}
		b.Hosts = append(b.Hosts, hostStatus(e.hostName(), h.Stats(), sb.reconnect))
	}
	for i, e := range sb.hosts {
		b.Hosts[i].Watch, b.Hosts[i].WatchDetail = e.watchStatus()
	}
	return b
}

// hostStatus sums a host's channels into one line of the status.
func hostStatus(name string, s transport.Stats, reconnect bool) control.Host {
	h := control.Host{Name: name, Channels: len(s.Channels), Requests: s.Requests, WireIn: s.BytesIn, WireOut: s.BytesOut,
		OldestSeconds: s.Oldest.Seconds()}
	var rtt time.Duration
	timed := 0
	for _, c := range s.Channels {
		if c.Up {
			h.ChannelsUp++
		}
		h.InFlight += c.Outstanding
		h.BytesRead += c.BytesRead
		h.BytesWritten += c.BytesWritten
		h.Errors += c.Errors
		h.Reconnects += c.Reconnects
		if c.LastRTT > 0 {
			rtt += c.LastRTT
			timed++
		}
	}
	if timed > 0 {
		h.LatencyMillis = float64(rtt/time.Duration(timed)) / float64(time.Millisecond)
	}
	switch {
	case h.ChannelsUp > 0:
		h.State = control.StateUp
	case reconnect:
		h.State = control.StateReconnecting
	default:
		h.State = control.StateDown
	}
	return h
}

// requestStatus reports the FUSE requests in flight; nil without a table.
func requestStatus(t *inflight.Table) *control.Requests {
	if t == nil {
		return nil
	}
	o := t.Oldest()
	r := &control.Requests{InFlight: o.Count, OldestSeconds: o.Age.Seconds()}
	if o.Age > 0 {
		r.OldestKind = fusefs.RequestKind(o.Kind)
	}
	return r
}

func cacheStatus(s cache.Stats) control.Cache {
	return control.Cache{
		Enabled:       s.Enabled,
		ListingHits:   s.ListingHits,
		ListingMisses: s.ListingMisses,
		AttrHits:      s.AttrHits,
		AttrMisses:    s.AttrMisses,
		NegativeHits:  s.NegativeHits,
	}
}

// metaStatus reports the listings kept across mounts; nil when off.
func metaStatus(s cache.PersistStats, now time.Time) *control.Meta {
	if !s.Enabled {
		return nil
	}
	ago := func(t time.Time) float64 {
		if t.IsZero() {
			return -1
		}
		return now.Sub(t).Seconds()
	}
	return &control.Meta{Mode: s.Mode.String(), LoadedDirs: s.LoadedDirs, LoadedEntries: s.LoadedEntries,
		SnapshotAgeSeconds: ago(s.SnapshotTime), Revalidated: s.Revalidated, Changed: s.Changed,
		Pending: s.Pending, Check: s.Check, CheckChanged: s.CheckChanged, Dirs: s.Dirs, Entries: s.Entries, LastWriteSeconds: ago(s.LastWrite),
		WriteError: s.WriteError}
}

// diskStatus describes the disk cache of contents, nil when it is off.
func (m *mounted) diskStatus(cfg *config.Config) *control.Disk {
	if m.content == nil {
		return nil
	}
	s := m.content.Stats()
	dir, _ := cacheDir(cfg)
	return &control.Disk{Dir: dir, Bytes: s.Bytes, Entries: s.Entries,
		HitBytes: s.HitBytes, MissBytes: s.MissBytes, Evicted: s.EvictedBytes}
}

// optionSummary lists the settings that explain a mount's behaviour, as
// -o would write them.
func optionSummary(cfg *config.Config) []string {
	secs := func(d time.Duration) string { return strconv.FormatFloat(d.Seconds(), 'f', -1, 64) }
	o := []string{
		"max_conns=" + strconv.Itoa(cfg.SSH.MaxConns),
		"timeout=" + secs(cfg.SSH.Timeout),
	}
	if cfg.SSH.Reconnect {
		o = append(o, "reconnect")
	} else {
		o = append(o, "noreconnect")
	}
	if cfg.FUSE.ReadOnly {
		o = append(o, "ro")
	}
	if cfg.SSH.DirectPort != 0 {
		o = append(o, "directport="+strconv.Itoa(cfg.SSH.DirectPort))
	}
	o = append(o,
		"dcache_timeout="+secs(cfg.Cache.DirCacheTimeout),
		"attr_timeout="+secs(cfg.Cache.AttrTimeout),
		"prefetch_depth="+strconv.Itoa(cfg.Cache.PrefetchDepth))
	o = append(o, "cache="+cfg.Cache.Mode)
	if !cfg.Cache.Disk {
		o = append(o, "nodisk_cache")
	}
	if cfg.FUSE.KernelCache {
		o = append(o, "kernel_cache")
	}
	if cfg.FUSE.DirectIO {
		o = append(o, "direct_io")
	}
	if cfg.IDMap.Mode != "" && cfg.IDMap.Mode != config.IDMapNone {
		o = append(o, "idmap="+string(cfg.IDMap.Mode))
	}
	if cfg.Metrics.Network != "" {
		o = append(o, "metrics="+metricsOption(cfg.Metrics))
	}
	return o
}

// logWhere says where the daemon logs: syslog, a file, stderr.
func (m *mounted) logWhere() string {
	if s := m.logSink.Load(); s != nil {
		return s.Where()
	}
	return ""
}
