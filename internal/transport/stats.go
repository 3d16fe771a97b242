package transport

import (
	"encoding/binary"
	"sync"
	"sync/atomic"
	"time"

	"sshfsm/internal/metrics"
)

// Stats is a snapshot of a host's channels and of the requests sent.
type Stats struct {
	Channels []ChannelStats
	// Requests counts SFTP requests sent, by type: "OPEN", "CLOSE", "READ",
	// "WRITE", "LSTAT", "FSTAT", "SETSTAT", "FSETSTAT", "OPENDIR", "READDIR",
	// "REMOVE", "MKDIR", "RMDIR", "REALPATH", "STAT", "RENAME", "READLINK",
	// "SYMLINK", and extensions by name ("posix-rename@openssh.com", ...).
	Requests map[string]uint64
	BytesIn  uint64 // bytes received on all sessions (SFTP framing included)
	BytesOut uint64 // bytes sent
	// Oldest is how long the oldest request in flight has waited; 0 when
	// none is. A request past Options.Timeout is about to fail; one far
	// past it is stuck.
	Oldest time.Duration
	// Latency is the histogram of every request's duration, from sending
	// to the answer, on all channels.
	Latency metrics.Buckets
}

// ChannelStats describes one channel slot over its whole life.
type ChannelStats struct {
	Up           bool
	Outstanding  int
	BytesRead    uint64 // file data returned by ReadAt
	BytesWritten uint64 // file data acknowledged to WriteAt
	Errors       uint64 // requests that failed for transport reasons
	Reconnects   uint64
	LastRTT      time.Duration // duration of the last request
}

var fxpNames = map[byte]string{
	1: "INIT", 3: "OPEN", 4: "CLOSE", 5: "READ", 6: "WRITE", 7: "LSTAT", 8: "FSTAT",
	9: "SETSTAT", 10: "FSETSTAT", 11: "OPENDIR", 12: "READDIR", 13: "REMOVE",
	14: "MKDIR", 15: "RMDIR", 16: "REALPATH", 17: "STAT", 18: "RENAME",
	19: "READLINK", 20: "SYMLINK",
}

const fxpExtended = 200

// reqCounters counts requests by packet type, extended ones by name.
type reqCounters struct {
	byType [256]atomic.Uint64
	mu     sync.Mutex // guards ext
	ext    map[string]uint64
}

// count classifies one packet from its first bytes (type, id, ...).
func (r *reqCounters) count(head []byte) {
	if len(head) == 0 {
		return
	}
	if head[0] != fxpExtended {
		r.byType[head[0]].Add(1)
		return
	}
	name := "EXTENDED"
	if len(head) >= 9 {
		n := int(binary.BigEndian.Uint32(head[5:9]))
		if 9+n <= len(head) {
			name = string(head[9 : 9+n])
		}
	}
	r.mu.Lock()
	if r.ext == nil {
		r.ext = map[string]uint64{}
	}
	r.ext[name]++
	r.mu.Unlock()
}

func (r *reqCounters) snapshot() map[string]uint64 {
	m := map[string]uint64{}
	for t, name := range fxpNames {
		if v := r.byType[t].Load(); v > 0 {
			m[name] = v
		}
	}
	r.mu.Lock()
	for k, v := range r.ext {
		m[k] = v
	}
	r.mu.Unlock()
	return m
}

// Stats returns a snapshot of the counters.
func (h *Host) Stats() Stats {
	s := Stats{Requests: h.reqs.snapshot(), BytesIn: h.wireIn.Load(), BytesOut: h.wireOut.Load()}
	for _, st := range h.slots {
		s.Channels = append(s.Channels, ChannelStats{
			Up:           st.up.Load(),
			Outstanding:  int(st.outstanding.Load()),
			BytesRead:    st.bytesRead.Load(),
			BytesWritten: st.bytesWrite.Load(),
			Errors:       st.errors.Load(),
			Reconnects:   st.reconnects.Load(),
			LastRTT:      time.Duration(st.lastRTT.Load()),
		})
		s.Latency.Add(&st.latency)
	}
	s.Oldest = h.oldest()
	return s
}

// oldest is the age of the oldest request in flight: through pkg/sftp, or
// sent past it on a live channel.
func (h *Host) oldest() time.Duration {
	age := h.ages.Oldest().Age
	h.mu.Lock()
	chans := append([]*channel(nil), h.chans...)
	h.mu.Unlock()
	for _, c := range chans {
		if c == nil || c.raw == nil {
			continue
		}
		if sent, ok := c.raw.oldest(); ok {
			age = max(age, time.Since(sent))
		}
	}
	return age
}
