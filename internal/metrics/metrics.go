// Package metrics serves a mount's counters to Prometheus: latency
// histograms cheap enough for every request, the text exposition format
// (version 0.0.4) written by hand, and the HTTP endpoint that serves it.
// It counts nothing else itself: the counters live with the code that
// owns them (transport, cache, inflight) and are read at each scrape.
package metrics

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Type is the kind of a metric family, as its # TYPE line says.
type Type string

// Types of families.
const (
	Counter   Type = "counter"
	Gauge     Type = "gauge"
	Histogram Type = "histogram"
)

// Label is one label of a sample. Values may be any text (host names
// come from the user and the servers): Write escapes them.
type Label struct {
	Name, Value string
}

// Sample is one series of a family: a value, or a histogram for a
// family of type Histogram.
type Sample struct {
	Labels []Label
	Value  float64
	Hist   Buckets
}

// Family is a metric: its name, help text, type and series.
type Family struct {
	Name    string
	Help    string
	Type    Type
	Samples []Sample
}

// Add appends a series of value v.
func (f *Family) Add(v float64, labels ...Label) {
	f.Samples = append(f.Samples, Sample{Labels: labels, Value: v})
}

// AddHistogram appends a histogram series.
func (f *Family) AddHistogram(b Buckets, labels ...Label) {
	f.Samples = append(f.Samples, Sample{Labels: labels, Hist: b})
}

// Write writes fams in the text exposition format. Names are the
// program's own: an invalid one, a family declared twice or a series
// given twice is an error (Prometheus would reject the whole scrape).
func Write(w io.Writer, fams []Family) error {
	bw := bufio.NewWriter(w)
	seen := map[string]bool{}
	for _, f := range fams {
		if err := checkFamily(f, seen); err != nil {
			return err
		}
		fmt.Fprintf(bw, "# HELP %s %s\n# TYPE %s %s\n", f.Name, escapeHelp(f.Help), f.Name, f.Type)
		series := map[string]bool{}
		for _, s := range f.Samples {
			labels, err := labelText(s.Labels)
			if err != nil {
				return fmt.Errorf("metric %s: %w", f.Name, err)
			}
			if series[labels] {
				return fmt.Errorf("metric %s: series {%s} given twice", f.Name, labels)
			}
			series[labels] = true
			if f.Type == Histogram {
				writeHistogram(bw, f.Name, labels, s.Hist)
				continue
			}
			writeSample(bw, f.Name, labels, s.Value)
		}
	}
	return bw.Flush()
}

func checkFamily(f Family, seen map[string]bool) error {
	if !validName(f.Name, true) {
		return fmt.Errorf("invalid metric name %q", f.Name)
	}
	if seen[f.Name] {
		return fmt.Errorf("metric %s declared twice", f.Name)
	}
	seen[f.Name] = true
	switch f.Type {
	case Counter, Gauge, Histogram:
	default:
		return fmt.Errorf("metric %s: unknown type %q", f.Name, f.Type)
	}
	return nil
}

func writeSample(w *bufio.Writer, name, labels string, v float64) {
	w.WriteString(name)
	if labels != "" {
		w.WriteString("{" + labels + "}")
	}
	w.WriteString(" " + formatValue(v) + "\n")
}

// writeHistogram writes the cumulative buckets, +Inf (the count), the
// sum and the count of one series.
func writeHistogram(w *bufio.Writer, name, labels string, h Buckets) {
	with := func(le string) string {
		l := `le="` + le + `"`
		if labels != "" {
			l = labels + "," + l
		}
		return l
	}
	for i, b := range h.Bounds {
		writeSample(w, name+"_bucket", with(formatValue(b)), float64(h.Cumulative[i]))
	}
	writeSample(w, name+"_bucket", with("+Inf"), float64(h.Count))
	writeSample(w, name+"_sum", labels, h.Sum)
	writeSample(w, name+"_count", labels, float64(h.Count))
}

// labelText renders labels as name="value",... with values escaped.
func labelText(ls []Label) (string, error) {
	var b strings.Builder
	for i, l := range ls {
		if !validName(l.Name, false) || strings.HasPrefix(l.Name, "__") || l.Name == "le" {
			return "", fmt.Errorf("invalid label name %q", l.Name)
		}
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(l.Name + `="` + escapeLabel(l.Value) + `"`)
	}
	return b.String(), nil
}

// validName: [a-zA-Z_:][a-zA-Z0-9_:]* for metrics, without ':' for labels.
func validName(s string, colon bool) bool {
	if s == "" {
		return false
	}
	for i, c := range s {
		switch {
		case c == '_', c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z':
		case c == ':' && colon:
		case c >= '0' && c <= '9' && i > 0:
		default:
			return false
		}
	}
	return true
}

// escapeLabel escapes a label value as the format requires (backslash,
// double quote, line feed). Bytes that are not UTF-8 become U+FFFD: the
// format is UTF-8 and a scraper would reject the whole page.
func escapeLabel(s string) string {
	s = strings.ToValidUTF8(s, string(utf8.RuneError))
	return strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`).Replace(s)
}

// escapeHelp escapes a help text (backslash and line feed).
func escapeHelp(s string) string {
	s = strings.ToValidUTF8(s, string(utf8.RuneError))
	return strings.NewReplacer(`\`, `\\`, "\n", `\n`).Replace(s)
}

func formatValue(v float64) string {
	switch {
	case math.IsInf(v, 1):
		return "+Inf"
	case math.IsInf(v, -1):
		return "-Inf"
	case math.IsNaN(v):
		return "NaN"
	}
	return strconv.FormatFloat(v, 'g', -1, 64)
}
