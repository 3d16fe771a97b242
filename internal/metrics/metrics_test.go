package metrics

import (
	"bytes"
	"math"
	"strings"
	"sync"
	"testing"
	"time"

	"sshfsm/test/exposition"
)

// hostile is a label value as a user or a server might write it: quotes,
// backslashes, a line feed, braces, a comma and bytes that are not UTF-8.
const hostile = "a\"b\\c\nd},e=\"f\xff\xfe"

func sampleFamilies() []Family {
	var l Latency
	for _, d := range []time.Duration{100 * time.Microsecond, 3 * time.Millisecond, 3 * time.Millisecond, 2 * time.Second, 2 * time.Minute} {
		l.Observe(d)
	}
	return []Family{
		{Name: "sshfsm_test_requests_total", Help: "Requests.\nSecond line with a \\ backslash.", Type: Counter, Samples: []Sample{
			{Labels: []Label{{"host", hostile}, {"type", "READ"}}, Value: 7},
			{Labels: []Label{{"host", "plain"}, {"type", "READ"}}, Value: 1 << 40},
		}},
		{Name: "sshfsm_test_up", Help: "Up.", Type: Gauge, Samples: []Sample{{Value: 1}}},
		{Name: "sshfsm_test_age_seconds", Help: "Age.", Type: Gauge, Samples: []Sample{{Value: 0.25}, {Labels: []Label{{"x", ""}}, Value: math.Inf(1)}}},
		{Name: "sshfsm_test_duration_seconds", Help: "Durations.", Type: Histogram, Samples: []Sample{
			{Labels: []Label{{"host", hostile}}, Hist: l.Snapshot()},
			{Labels: []Label{{"host", "idle"}}, Hist: (&Latency{}).Snapshot()},
		}},
		{Name: "sshfsm_test_empty", Help: "No series.", Type: Counter},
	}
}

// TestWriteParsesBack: the page reads back, strictly, into the families,
// help texts, types, label values and numbers written.
func TestWriteParsesBack(t *testing.T) {
	var buf bytes.Buffer
	if err := Write(&buf, sampleFamilies()); err != nil {
		t.Fatal(err)
	}
	page := buf.String()
	fams, order, err := exposition.Parse(strings.NewReader(page))
	if err != nil {
		t.Fatalf("%v\n%s", err, page)
	}
	want := []string{"sshfsm_test_requests_total", "sshfsm_test_up", "sshfsm_test_age_seconds", "sshfsm_test_duration_seconds", "sshfsm_test_empty"}
	if strings.Join(order, " ") != strings.Join(want, " ") {
		t.Errorf("families %v, want %v", order, want)
	}
	req := fams["sshfsm_test_requests_total"]
	if req.Type != "counter" || req.Help != "Requests.\nSecond line with a \\ backslash." {
		t.Errorf("requests: type %q help %q", req.Type, req.Help)
	}
	cleaned := strings.ToValidUTF8(hostile, "\uFFFD")
	if got := req.Sum("sshfsm_test_requests_total", map[string]string{"host": cleaned, "type": "READ"}); got != 7 {
		t.Errorf("hostile host's requests: %v, want 7\n%s", got, page)
	}
	if got := req.Sum("sshfsm_test_requests_total", map[string]string{"host": "plain"}); got != 1<<40 {
		t.Errorf("plain host's requests: %v", got)
	}
	if got := fams["sshfsm_test_up"].Samples; len(got) != 1 || got[0].Value != 1 || len(got[0].Labels) != 0 {
		t.Errorf("up: %+v", got)
	}
	if got := fams["sshfsm_test_age_seconds"].Sum("sshfsm_test_age_seconds", map[string]string{"x": ""}); !math.IsInf(got, 1) {
		t.Errorf("age with label x: %v, want +Inf", got)
	}
	if err := exposition.CheckHistograms(fams); err != nil {
		t.Fatalf("%v\n%s", err, page)
	}
	h := fams["sshfsm_test_duration_seconds"]
	one := map[string]string{"host": cleaned}
	if c := h.Sum("sshfsm_test_duration_seconds_count", one); c != 5 {
		t.Errorf("count %v, want 5", c)
	}
	if s := h.Sum("sshfsm_test_duration_seconds_sum", one); math.Abs(s-122.0061) > 1e-9 {
		t.Errorf("sum %v, want 122.0061", s)
	}
	for le, want := range map[string]float64{"0.0005": 1, "0.0025": 1, "0.005": 3, "1": 3, "2.5": 4, "60": 4, "+Inf": 5} {
		if got := h.Sum("sshfsm_test_duration_seconds_bucket", map[string]string{"host": cleaned, "le": le}); got != want {
			t.Errorf("bucket le=%s: %v, want %v", le, got, want)
		}
	}
	if len(fams["sshfsm_test_empty"].Samples) != 0 {
		t.Errorf("empty family has samples")
	}
}

