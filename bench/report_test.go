package main

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestSummarize(t *testing.T) {
	for _, tc := range []struct {
		in            []float64
		med, min, max float64
	}{
		{[]float64{3}, 3, 3, 3},
		{[]float64{5, 1, 3}, 3, 1, 5},
		{[]float64{4, 1, 2, 3}, 2.5, 1, 4},
	} {
		s, ok := summarize(tc.in)
		if !ok || s.med != tc.med || s.min != tc.min || s.max != tc.max {
			t.Errorf("summarize(%v) = %+v, want med %v min %v max %v", tc.in, s, tc.med, tc.min, tc.max)
		}
	}
	if _, ok := summarize(nil); ok {
		t.Error("summarize(nil) reported values")
	}
}

func testResults(samples map[string]map[string][]float64) *results {
	r := newResults(&config{}, &env{})
	r.samples = samples
	return r
}

func TestVerdict(t *testing.T) {
	for _, tc := range []struct {
		name    string
		w       *workload
		samples map[string][]float64
		want    string
	}{
		{"throughput above tuned", wSeqRead, map[string][]float64{sshfsTuned: {100}, sshfsmKey: {120}}, "yes"},
		{"throughput below tuned", wSeqRead, map[string][]float64{sshfsTuned: {100}, sshfsmKey: {90}}, "NO"},
		{"time at half", wFindCold, map[string][]float64{sshfsDefault: {2}, sshfsmKey: {1}}, "yes"},
		{"time above half", wFindCold, map[string][]float64{sshfsDefault: {2}, sshfsmKey: {1.2}}, "NO"},
		{"best sshfs is tuned", wRandWrite, map[string][]float64{sshfsDefault: {10}, sshfsTuned: {30}, sshfsmKey: {20, 20, 20}}, "NO"},
		{"best sshfs beaten, stable", wRandWrite, map[string][]float64{sshfsDefault: {10}, sshfsTuned: {30}, sshfsmKey: {40, 35, 41}}, "yes"},
		{"unstable worst sample", wRandWrite, map[string][]float64{sshfsDefault: {10}, sshfsmKey: {40, 10, 41}}, "NO"},
		{"absolute memory", wRSS, map[string][]float64{sshfsmKey: {149}}, "yes"},
		{"absolute memory over", wRSS, map[string][]float64{sshfsmKey: {151}}, "NO"},
		{"no reference", wGitCold, map[string][]float64{sshfsmKey: {1}}, "–"},
		{"no sshfsm", wGitCold, map[string][]float64{sshfsDefault: {1}}, "–"},
	} {
		r := testResults(map[string]map[string][]float64{tc.w.id: tc.samples})
		if _, got := r.verdict(tc.w); got != tc.want {
			t.Errorf("%s: verdict %q, want %q", tc.name, got, tc.want)
		}
	}
}

func TestParseFio(t *testing.T) {
	out := []byte(`note: both iodepth >= 1 and synchronous I/O engine are selected
{"jobs": [{"error": 0,
  "read": {"bw_bytes": 104857600, "iops": 800.5, "io_bytes": 1048576},
  "write": {"bw_bytes": 0, "iops": 0, "io_bytes": 0}}]}`)
	v, err := parseFio(out, fioJob{w: wSeqRead, rw: "read"}, "")
	if err != nil || math.Abs(v-100) > 1e-9 {
		t.Fatalf("seq read: %v, %v; want 100 MiB/s", v, err)
	}
	v, err = parseFio(out, fioJob{w: wRandRead, rw: "randread"}, "")
	if err != nil || v != 800.5 {
		t.Fatalf("rand read: %v, %v; want 800.5 IOPS", v, err)
	}
	if _, err := parseFio(out, fioJob{w: wSeqWrite, rw: "write"}, ""); err == nil {
		t.Fatal("write job without written bytes passed")
	}
	failed := []byte(`{"jobs": [{"error": 5}]}`)
	if _, err := parseFio(failed, fioJob{w: wSeqRead, rw: "read"}, "fio: io_u error\n"); err == nil ||
		!strings.Contains(err.Error(), "io_u error") {
		t.Fatalf("failed job: %v", err)
	}
}

func TestChartsAndReport(t *testing.T) {
	r := testResults(map[string]map[string][]float64{
		wSeqRead.id:  {sshfsDefault: {100, 110, 90}, sshfsTuned: {120}, sshfsmKey: {300, 280, 310}},
		wFindCold.id: {sshfsDefault: {2.5}, sshfsmKey: {0.8}, localKey: {0.1}},
	})
	dir := t.TempDir()
	if err := r.charts(dir); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"seq-read.png", "find-cold.png"} {
		if _, err := os.Stat(filepath.Join(dir, name)); err != nil {
			t.Error(err)
		}
	}
	md := r.markdown()
	for _, want := range []string{"| sshfsm | 300.0 MiB/s | 280.0–310.0 | 3 | 3.00× | 2.50× | ≥ 1× sshfs tuned | yes |",
		"| sshfsm | 0.800 s | 0.800–0.800 | 1 | 0.32× |  | ≤ 0.5× sshfs default | yes |"} {
		if !strings.Contains(md, want) {
			t.Errorf("report lacks %q:\n%s", want, md)
		}
	}
}

func TestOutputPaths(t *testing.T) {
	for _, tc := range []struct {
		out       string
		quick     bool
		dir, page string
	}{
		{"", false, "docs/benchmarks", "docs/benchmarks.md"},
		{"", true, "bench/results/quick", "bench/results/quick/results.md"},
		{"/tmp/x", false, "/tmp/x", "/tmp/x/results.md"},
	} {
		dir, page := outputPaths(tc.out, tc.quick)
		if dir != tc.dir || page != tc.page {
			t.Errorf("outputPaths(%q, %v) = %q, %q; want %q, %q", tc.out, tc.quick, dir, page, tc.dir, tc.page)
		}
	}
}

// TestChartLinks: the results page shows each chart by a path relative to
// the page.
func TestChartLinks(t *testing.T) {
	r := testResults(map[string]map[string][]float64{wSeqRead.id: {sshfsmKey: {300}}})
	r.c.out, r.c.page = outputPaths("", false)
	md := r.markdown()
	for _, want := range []string{"(benchmarks/seq-read.png)", "[results.json](benchmarks/results.json)"} {
		if !strings.Contains(md, want) {
			t.Errorf("results page lacks %q", want)
		}
	}
	if strings.Contains(md, "find-cold.png") {
		t.Error("results page links a chart of a workload that was not measured")
	}
}
