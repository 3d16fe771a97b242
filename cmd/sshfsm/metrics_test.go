package main

import (
	"bytes"
	"flag"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sshfsm/internal/cache"
	"sshfsm/internal/config"
	"sshfsm/internal/inflight"
	"sshfsm/internal/metrics"
	"sshfsm/internal/remote"
	"sshfsm/internal/replica"
	"sshfsm/internal/transport"
	"sshfsm/test/exposition"
)

// TestMetricsPageHosts: branches on one host reached one way share a
// connection, whose counters appear once; another connection with the
// same name gets a label of its own; a host with a hostile name still
// gives a page a scraper accepts; members of a replica set are listed
// with their branch.
func TestMetricsPageHosts(t *testing.T) {
	shared := &transport.Host{}
	cfg := &config.Config{Branches: []config.Branch{
		{Dir: "/a", Hosts: []config.Endpoint{{Host: "h"}}},
		{Dir: "/b", Hosts: []config.Endpoint{{Host: "h"}}},
		{Dir: "/c", Hosts: []config.Endpoint{{Host: "h"}}},
		{Dir: "/d", Hosts: []config.Endpoint{{Host: "evil\"\n\\name"}}},
		{Dir: "/r", Hosts: []config.Endpoint{{Host: "r1"}, {Host: "r2"}}},
	}}
	set, err := replica.New([]replica.Member{{Name: "r1", Remote: stubRemote{}}, {Name: "r2", Remote: stubRemote{}}}, replica.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer set.Close()
	m := &mounted{mountpoint: "/mnt", dirs: cache.New(0, nil), requests: &inflight.Table{}, tree: &tree{endpoints: []*endpoint{
		{branch: 0, conf: cfg.Branches[0].Hosts[0], host: shared},
		{branch: 1, conf: cfg.Branches[1].Hosts[0], host: shared},
		{branch: 2, conf: cfg.Branches[2].Hosts[0]}, // unreachable: its own connection later
		{branch: 3, conf: cfg.Branches[3].Hosts[0]},
		{branch: 4, conf: cfg.Branches[4].Hosts[0]},
		{branch: 4, conf: cfg.Branches[4].Hosts[1]},
	}, sets: []*replica.Set{4: set}}}
	var page bytes.Buffer
	if err := metrics.Write(&page, m.newGatherer(cfg).families()); err != nil {
		t.Fatal(err)
	}
	fams, _, err := exposition.Parse(&page)
	if err != nil {
		t.Fatalf("%v\n%s", err, page.String())
	}
	if err := exposition.CheckHistograms(fams); err != nil {
		t.Fatal(err)
	}
	series := func(name string) []string {
		var out []string
		for _, s := range fams[name].Samples {
			out = append(out, s.Labels["branch"]+"|"+s.Labels["host"])
		}
		return out
	}
	if got, want := strings.Join(series("sshfsm_branch_host"), " "), "h:/a|h h:/b|h h:/c|h#2 evil\"\n\\name:/d|evil\"\n\\name r1,r2:/r|r1 r1,r2:/r|r2"; got != want {
		t.Errorf("branch_host series %q, want %q", got, want)
	}
	if got := series("sshfsm_host_up"); len(got) != 5 {
		t.Errorf("host_up series %q: want h, h#2, the hostile one, r1 and r2, each once", got)
	}
	if got, want := strings.Join(series("sshfsm_replica_member_up"), " "), "r1,r2:/r|r1 r1,r2:/r|r2"; got != want {
		t.Errorf("replica members %q, want %q", got, want)
	}
	if n := fams["sshfsm_replica_member_up"].Sum("sshfsm_replica_member_up", nil); n != 2 {
		t.Errorf("%v replica members in service, want 2", n)
	}
	if n := fams["sshfsm_host_up"].Sum("sshfsm_host_up", map[string]string{"host": "h#2"}); n != 0 {
		t.Errorf("unreachable host up: %v", n)
	}
}

// stubRemote stands for a host a replica set is never asked to reach.
type stubRemote struct{ remote.Remote }

func (stubRemote) Close() error { return nil }

// TestListenMetrics: an address in use fails with the mount's exit
// status and the address; a listener on loopback or a unix socket is not
// warned about (one beyond loopback is: metrics.TestPublic).
func TestListenMetrics(t *testing.T) {
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	var w bytes.Buffer
	_, err = listenMetrics(&config.Config{Metrics: config.Metrics{Network: "tcp", Address: busy.Addr().String()}}, &w)
	want := "metrics=" + busy.Addr().String() + ": cannot listen there: bind: address already in use"
	if err == nil || err.Error() != want || config.CodeOf(err) != config.ExitMount {
		t.Errorf("busy address: %v (exit %d), want %q", err, config.CodeOf(err), want)
	}
	if s, err := listenMetrics(&config.Config{}, &w); s != nil || err != nil {
		t.Errorf("without the option: %v, %v", s, err)
	}
	for _, m := range []config.Metrics{{Network: "tcp", Address: "127.0.0.1:0"}, {Network: "unix", Address: filepath.Join(t.TempDir(), "s")}} {
		s, err := listenMetrics(&config.Config{Metrics: m}, &w)
		if err != nil {
			t.Fatal(err)
		}
		s.Close()
	}
	if w.Len() != 0 {
		t.Errorf("warned about a local listener: %s", w.String())
	}
}

// TestStatusNamesMetrics: sshfsm status says where the metrics are.
func TestStatusNamesMetrics(t *testing.T) {
	cfg := &config.Config{Metrics: config.Metrics{Network: "unix", Address: "/run/m.sock"}}
	if got := strings.Join(optionSummary(cfg), ","); !strings.HasSuffix(got, ",metrics=unix:/run/m.sock") {
		t.Errorf("options %s", got)
	}
	if got := strings.Join(optionSummary(&config.Config{}), ","); strings.Contains(got, "metrics") {
		t.Errorf("options without metrics=: %s", got)
	}
}

var updateMetricsDoc = flag.Bool("update", false, "rewrite docs/metrics.md")

// TestMetricsDoc: every family is declared with a valid name, a type and
// a help text, once; docs/metrics.md is what the declarations generate.
func TestMetricsDoc(t *testing.T) {
	seen := map[string]bool{}
	for id, d := range metricDecls {
		var p page
		if d.typ == metrics.Histogram {
			p.addHistogram(metricID(id), (&metrics.Latency{}).Snapshot())
		} else {
			p.add(metricID(id), 1)
		}
		if err := metrics.Write(io.Discard, p.families()); err != nil || d.help == "" || seen[d.name] {
			t.Errorf("family %d %+v: %v (help empty or declared twice?)", id, d, err)
		}
		seen[d.name] = true
	}
	path := filepath.Join("..", "..", "docs", "metrics.md")
	if *updateMetricsDoc {
		if err := os.WriteFile(path, []byte(metricsDoc()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile(path)
	if err != nil || string(got) != metricsDoc() {
		t.Errorf("%s is stale (%v); regenerate with: go test ./cmd/sshfsm -run TestMetricsDoc -update", path, err)
	}
}
