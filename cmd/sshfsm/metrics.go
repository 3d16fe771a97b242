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
	var p page
	p.add(mInfo, 1, metrics.Label{Name: "version", Value: version}, metrics.Label{Name: "mountpoint", Value: g.m.mountpoint})
	g.describeHosts(&p)
	g.describeReplicas(&p)
	g.describeRequests(&p)
	g.describeCaches(&p)
	return p.families()
}

// describeHosts describes each connection to a host: its channels, the SFTP
// requests and their durations, data and errors. The counters are those
// sshfsm status shows.
func (g *gatherer) describeHosts(p *page) {
	for _, mh := range g.hosts {
		p.add(mBranchHost, 1, mh.branch, mh.host)
		if !mh.first {
			continue
		}
		h := mh.e.currentHost()
		if h == nil {
			p.add(mHostUp, 0, mh.host)
			continue
		}
		s := h.Stats()
		st := hostStatus(mh.host.Value, s, g.reconnect)
		p.add(mHostUp, boolValue(st.ChannelsUp > 0), mh.host)
		p.add(mChannels, float64(st.Channels), mh.host)
		p.add(mChannelsUp, float64(st.ChannelsUp), mh.host)
		for _, typ := range slices.Sorted(maps.Keys(st.Requests)) {
			p.add(mSFTPRequests, float64(st.Requests[typ]), mh.host, metrics.Label{Name: "type", Value: typ})
		}
		p.addHistogram(mSFTPDuration, s.Latency, mh.host)
		p.add(mSFTPInFlight, float64(st.InFlight), mh.host)
		p.add(mSFTPOldest, st.OldestSeconds, mh.host)
		p.add(mSFTPErrors, float64(st.Errors), mh.host)
		p.add(mReconnects, float64(st.Reconnects), mh.host)
		p.add(mReadBytes, float64(st.BytesRead), mh.host)
		p.add(mWrittenBytes, float64(st.BytesWritten), mh.host)
		p.add(mWireIn, float64(st.WireIn), mh.host)
		p.add(mWireOut, float64(st.WireOut), mh.host)
	}
}

// describeReplicas describes the members of replica sets: whether each is in
// service and how often it was taken out and came back.
func (g *gatherer) describeReplicas(p *page) {
	for b, set := range g.m.tree.sets {
		if set == nil {
			continue
		}
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
			p.add(mReplicaUp, boolValue(ms.Up), l...)
			p.add(mFailovers, float64(ms.Failovers), l...)
			p.add(mRejoins, float64(ms.Rejoins), l...)
		}
	}
}

// describeRequests describes the requests of the kernel, for the
// programs using the mount: how many wait and for how long, their
// durations and errors.
func (g *gatherer) describeRequests(p *page) {
	if r := requestStatus(g.m.requests); r != nil {
		p.add(mFUSEInFlight, float64(r.InFlight))
		p.add(mFUSEOldest, r.OldestSeconds)
	}
	if rm := g.m.requestMetrics; rm != nil {
		rm.Durations(func(op string, b metrics.Buckets) {
			if b.Count > 0 {
				p.addHistogram(mFUSEDuration, b, metrics.Label{Name: "op", Value: op})
			}
		})
		rm.Errors(func(op, errno string, n uint64) {
			p.add(mFUSEErrors, float64(n), metrics.Label{Name: "op", Value: op}, metrics.Label{Name: "errno", Value: errno})
		})
	}
}

// describeCaches describes the listing cache and the disk cache.
func (g *gatherer) describeCaches(p *page) {
	c := cacheStatus(g.m.dirs.Stats())
	kind := func(k string) metrics.Label { return metrics.Label{Name: "cache", Value: k} }
	p.add(mCacheHits, float64(c.ListingHits), kind("listing"))
	p.add(mCacheHits, float64(c.AttrHits), kind("attr"))
	p.add(mCacheHits, float64(c.NegativeHits), kind("negative"))
	p.add(mCacheMisses, float64(c.ListingMisses), kind("listing"))
	p.add(mCacheMisses, float64(c.AttrMisses), kind("attr"))
	if d := g.m.diskStatus(g.cfg); d != nil {
		p.add(mDiskBytes, float64(d.Bytes))
		p.add(mDiskFiles, float64(d.Entries))
		p.add(mDiskHitBytes, float64(d.HitBytes))
		p.add(mDiskMissBytes, float64(d.MissBytes))
		p.add(mDiskEvicted, float64(d.Evicted))
	}
}

func boolValue(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