// TestWriteRefuses: what a scraper would reject is an error, not a page.
func TestWriteRefuses(t *testing.T) {
	cases := map[string][]Family{
		`invalid metric name "sshfsm-x"`: {{Name: "sshfsm-x", Type: Gauge}},
		`invalid metric name "1x"`:       {{Name: "1x", Type: Gauge}},
		"declared twice":                 {{Name: "x", Type: Gauge}, {Name: "x", Type: Counter}},
		"unknown type":                   {{Name: "x", Type: "summary"}},
		"given twice":                    {{Name: "x", Type: Gauge, Samples: []Sample{{Labels: []Label{{"a", "1"}}}, {Labels: []Label{{"a", "1"}}}}}},
		`invalid label name "a:b"`:       {{Name: "x", Type: Gauge, Samples: []Sample{{Labels: []Label{{"a:b", "1"}}}}}},
		`invalid label name "le"`:        {{Name: "x", Type: Histogram, Samples: []Sample{{Labels: []Label{{"le", "1"}}}}}},
		`invalid label name "__x"`:       {{Name: "x", Type: Gauge, Samples: []Sample{{Labels: []Label{{"__x", "1"}}}}}},
	}
	for want, fams := range cases {
		err := Write(&bytes.Buffer{}, fams)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: error %v", want, err)
		}
	}
}

// TestLatencyBounds: a duration exactly on a bound counts in that bucket
// (le means less or equal); one past the last bound only in +Inf.
func TestLatencyBounds(t *testing.T) {
	var l Latency
	l.Observe(time.Millisecond)
	l.Observe(time.Millisecond + 1)
	l.Observe(time.Hour)
	b := l.Snapshot()
	at := func(sec float64) uint64 {
		for i, x := range b.Bounds {
			if x == sec {
				return b.Cumulative[i]
			}
		}
		t.Fatalf("no bound %v in %v", sec, b.Bounds)
		return 0
	}
	if at(0.0005) != 0 || at(0.001) != 1 || at(0.0025) != 2 || at(60) != 2 || b.Count != 3 {
		t.Errorf("buckets %v count %d", b.Cumulative, b.Count)
	}
}

// TestLatencyConcurrent: read while requests are observed, every snapshot
// is a histogram a scraper accepts: buckets never decrease and +Inf (the
// count) is at least the last bucket. Run with -race.
func TestLatencyConcurrent(t *testing.T) {
	var l Latency
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				l.Observe(time.Duration(i*(w+1)) * 37 * time.Microsecond)
			}
		}()
	}
	for range 200 {
		var merged Buckets
		merged.Add(&l)
		merged.Add(&l) // two channels of one host
		for _, b := range []Buckets{l.Snapshot(), merged} {
			for i := 1; i < len(b.Cumulative); i++ {
				if b.Cumulative[i] < b.Cumulative[i-1] {
					t.Fatalf("bucket %d decreases: %v", i, b.Cumulative)
				}
			}
			if last := b.Cumulative[len(b.Cumulative)-1]; b.Count < last {
				t.Fatalf("count %d below the last bucket %d", b.Count, last)
			}
		}
	}
	close(stop)
	wg.Wait()
	final := l.Snapshot()
	var twice Buckets
	twice.Add(&l)
	twice.Add(&l)
	if twice.Count != 2*final.Count || twice.Cumulative[3] != 2*final.Cumulative[3] {
		t.Errorf("merging two histograms: %+v, one is %+v", twice, final)
	}
}
