// Command bench compares sshfsm with sshfs (default and tuned) on fio,
// metadata, high-latency, memory and write workloads against a throwaway
// sshd on loopback, and writes a markdown table, raw samples and bar
// charts.
//
// Run it from the module root: go run ./bench [-quick].
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// config holds the command-line settings of one benchmark run.
type config struct {
	quick      bool
	repeats    int
	rssRepeats int
	rttRepeats int
	seqMiB     int64
	randMiB    int64
	rttMiB     int64
	runtime    time.Duration
	rtt        time.Duration
	entries    int
	smallFiles int
	groups     map[string]bool
	tools      map[string]bool
	sshfsmBin  string
	out        string // directory of results.json and the charts
	page       string // the results page: results.md in out, or docs/benchmarks.md
	keep       bool

	replicaMiB  int64   // size of each file of the replica workload
	replicaRate float64 // MB/s cap per replica gateway

	writesRepeats int
	writesRTTs    []time.Duration // the writes group's RTTs; 0 = loopback
	writesFiles   int             // files in the writes group's tree
	writesCpMiB   int64           // size of the file cp copies
}

func parseFlags() *config {
	c := &config{}
	flag.BoolVar(&c.quick, "quick", false, "short smoke run: small data, 1 repeat")
	repeats := flag.Int("repeats", 0, "repeats per workload and tool (default 5, -quick 1)")
	rssRepeats := flag.Int("rss-repeats", 0, "repeats of the 100k-entry walk (default 2, -quick 1)")
	rttRepeats := flag.Int("rtt-repeats", 0, "repeats of the high-latency workloads (default 3, -quick 1)")
	seq := flag.Int64("seq-mib", 0, "fio sequential file size in MiB (default 1024, -quick 128)")
	rnd := flag.Int64("rand-mib", 0, "fio random file size in MiB (default 256, -quick 64)")
	rttFile := flag.Int64("rtt-mib", 0, "file size read at high latency in MiB (default 256, -quick 64)")
	runtime := flag.Duration("runtime", 0, "fio time limit per job (default 6s, -quick 2s)")
	flag.DurationVar(&c.rtt, "rtt", 4*time.Millisecond, "round-trip time added by the proxy for the latency workloads")
	entries := flag.Int("entries", 0, "entries in the memory walk tree (default 100000, -quick 10000)")
	flag.IntVar(&c.smallFiles, "small-files", 2000, "files in the tree used at high latency")
	replicaMiB := flag.Int64("replica-mib", 0, "size of each file read in the replica workload in MiB (default 64, -quick 16)")
	flag.Float64Var(&c.replicaRate, "replica-rate", 50, "rate cap per replica gateway in MB/s")
	writesRepeats := flag.Int("writes-repeats", 0, "repeats of the writes group at each RTT (default 3, -quick 1)")
	writesRTTs := flag.String("writes-rtts", "", "RTTs of the writes group, 0 = loopback (default 0,4ms,30ms, -quick 0,4ms)")
	writesFiles := flag.Int("writes-files", 0, "files in the writes group's tree (default 2164, 31 MB; -quick 200; same mean size)")
	writesCp := flag.Int64("writes-cp-mib", 0, "size of the file the writes group copies in MiB (default 256, -quick 16)")
	groups := flag.String("groups", "fio,meta,rtt,git,cache,rss,replica,union,writes", "workload groups to run")
	tools := flag.String("tools", "sshfs-default,sshfs-tuned,sshfsm,local", "tools to run")
	flag.StringVar(&c.sshfsmBin, "sshfsm", "", "sshfsm binary (default: build ./cmd/sshfsm)")
	flag.StringVar(&c.out, "out", "", "write results.md, results.json and the charts to this directory "+
		"(default: the results page docs/benchmarks.md with docs/benchmarks/; -quick: bench/results/quick)")
	flag.BoolVar(&c.keep, "keep", false, "keep the served data directory after the run")
	flag.Parse()

	pick := func(v, full, quick int64) int64 {
		switch {
		case v > 0:
			return v
		case c.quick:
			return quick
		}
		return full
	}
	c.repeats = int(pick(int64(*repeats), 5, 1))
	c.rssRepeats = int(pick(int64(*rssRepeats), 2, 1))
	c.rttRepeats = int(pick(int64(*rttRepeats), 3, 1))
	c.seqMiB = pick(*seq, 1024, 128)
	c.randMiB = pick(*rnd, 256, 64)
	c.rttMiB = pick(*rttFile, 256, 64)
	c.runtime = time.Duration(pick(int64(*runtime), int64(6*time.Second), int64(2*time.Second)))
	c.entries = int(pick(int64(*entries), 100000, 10000))
	c.replicaMiB = pick(*replicaMiB, 64, 16)
	c.writesRepeats = int(pick(int64(*writesRepeats), 3, 1))
	c.writesFiles = int(pick(int64(*writesFiles), writesTreeFiles, 200))
	c.writesCpMiB = pick(*writesCp, 256, 16)
	if *writesRTTs == "" {
		*writesRTTs = "0,4ms,30ms"
		if c.quick {
			*writesRTTs = "0,4ms"
		}
	}
	var err error
	if c.writesRTTs, err = parseRTTs(*writesRTTs); err != nil {
		fmt.Fprintln(os.Stderr, "bench: -writes-rtts:", err)
		os.Exit(2)
	}
	c.groups = set(*groups)
	if c.groups["writes"] {
		registerWrites(c)
	}
	c.tools = set(*tools)
	c.out, c.page = outputPaths(c.out, c.quick)
	return c
}

