package main

import (
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"slices"
	"strconv"

	"sshfsm/internal/config"
	"sshfsm/internal/metrics"
	"sshfsm/internal/transport"
)

// listenMetrics binds metrics= before anything is mounted, so that an
// address that cannot be bound fails the mount at once; nil when the
// option is not given. A listener others may reach is warned about on w.
func listenMetrics(cfg *config.Config, w io.Writer) (*metrics.Server, error) {
	if cfg.Metrics.Network == "" {
		return nil, nil
	}
	s, err := metrics.Listen(cfg.Metrics.Network, cfg.Metrics.Address)
	if err != nil {
		var oe *net.OpError
		if errors.As(err, &oe) {
			err = oe.Err
		}
		return nil, config.Errorf(config.ExitMount, "metrics=%s: cannot listen there: %v", metricsOption(cfg.Metrics), err)
	}
	if s.Public() {
		fmt.Fprintf(w, "sshfsm: warning: metrics=%s listens on %s, beyond loopback: anyone who can reach it reads the metrics (host names, mountpoint, traffic)\n",
			printable(metricsOption(cfg.Metrics)), printable(s.Describe()))
	}
	return s, nil
}

// metricsOption is the option's value as the user wrote it (the socket
// path made absolute).
func metricsOption(m config.Metrics) string {
	if m.Network == "unix" {
		return "unix:" + m.Address
	}
	return m.Address
}

// startMetrics answers scrapes from now on (the mount answers); the
// listener was bound before mounting.
func (m *mounted) startMetrics(cfg *config.Config) {
	if m.metrics == nil {
		return
	}
	g := m.newGatherer(cfg)
	m.metrics.Serve(g.families, m.log)
	m.log.Info("serving metrics", "at", m.metrics.Describe())
}

// stopMetrics closes the listener; it may be called more than once.
func (m *mounted) stopMetrics() {
	if m.metrics != nil {
		m.metrics.Close()
	}
}

// metricHost is one endpoint as the metrics name it.
type metricHost struct {
	e      *endpoint
	branch metrics.Label // the branch as written, as sshfsm status names it
	host   metrics.Label // [user@]host, #N added when another connection has the name
	// first: the endpoint reports its connection's counters. Branches on
	// one host reached the same way share a connection, counted once.
	first bool
}

// gatherer reads the counters of a mount at each scrape; it counts
// nothing itself.
type gatherer struct {
	m         *mounted
	cfg       *config.Config
	hosts     []metricHost
	reconnect bool
}

func (m *mounted) newGatherer(cfg *config.Config) *gatherer {
	g := &gatherer{m: m, cfg: cfg, reconnect: cfg.SSH.Reconnect}
	conns := map[*transport.Host]string{} // shared connection → its label
	used := map[string]int{}
	for _, e := range m.tree.endpoints {
		mh := metricHost{e: e, branch: metrics.Label{Name: "branch", Value: cfg.Branches[e.branch].Dest()}, first: true}
		name, shared := conns[e.host]
		if e.host != nil && shared {
			mh.first = false
		} else {
			name = e.hostName()
			if used[name]++; used[name] > 1 {
				name += "#" + strconv.Itoa(used[name])
			}
			if e.host != nil {
				conns[e.host] = name
			}
		}
		mh.host = metrics.Label{Name: "host", Value: name}
		g.hosts = append(g.hosts, mh)
	}
	return g
}

// families is the page of one scrape.
func (g *gatherer) families() []metrics.Family {
	fams := []metrics.Family{g.info()}
	fams = append(fams, g.hostFamilies()...)
	fams = append(fams, g.replicaFamilies()...)
	fams = append(fams, g.requestFamilies()...)
	fams = append(fams, g.cacheFamilies()...)
	return fams
}

func (g *gatherer) info() metrics.Family {
	f := metrics.Family{Name: "sshfsm_info", Type: metrics.Gauge, Help: "Always 1: the sshfsm version and the mountpoint it serves."}
	f.Add(1, metrics.Label{Name: "version", Value: version}, metrics.Label{Name: "mountpoint", Value: g.m.mountpoint})
	return f
}

