// Package control lets `sshfsm status` ask a running sshfsm daemon what its
// mount is doing, over a unix socket private to the mounting user.
package control

import "time"

// Status is what a daemon reports about its mount. Its JSON form is what
// `sshfsm status --json` prints; fields are only ever added.
type Status struct {
	Mount    Mount    `json:"mount"`
	Branches []Branch `json:"branches"`
	Cache    Cache    `json:"cache"`
	Meta     *Meta    `json:"metadata,omitempty"` // absent when listings are not kept across mounts
	// Disk is the disk cache of file contents; absent when it is off.
	Disk *Disk `json:"disk,omitempty"`
	// Requests are the file system requests the mount is answering;
	// absent from a daemon that does not track them.
	Requests *Requests `json:"requests,omitempty"`
}

// Requests describes the requests of the kernel (for the programs using
// the mount) that the daemon is answering. A request much older than
// the timeout option is a hang.
type Requests struct {
	InFlight int `json:"in_flight"`
	// OldestSeconds is the age of the oldest request; 0 when none.
	OldestSeconds float64 `json:"oldest_seconds"`
	// OldestKind is its FUSE operation (READ, FLUSH, LOOKUP...).
	OldestKind string `json:"oldest_kind,omitempty"`
}

// Disk describes the disk cache of file contents, shared by the mounts
// that use the same directory; the hits and misses are this mount's.
type Disk struct {
	Dir       string  `json:"dir"`
	Bytes     int64   `json:"bytes"`   // stored, with its bookkeeping
	Entries   int64   `json:"entries"` // file versions stored
	HitBytes  int64   `json:"hit_bytes"`
	MissBytes int64   `json:"miss_bytes"`
	HitRatio  float64 `json:"hit_ratio"` // of the bytes read; -1 before any read
	Evicted   int64   `json:"evicted_bytes"`
}

// Mount describes the mount as a whole. The server fills Mountpoint, PID,
// Program, Started and UptimeSeconds; the provider fills Options.
type Mount struct {
	Mountpoint    string    `json:"mountpoint"`
	PID           int       `json:"pid"`
	Program       string    `json:"program"` // sshfsm version of the daemon
	Started       time.Time `json:"started"`
	UptimeSeconds float64   `json:"uptime_seconds"`
	Options       []string  `json:"options"`       // the settings that shape behaviour, as -o would write them
	Log           string    `json:"log,omitempty"` // where the daemon logs: syslog, a file, stderr
}

// Branch kinds.
const (
	KindSingle  = "single"  // the only branch of the mount
	KindUnion   = "union"   // one of several branches merged at the root
	KindGraft   = "graft"   // a branch appearing as MOUNTPOINT/NAME
	KindReplica = "replica" // several hosts serving one tree
)

// Branch is one remote directory of the mount and the hosts serving it.
type Branch struct {
	Kind     string `json:"kind"`
	Name     string `json:"name"` // graft name, or the branch as written
	Dir      string `json:"dir"`  // remote directory, resolved
	ReadOnly bool   `json:"read_only"`
	Hosts    []Host `json:"hosts"`
}

// Host states.
const (
	StateUp           = "up"           // at least one channel is live
	StateReconnecting = "reconnecting" // no channel is live; trying again
	StateDown         = "down"         // no channel is live and none will be
)

// Change detection states (Host.Watch).
const (
	WatchStarting = "starting" // the watcher on the server sets up its watches
	WatchActive   = "active"   // changes made on the server are pushed to the mount
	WatchPartial  = "partial"  // pushed, but not from every directory
	WatchStandby  = "standby"  // another host of the replica set watches the branch
	WatchOff      = "off"      // not pushed: the cache timeouts apply
)

// Host is one ssh host of a branch.
type Host struct {
	Name       string `json:"name"`
	State      string `json:"state"`
	ChannelsUp int    `json:"channels_up"`
	Channels   int    `json:"channels"`
	InFlight   int    `json:"in_flight"` // requests sent and not answered
	// OldestSeconds is how long the oldest of them has waited; 0 when
	// none is (or from a daemon that does not say).
	OldestSeconds float64           `json:"oldest_request_seconds"`
	LatencyMillis float64           `json:"latency_ms"` // mean duration of each channel's last request
	BytesRead     uint64            `json:"bytes_read"` // file data read
	BytesWritten  uint64            `json:"bytes_written"`
	WireIn        uint64            `json:"wire_in"` // bytes received, SFTP framing included
	WireOut       uint64            `json:"wire_out"`
	Errors        uint64            `json:"errors"` // requests failed for transport reasons
	Reconnects    uint64            `json:"reconnects"`
	Requests      map[string]uint64 `json:"requests"`         // SFTP requests sent, by type
	Detail        string            `json:"detail,omitempty"` // why the host is not up, when known
	// Watch says whether changes made on the server are pushed to the
	// mount (Watch* states); WatchDetail why not, what is partial, or
	// which host watches the branch instead.
	Watch       string `json:"watch,omitempty"`
	WatchDetail string `json:"watch_detail,omitempty"`
}

// Cache holds the counters of the mount's listing cache. Ratios are hits
// over all answers, -1 when nothing was asked yet; the server fills them.
type Cache struct {
	Enabled       bool    `json:"enabled"`
	ListingHits   uint64  `json:"listing_hits"`
	ListingMisses uint64  `json:"listing_misses"`
	ListingRatio  float64 `json:"listing_hit_ratio"`
	AttrHits      uint64  `json:"attr_hits"`
	AttrMisses    uint64  `json:"attr_misses"`
	AttrRatio     float64 `json:"attr_hit_ratio"`
	NegativeHits  uint64  `json:"negative_hits"`
}

// Meta describes the listings a mount keeps across mounts (disk_cache):
// what it loaded at mount, how much of it was listed again, and what it
// keeps for the next mount.
type Meta struct {
	Mode          string `json:"mode"` // coherence mode: auto, immutable, strict
	LoadedDirs    int    `json:"loaded_dirs"`
	LoadedEntries int    `json:"loaded_entries"`
	// SnapshotAgeSeconds is the age of the loaded snapshot; -1 if none
	// was loaded.
	SnapshotAgeSeconds float64 `json:"snapshot_age_seconds"`
	Revalidated        uint64  `json:"revalidated"` // loaded listings listed again
	Changed            uint64  `json:"changed"`     // of those that had answered, how many differed
	Pending            int     `json:"pending"`     // revalidations queued or under way
	Dirs               int     `json:"dirs"`        // listings kept for the next snapshot
	Entries            int     `json:"entries"`
	// LastWriteSeconds is how long ago the snapshot was last written;
	// -1 if not yet.
	LastWriteSeconds float64 `json:"last_write_seconds"`
	WriteError       string  `json:"write_error,omitempty"`
	// Check is the state of the check of loaded listings at mount
	// (Auto mode): "under way", "done" (CheckChanged names had changed),
	// "failed" (each loaded listing is listed again at its first use);
	// empty when there was none.
	Check        string `json:"check,omitempty"`
	CheckChanged int    `json:"check_changed"`
}

// fillRatios computes the ratios from the counters.
func (c *Cache) fillRatios() {
	c.ListingRatio = ratio(c.ListingHits, c.ListingMisses)
	c.AttrRatio = ratio(c.AttrHits, c.AttrMisses)
}

func ratio(hits, misses uint64) float64 {
	if hits+misses == 0 {
		return -1
	}
	return float64(hits) / float64(hits+misses)
}