// outputPaths returns where a run writes its charts and raw samples, and
// its results page. A full run with no -out regenerates the repository's
// results page; a quick run, a smoke test, goes to a directory git ignores.
func outputPaths(out string, quick bool) (dir, page string) {
	switch {
	case out != "":
		return out, filepath.Join(out, "results.md")
	case quick:
		dir = filepath.Join("bench", "results", "quick")
		return dir, filepath.Join(dir, "results.md")
	}
	return filepath.Join("docs", "benchmarks"), filepath.Join("docs", "benchmarks.md")
}

func set(list string) map[string]bool {
	m := map[string]bool{}
	for _, s := range strings.Split(list, ",") {
		if s = strings.TrimSpace(s); s != "" {
			m[s] = true
		}
	}
	return m
}

func main() {
	c := parseFlags()
	ctx, cancel := context.WithCancel(context.Background())
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	go func() {
		s := <-sigs
		logf("%v: stopping, unmounting everything", s)
		cancel()
		<-sigs
		logf("second signal: forced cleanup")
		unmountAll()
		os.Exit(130)
	}()
	err := run(ctx, c)
	unmountAll()
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, c *config) error {
	if _, err := os.Stat("go.mod"); err != nil {
		return fmt.Errorf("run from the module root (go run ./bench): %w", err)
	}
	e, err := newEnv(ctx, c)
	if err != nil {
		return err
	}
	defer e.close()
	res := newResults(c, e)
	res.note("start", loadavg())
	steps := []struct {
		group string
		fn    func(context.Context, *env, *results) error
	}{
		{"fio", runFio},
		{"meta", runMeta},
		{"rtt", runRTT},
		{"git", runGitFirst},
		{"cache", runCache},
		{"rss", runRSS},
		{"replica", runReplica},
		{"union", runUnion},
		{"writes", runWrites},
	}
	for _, s := range steps {
		if !c.groups[s.group] {
			continue
		}
		if err := s.fn(ctx, e, res); err != nil {
			res.note("error", fmt.Sprintf("%s: %v", s.group, err))
			logf("%s: %v", s.group, err)
			if ctx.Err() != nil {
				break
			}
		}
	}
	res.note("end", loadavg())
	return res.write()
}

var t0 = time.Now()

func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "[%6.1fs] %s\n", time.Since(t0).Seconds(), fmt.Sprintf(format, args...))
}

func loadavg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}
