package control

import (
	"encoding/json"
	"time"
)

// The protocol is one JSON line each way per connection: the client sends
// a request, the daemon answers and closes. Every answer, even one
// refusing the request, carries the daemon's protocol version and who it
// is, so that a client can always say which daemon it cannot talk to.

// Version is the protocol version this build speaks. It changes only when
// an older client could misread an answer; adding fields does not change it.
const Version = 1

// opStatus asks for the Status of the mount.
const opStatus = "status"

type request struct {
	Version int    `json:"version"`
	Op      string `json:"op"`
}

type response struct {
	Version    int             `json:"version"`
	Mountpoint string          `json:"mountpoint"`
	PID        int             `json:"pid"`
	Program    string          `json:"program"`
	Error      string          `json:"error,omitempty"`
	Status     json.RawMessage `json:"status,omitempty"`
}

// Limits on one exchange. A status is a few KiB; the limits only keep a
// confused peer from making either side buffer without end.
const (
	maxRequest  = 4 << 10
	maxResponse = 4 << 20
	// ioTimeout bounds how long the daemon spends on one connection.
	ioTimeout = 5 * time.Second
)