// hostFamilies describe each connection to a host: its channels, the
// SFTP requests and their durations, data and errors. The counters are
// those sshfsm status shows.
func (g *gatherer) hostFamilies() []metrics.Family {
	fam := func(name string, t metrics.Type, help string) *metrics.Family {
		return &metrics.Family{Name: name, Type: t, Help: help}
	}
	up := fam("sshfsm_host_up", metrics.Gauge, "1 while at least one channel to the host is live, 0 while it is unreachable.")
	branchHost := fam("sshfsm_branch_host", metrics.Gauge, "Always 1: the host (label host of the other metrics) serves the branch.")
	channels := fam("sshfsm_host_channels", metrics.Gauge, "SSH channels (SFTP sessions) the host may use (max_conns).")
	channelsUp := fam("sshfsm_host_channels_up", metrics.Gauge, "SSH channels to the host that are live.")
	requests := fam("sshfsm_sftp_requests_total", metrics.Counter, "SFTP requests sent to the host, by type (READ, WRITE, LSTAT, ..., extensions by name).")
	latency := fam("sshfsm_sftp_request_duration_seconds", metrics.Histogram, "Time from sending an SFTP request to its answer (or its failure).")
	inFlight := fam("sshfsm_sftp_requests_in_flight", metrics.Gauge, "SFTP requests sent to the host and not yet answered.")
	oldest := fam("sshfsm_sftp_oldest_request_seconds", metrics.Gauge, "How long the oldest SFTP request in flight has waited; 0 when none is. Far past the timeout option means stuck.")
	errs := fam("sshfsm_sftp_errors_total", metrics.Counter, "SFTP requests that failed for transport reasons (connection lost, timeout), not the server's answers such as no such file.")
	reconnects := fam("sshfsm_host_reconnects_total", metrics.Counter, "Channels to the host opened again after they were lost.")
	read := fam("sshfsm_read_bytes_total", metrics.Counter, "File data read from the host.")
	written := fam("sshfsm_written_bytes_total", metrics.Counter, "File data written to the host and acknowledged by it.")
	wireIn := fam("sshfsm_wire_received_bytes_total", metrics.Counter, "Bytes received from the host, SFTP framing included.")
	wireOut := fam("sshfsm_wire_sent_bytes_total", metrics.Counter, "Bytes sent to the host, SFTP framing included.")
	for _, mh := range g.hosts {
		branchHost.Add(1, mh.branch, mh.host)
		if !mh.first {
			continue
		}
		h := mh.e.currentHost()
		if h == nil {
			up.Add(0, mh.host)
			continue
		}
		s := h.Stats()
		st := hostStatus(mh.host.Value, s, g.reconnect)
		up.Add(boolValue(st.ChannelsUp > 0), mh.host)
		channels.Add(float64(st.Channels), mh.host)
		channelsUp.Add(float64(st.ChannelsUp), mh.host)
		for _, typ := range slices.Sorted(maps.Keys(st.Requests)) {
			requests.Add(float64(st.Requests[typ]), mh.host, metrics.Label{Name: "type", Value: typ})
		}
		latency.AddHistogram(s.Latency, mh.host)
		inFlight.Add(float64(st.InFlight), mh.host)
		oldest.Add(st.OldestSeconds, mh.host)
		errs.Add(float64(st.Errors), mh.host)
		reconnects.Add(float64(st.Reconnects), mh.host)
		read.Add(float64(st.BytesRead), mh.host)
		written.Add(float64(st.BytesWritten), mh.host)
		wireIn.Add(float64(st.WireIn), mh.host)
		wireOut.Add(float64(st.WireOut), mh.host)
	}
	return deref(up, branchHost, channels, channelsUp, requests, latency, inFlight, oldest, errs, reconnects, read, written, wireIn, wireOut)
}

