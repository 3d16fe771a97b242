package main

import (
	"fmt"
	"strings"

	"sshfsm/internal/metrics"
)

// metricID names one family of the metrics page.
type metricID int

// The families of the page, in its order.
const (
	mInfo metricID = iota
	mHostUp
	mBranchHost
	mChannels
	mChannelsUp
	mSFTPRequests
	mSFTPDuration
	mSFTPInFlight
	mSFTPOldest
	mSFTPErrors
	mReconnects
	mReadBytes
	mWrittenBytes
	mWireIn
	mWireOut
	mReplicaUp
	mFailovers
	mRejoins
	mFUSEInFlight
	mFUSEOldest
	mFUSEDuration
	mFUSEErrors
	mCacheHits
	mCacheMisses
	mDiskBytes
	mDiskFiles
	mDiskHitBytes
	mDiskMissBytes
	mDiskEvicted
	numMetrics
)

// metricDecl is the one declaration of a family: docs/metrics.md is
// generated from these.
type metricDecl struct {
	name   string
	typ    metrics.Type
	labels string // the labels of its series, as docs list them
	help   string
}

var metricDecls = [numMetrics]metricDecl{
	mInfo:          {"sshfsm_info", metrics.Gauge, "version, mountpoint", "Always 1: the sshfsm version and the mountpoint it serves."},
	mHostUp:        {"sshfsm_host_up", metrics.Gauge, "host", "1 while at least one channel to the host is live, 0 while it is unreachable."},
	mBranchHost:    {"sshfsm_branch_host", metrics.Gauge, "branch, host", "Always 1: the host (label host of the other metrics) serves the branch (as written on the command line). Branches on one host reached the same way share its connection and its series."},
	mChannels:      {"sshfsm_host_channels", metrics.Gauge, "host", "SSH channels (SFTP sessions) the host may use (max_conns)."},
	mChannelsUp:    {"sshfsm_host_channels_up", metrics.Gauge, "host", "SSH channels to the host that are live."},
	mSFTPRequests:  {"sshfsm_sftp_requests_total", metrics.Counter, "host, type", "SFTP requests sent to the host, by type (READ, WRITE, LSTAT, ..., extensions by name)."},
	mSFTPDuration:  {"sshfsm_sftp_request_duration_seconds", metrics.Histogram, "host", "Time from sending an SFTP request to its answer (or its failure)."},
	mSFTPInFlight:  {"sshfsm_sftp_requests_in_flight", metrics.Gauge, "host", "SFTP requests sent to the host and not yet answered: the host's queue."},
	mSFTPOldest:    {"sshfsm_sftp_oldest_request_seconds", metrics.Gauge, "host", "How long the oldest SFTP request in flight has waited; 0 when none is. Far past the timeout option means stuck."},
	mSFTPErrors:    {"sshfsm_sftp_errors_total", metrics.Counter, "host", "SFTP requests that failed for transport reasons (connection lost, timeout), not the server's answers such as no such file."},
	mReconnects:    {"sshfsm_host_reconnects_total", metrics.Counter, "host", "Channels to the host opened again after they were lost."},
	mReadBytes:     {"sshfsm_read_bytes_total", metrics.Counter, "host", "File data read from the host."},
	mWrittenBytes:  {"sshfsm_written_bytes_total", metrics.Counter, "host", "File data written to the host and acknowledged by it."},
	mWireIn:        {"sshfsm_wire_received_bytes_total", metrics.Counter, "host", "Bytes received from the host, SFTP framing included."},
	mWireOut:       {"sshfsm_wire_sent_bytes_total", metrics.Counter, "host", "Bytes sent to the host, SFTP framing included."},
	mReplicaUp:     {"sshfsm_replica_member_up", metrics.Gauge, "branch, host", "Replica sets only: 1 while the host serves its set, 0 while the set has taken it out."},
	mFailovers:     {"sshfsm_replica_failovers_total", metrics.Counter, "branch, host", "Replica sets only: times the set took the host out after a connection-level failure."},
	mRejoins:       {"sshfsm_replica_rejoins_total", metrics.Counter, "branch, host", "Replica sets only: times the host came back into its set."},
	mFUSEInFlight:  {"sshfsm_fuse_requests_in_flight", metrics.Gauge, "", "File system requests of the kernel (for the programs using the mount) being answered."},
	mFUSEOldest:    {"sshfsm_fuse_oldest_request_seconds", metrics.Gauge, "", "How long the oldest file system request being answered has waited; 0 when none is."},
	mFUSEDuration:  {"sshfsm_fuse_request_duration_seconds", metrics.Histogram, "op", "Time to answer a file system request of the kernel, by FUSE operation (LOOKUP, READ, WRITE, ...); operations never asked are left out."},
	mFUSEErrors:    {"sshfsm_fuse_errors_total", metrics.Counter, "op, errno", "File system requests of the kernel answered with an error, by FUSE operation and errno (ENOENT, EIO, ETIMEDOUT, ...). Most are ordinary answers (no such file, not empty); EIO, ETIMEDOUT and ENOTCONN are failures."},
	mCacheHits:     {"sshfsm_cache_hits_total", metrics.Counter, "cache", "Questions answered from kept listings: cache=listing (lookups and directory reads), attr (one name's attributes), negative (no such file)."},
	mCacheMisses:   {"sshfsm_cache_misses_total", metrics.Counter, "cache", "Questions the kept listings could not answer, which went to a server: cache=listing, attr."},
	mDiskBytes:     {"sshfsm_disk_cache_bytes", metrics.Gauge, "", "Disk cache only: bytes the disk cache of file contents holds, shared by the mounts using its directory."},
	mDiskFiles:     {"sshfsm_disk_cache_files", metrics.Gauge, "", "Disk cache only: file versions the disk cache holds."},
	mDiskHitBytes:  {"sshfsm_disk_cache_hit_bytes_total", metrics.Counter, "", "Disk cache only: file data this mount read from the disk cache."},
	mDiskMissBytes: {"sshfsm_disk_cache_miss_bytes_total", metrics.Counter, "", "Disk cache only: file data this mount asked of the disk cache and read from a server."},
	mDiskEvicted:   {"sshfsm_disk_cache_evicted_bytes_total", metrics.Counter, "", "Disk cache only: bytes removed from the disk cache to keep within its size."},
}

