package main

import (
	"strings"
	"testing"
	"time"

	"sshfsm/internal/control"
	"sshfsm/internal/transport"
)

func TestHostStatus(t *testing.T) {
	reqs := map[string]uint64{"READ": 5}
	two := transport.Stats{Requests: reqs, BytesIn: 100, BytesOut: 50, Channels: []transport.ChannelStats{
		{Up: true, Outstanding: 2, BytesRead: 10, BytesWritten: 1, Errors: 1, Reconnects: 2, LastRTT: 3 * time.Millisecond},
		{Up: false, Outstanding: 1, BytesRead: 5, BytesWritten: 2, Errors: 3, Reconnects: 1, LastRTT: time.Millisecond},
	}}
	h := hostStatus("h", two, true)
	want := control.Host{Name: "h", State: control.StateUp, ChannelsUp: 1, Channels: 2, InFlight: 3, LatencyMillis: 2,
		BytesRead: 15, BytesWritten: 3, WireIn: 100, WireOut: 50, Errors: 4, Reconnects: 3, Requests: reqs}
	if h.Name != want.Name || h.State != want.State || h.ChannelsUp != want.ChannelsUp || h.Channels != want.Channels ||
		h.InFlight != want.InFlight || h.LatencyMillis != want.LatencyMillis || h.BytesRead != want.BytesRead ||
		h.BytesWritten != want.BytesWritten || h.WireIn != want.WireIn || h.WireOut != want.WireOut ||
		h.Errors != want.Errors || h.Reconnects != want.Reconnects || h.Requests["READ"] != 5 {
		t.Errorf("got  %+v\nwant %+v", h, want)
	}

	down := transport.Stats{Channels: []transport.ChannelStats{{}, {}}}
	if s := hostStatus("h", down, true).State; s != control.StateReconnecting {
		t.Errorf("no channel up, reconnect on: %s", s)
	}
	if s := hostStatus("h", down, false).State; s != control.StateDown {
		t.Errorf("no channel up, reconnect off: %s", s)
	}
	if l := hostStatus("h", down, true).LatencyMillis; l != 0 {
		t.Errorf("latency without any request: %v", l)
	}
}

func TestWriteStatus(t *testing.T) {
	st := &control.Status{
		Mount: control.Mount{Mountpoint: "/home/a/mnt", PID: 42, Program: "1.0", UptimeSeconds: 3725,
			Options: []string{"max_conns=4", "reconnect"}},
		Branches: []control.Branch{{Kind: control.KindSingle, Name: "srv:data", Dir: "/home/a/data", Hosts: []control.Host{{
			Name: "srv", State: control.StateReconnecting, Channels: 4, InFlight: 1, LatencyMillis: 12.4,
			BytesRead: 3 << 20, BytesWritten: 1536, Errors: 2, Reconnects: 1,
			Requests: map[string]uint64{"READ": 40, "STAT": 7, "LSTAT": 7},
		}}}},
		Cache: control.Cache{Enabled: true, ListingHits: 3, ListingMisses: 1, ListingRatio: 0.75, AttrRatio: -1, NegativeHits: 5},
	}
	var b strings.Builder
	writeStatus(&b, st)
	want := `/home/a/mnt  (pid 42, up 1h02m, sshfsm 1.0)
  options  max_conns=4,reconnect
  cache    listing hits 3/4 (75.0%), attribute hits 0/0 (-), negative hits 5
  branch   srv:data (single, rw, /home/a/data)
    HOST  STATE         CHANNELS  IN FLIGHT  LATENCY  READ     WRITTEN  ERRORS  RECONNECTS
    srv   reconnecting  0/4       1          12 ms    3.0 MiB  1.5 KiB  2       1
    requests: READ 40, LSTAT 7, STAT 7
`
	if b.String() != want {
		t.Errorf("got\n%s\nwant\n%s", b.String(), want)
	}
	st.Cache = control.Cache{}
	b.Reset()
	writeStatus(&b, st)
	if !strings.Contains(b.String(), "  cache    listings off (dcache_timeout=0)\n") {
		t.Errorf("disabled cache:\n%s", b.String())
	}
	st.Requests = &control.Requests{}
	b.Reset()
	writeStatus(&b, st)
	if !strings.Contains(b.String(), "\n  requests none in flight\n") {
		t.Errorf("no request in flight:\n%s", b.String())
	}
	st.Requests = &control.Requests{InFlight: 3, OldestSeconds: 963.5, OldestKind: "READ"}
	st.Branches[0].Hosts[0].OldestSeconds = 963.2
	b.Reset()
	writeStatus(&b, st)
	if !strings.Contains(b.String(), "\n  requests 3 in flight, oldest 16m03s (READ)\n") {
		t.Errorf("a request in flight for 16 minutes:\n%s", b.String())
	}
	if !strings.Contains(b.String(), "  1 (16m03s)  ") {
		t.Errorf("a host's request in flight for 16 minutes:\n%s", b.String())
	}
}

func TestHumanUnits(t *testing.T) {
	for n, want := range map[uint64]string{0: "0 B", 1023: "1023 B", 1024: "1.0 KiB", 5 << 20: "5.0 MiB", 3 << 40: "3.0 TiB"} {
		if got := humanBytes(n); got != want {
			t.Errorf("humanBytes(%d) = %q, want %q", n, got, want)
		}
	}
	for d, want := range map[time.Duration]string{
		0: "0s", 59 * time.Second: "59s", 61 * time.Second: "1m01s", 2*time.Hour + 5*time.Minute: "2h05m", 50 * time.Hour: "2d02h",
	} {
		if got := duration(d); got != want {
			t.Errorf("duration(%v) = %q, want %q", d, got, want)
		}
	}
	for ms, want := range map[float64]string{0: "-", 0.071: "0.07 ms", 9.5: "9.50 ms", 12.4: "12 ms"} {
		if got := latency(ms); got != want {
			t.Errorf("latency(%v) = %q, want %q", ms, got, want)
		}
	}
	if got := requestsLine(nil); got != "none" {
		t.Errorf("no requests: %q", got)
	}
}