// replicaFamilies describe the members of replica sets: whether each is
// in service and how often it was taken out and came back.
func (g *gatherer) replicaFamilies() []metrics.Family {
	if len(g.m.tree.sets) == 0 {
		return nil
	}
	inService := metrics.Family{Name: "sshfsm_replica_member_up", Type: metrics.Gauge,
		Help: "1 while the host serves its replica set, 0 while the set has taken it out."}
	failovers := metrics.Family{Name: "sshfsm_replica_failovers_total", Type: metrics.Counter,
		Help: "Times the replica set took the host out after a connection-level failure."}
	rejoins := metrics.Family{Name: "sshfsm_replica_rejoins_total", Type: metrics.Counter,
		Help: "Times the host came back into its replica set."}
	for b, set := range g.m.tree.sets {
		var members []metricHost
		for _, mh := range g.hosts {
			if mh.e.branch == b {
				members = append(members, mh)
			}
		}
		for i, ms := range set.Stats() {
			if i >= len(members) {
				break
			}
			l := []metrics.Label{members[i].branch, members[i].host}
			inService.Add(boolValue(ms.Up), l...)
			failovers.Add(float64(ms.Failovers), l...)
			rejoins.Add(float64(ms.Rejoins), l...)
		}
	}
	return []metrics.Family{inService, failovers, rejoins}
}

// requestFamilies describe the requests of the kernel, for the programs
// using the mount: how many wait and for how long, and their durations.
func (g *gatherer) requestFamilies() []metrics.Family {
	inFlight := metrics.Family{Name: "sshfsm_fuse_requests_in_flight", Type: metrics.Gauge,
		Help: "File system requests of the kernel being answered."}
	oldest := metrics.Family{Name: "sshfsm_fuse_oldest_request_seconds", Type: metrics.Gauge,
		Help: "How long the oldest file system request being answered has waited; 0 when none is."}
	if r := requestStatus(g.m.requests); r != nil {
		inFlight.Add(float64(r.InFlight))
		oldest.Add(r.OldestSeconds)
	}
	latency := metrics.Family{Name: "sshfsm_fuse_request_duration_seconds", Type: metrics.Histogram,
		Help: "Time to answer a file system request of the kernel, by FUSE operation; operations never asked are left out."}
	if g.m.latency != nil {
		g.m.latency.Each(func(op string, b metrics.Buckets) {
			if b.Count > 0 {
				latency.AddHistogram(b, metrics.Label{Name: "op", Value: op})
			}
		})
	}
	return []metrics.Family{inFlight, oldest, latency}
}

// cacheFamilies describe the listing cache and the disk cache.
func (g *gatherer) cacheFamilies() []metrics.Family {
	c := cacheStatus(g.m.dirs.Stats())
	kind := func(k string) metrics.Label { return metrics.Label{Name: "cache", Value: k} }
	hits := metrics.Family{Name: "sshfsm_cache_hits_total", Type: metrics.Counter,
		Help: "Questions answered from kept listings: cache=listing (lookups and directory reads), attr (one name's attributes), negative (no such file)."}
	misses := metrics.Family{Name: "sshfsm_cache_misses_total", Type: metrics.Counter,
		Help: "Questions the kept listings could not answer, which went to a server: cache=listing, attr."}
	hits.Add(float64(c.ListingHits), kind("listing"))
	hits.Add(float64(c.AttrHits), kind("attr"))
	hits.Add(float64(c.NegativeHits), kind("negative"))
	misses.Add(float64(c.ListingMisses), kind("listing"))
	misses.Add(float64(c.AttrMisses), kind("attr"))
	fams := []metrics.Family{hits, misses}
	d := g.m.diskStatus(g.cfg)
	if d == nil {
		return fams
	}
	one := func(name string, t metrics.Type, help string, v int64) metrics.Family {
		f := metrics.Family{Name: name, Type: t, Help: help}
		f.Add(float64(v))
		return f
	}
	return append(fams,
		one("sshfsm_disk_cache_bytes", metrics.Gauge, "Bytes the disk cache of file contents holds, shared by the mounts using its directory.", d.Bytes),
		one("sshfsm_disk_cache_files", metrics.Gauge, "File versions the disk cache holds.", d.Entries),
		one("sshfsm_disk_cache_hit_bytes_total", metrics.Counter, "File data this mount read from the disk cache.", d.HitBytes),
		one("sshfsm_disk_cache_miss_bytes_total", metrics.Counter, "File data this mount asked of the disk cache and read from a server.", d.MissBytes),
		one("sshfsm_disk_cache_evicted_bytes_total", metrics.Counter, "Bytes removed from the disk cache to keep within its size.", d.Evicted))
}

func boolValue(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

func deref(fs ...*metrics.Family) []metrics.Family {
	out := make([]metrics.Family, len(fs))
	for i, f := range fs {
		out[i] = *f
	}
	return out
}