// page is one scrape's families, each declared once, in order.
type page [numMetrics]metrics.Family

// add appends a series of value v to the family id.
func (p *page) add(id metricID, v float64, labels ...metrics.Label) {
	p.family(id).Add(v, labels...)
}

// addHistogram appends a histogram series to the family id.
func (p *page) addHistogram(id metricID, b metrics.Buckets, labels ...metrics.Label) {
	p.family(id).AddHistogram(b, labels...)
}

func (p *page) family(id metricID) *metrics.Family {
	f := &p[id]
	if f.Name == "" {
		d := metricDecls[id]
		f.Name, f.Type, f.Help = d.name, d.typ, d.help
	}
	return f
}

// families are the families with at least one series; those of parts
// the mount does not have (replica sets, the disk cache) are left out.
func (p *page) families() []metrics.Family {
	var out []metrics.Family
	for _, f := range p {
		if len(f.Samples) > 0 {
			out = append(out, f)
		}
	}
	return out
}

// metricsDoc is docs/metrics.md.
func metricsDoc() string {
	var b strings.Builder
	b.WriteString("<!-- Generated from cmd/sshfsm/metricsdecl.go by `go test ./cmd/sshfsm -run TestMetricsDoc -update`; do not edit. -->\n\n")
	b.WriteString("# Metrics\n\n")
	b.WriteString("With `-o metrics=HOST:PORT` (or `metrics=unix:PATH`), a mount serves these metrics at `/metrics` in the\n")
	b.WriteString("Prometheus text format, read at each scrape from the counters `sshfsm status` shows. Durations are in\n")
	b.WriteString("seconds, sizes in bytes. Label values (host and branch names, the mountpoint) are escaped as the format\n")
	b.WriteString("requires; a host name given twice for different connections gets `#2`, `#3`, ...\n\n")
	b.WriteString("| Metric | Type | Labels | Meaning |\n|---|---|---|---|\n")
	for _, d := range metricDecls {
		fmt.Fprintf(&b, "| `%s` | %s | %s | %s |\n", d.name, d.typ, d.labels, strings.ReplaceAll(d.help, "|", `\|`))
	}
	return b.String()
}
