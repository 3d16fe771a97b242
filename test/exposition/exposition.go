// Package exposition is a strict reader of the Prometheus text exposition
// format (version 0.0.4), for tests: they check what a scraper would see
// of sshfsm's metrics page, not what the writer meant to write.
package exposition

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"sort"
	"strconv"
	"strings"
)

// Sample is one sample line.
type Sample struct {
	Name   string // as written: with _bucket, _sum, _count for histograms
	Labels map[string]string
	Order  []string // label names in the order written
	Value  float64
}

// Family is a family read back: its HELP, TYPE and samples.
type Family struct {
	Help, Type string
	Samples    []Sample
}

// Sum adds the values of the samples called name whose labels include
// every label of match.
func (f *Family) Sum(name string, match map[string]string) float64 {
	total := 0.0
next:
	for _, s := range f.Samples {
		if s.Name != name {
			continue
		}
		for k, v := range match {
			if s.Labels[k] != v {
				continue next
			}
		}
		total += s.Value
	}
	return total
}

// Parse reads a page into its families, by name, and their names in
// order. Every deviation from the format is an error: a sample before its
// family's HELP and TYPE, a family given twice, a sample of another
// family, a bad name or escape, a timestamp, a blank line.
func Parse(r io.Reader) (map[string]*Family, []string, error) {
	fams := map[string]*Family{}
	var order []string
	var cur string
	sc := bufio.NewScanner(r)
	sc.Buffer(nil, 1<<20)
	n := 0
	for sc.Scan() {
		n++
		line := sc.Text()
		fail := func(f string, a ...any) error {
			return fmt.Errorf("line %d %q: %s", n, line, fmt.Sprintf(f, a...))
		}
		switch {
		case line == "":
			return nil, nil, fail("blank line")
		case strings.HasPrefix(line, "# HELP "):
			name, help, ok := strings.Cut(line[len("# HELP "):], " ")
			if !ok || !validName(name, true) {
				return nil, nil, fail("bad HELP")
			}
			if _, dup := fams[name]; dup {
				return nil, nil, fail("family %s twice", name)
			}
			text, err := unescape(help, false)
			if err != nil {
				return nil, nil, fail("%v", err)
			}
			fams[name] = &Family{Help: text}
			order = append(order, name)
			cur = name
		case strings.HasPrefix(line, "# TYPE "):
			name, typ, ok := strings.Cut(line[len("# TYPE "):], " ")
			if !ok || name != cur || fams[cur].Type != "" {
				return nil, nil, fail("TYPE not right after the HELP of its family")
			}
			switch typ {
			case "counter", "gauge", "histogram":
			default:
				return nil, nil, fail("unknown type")
			}
			fams[cur].Type = typ
		case strings.HasPrefix(line, "#"):
			return nil, nil, fail("unexpected comment")
		default:
			s, err := parseSampleLine(line)
			if err != nil {
				return nil, nil, fail("%v", err)
			}
			f := fams[cur]
			if f == nil || f.Type == "" {
				return nil, nil, fail("sample before HELP and TYPE")
			}
			if !belongs(s.Name, cur, f.Type) {
				return nil, nil, fail("sample %s in family %s", s.Name, cur)
			}
			f.Samples = append(f.Samples, s)
		}
	}
	return fams, order, sc.Err()
}

func belongs(sample, family, typ string) bool {
	if typ != "histogram" {
		return sample == family
	}
	for _, suffix := range []string{"_bucket", "_sum", "_count"} {
		if sample == family+suffix {
			return true
		}
	}
	return false
}

// parseSampleLine reads name{l="v",...} value.
func parseSampleLine(line string) (Sample, error) {
	s := Sample{Labels: map[string]string{}}
	i := strings.IndexAny(line, "{ ")
	if i < 0 {
		return s, fmt.Errorf("no value")
	}
	s.Name = line[:i]
	if !validName(s.Name, true) {
		return s, fmt.Errorf("bad metric name")
	}
	rest := line[i:]
	if rest[0] == '{' {
		rest = rest[1:]
		for {
			eq := strings.Index(rest, `="`)
			if eq < 0 {
				return s, fmt.Errorf("bad label")
			}
			name := rest[:eq]
			if !validName(name, false) {
				return s, fmt.Errorf("bad label name %q", name)
			}
			if _, dup := s.Labels[name]; dup {
				return s, fmt.Errorf("label %s twice", name)
			}
			rest = rest[eq+2:]
			end := closingQuote(rest)
			if end < 0 {
				return s, fmt.Errorf("unterminated label value")
			}
			v, err := unescape(rest[:end], true)
			if err != nil {
				return s, err
			}
			s.Labels[name] = v
			s.Order = append(s.Order, name)
			rest = rest[end+1:]
			if strings.HasPrefix(rest, ",") {
				rest = rest[1:]
				continue
			}
			if !strings.HasPrefix(rest, "}") {
				return s, fmt.Errorf("expected , or } after a label")
			}
			rest = rest[1:]
			break
		}
	}
	if !strings.HasPrefix(rest, " ") || strings.Contains(rest[1:], " ") {
		return s, fmt.Errorf("expected one space and a value (no timestamp)")
	}
	v, err := parseValue(rest[1:])
	s.Value = v
	return s, err
}

// closingQuote finds the unescaped " ending a label value.
func closingQuote(s string) int {
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '\\':
			i++
		case '"':
			return i
		}
	}
	return -1
}

// unescape undoes the escapes of a label value (\\, \", \n) or of a help
// text (\\, \n); any other backslash, a raw line feed or invalid UTF-8 is
// an error.
func unescape(s string, label bool) (string, error) {
	if !strings.ContainsRune(s, '\\') && !strings.ContainsRune(s, '\n') && isUTF8(s) {
		return s, nil
	}
	if !isUTF8(s) {
		return "", fmt.Errorf("invalid UTF-8")
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == '\n' {
			return "", fmt.Errorf("raw line feed")
		}
		if c != '\\' {
			b.WriteByte(c)
			continue
		}
		i++
		if i == len(s) {
			return "", fmt.Errorf("trailing backslash")
		}
		switch {
		case s[i] == '\\':
			b.WriteByte('\\')
		case s[i] == 'n':
			b.WriteByte('\n')
		case s[i] == '"' && label:
			b.WriteByte('"')
		default:
			return "", fmt.Errorf("bad escape \\%c", s[i])
		}
	}
	return b.String(), nil
}

func isUTF8(s string) bool { return strings.ToValidUTF8(s, "") == s }

func parseValue(s string) (float64, error) {
	switch s {
	case "+Inf":
		return math.Inf(1), nil
	case "-Inf":
		return math.Inf(-1), nil
	case "NaN":
		return math.NaN(), nil
	}
	return strconv.ParseFloat(s, 64)
}

// CheckHistograms checks every series of every histogram family: le
// bounds increasing and ending with +Inf, counts never decreasing, the
// +Inf bucket equal to _count, and a _sum.
func CheckHistograms(fams map[string]*Family) error {
	for name, f := range fams {
		if f.Type != "histogram" {
			continue
		}
		type series struct {
			les    []float64
			counts []float64
			sum    *float64
			count  *float64
		}
		all := map[string]*series{}
		var keys []string
		for _, s := range f.Samples {
			key := labelKey(s.Labels, "le")
			se := all[key]
			if se == nil {
				se = &series{}
				all[key] = se
				keys = append(keys, key)
			}
			v := s.Value
			switch s.Name {
			case name + "_bucket":
				le, ok := s.Labels["le"]
				if !ok || s.Order[len(s.Order)-1] != "le" {
					return fmt.Errorf("%s{%s}: bucket without le as last label", name, key)
				}
				b, err := parseValue(le)
				if err != nil {
					return fmt.Errorf("%s{%s}: le %q: %v", name, key, le, err)
				}
				se.les, se.counts = append(se.les, b), append(se.counts, v)
			case name + "_sum":
				se.sum = &v
			case name + "_count":
				se.count = &v
			}
		}
		for _, key := range keys {
			se := all[key]
			if len(se.les) == 0 || se.sum == nil || se.count == nil {
				return fmt.Errorf("%s{%s}: buckets, sum or count missing", name, key)
			}
			for i := 1; i < len(se.les); i++ {
				if se.les[i] <= se.les[i-1] {
					return fmt.Errorf("%s{%s}: le %v after %v", name, key, se.les[i], se.les[i-1])
				}
				if se.counts[i] < se.counts[i-1] {
					return fmt.Errorf("%s{%s}: bucket le=%v counts %v, less than the %v before it", name, key, se.les[i], se.counts[i], se.counts[i-1])
				}
			}
			last := len(se.les) - 1
			if !math.IsInf(se.les[last], 1) {
				return fmt.Errorf("%s{%s}: no +Inf bucket last", name, key)
			}
			if se.counts[last] != *se.count {
				return fmt.Errorf("%s{%s}: +Inf bucket %v, count %v", name, key, se.counts[last], *se.count)
			}
		}
	}
	return nil
}

// labelKey is a series' labels but skip, as one comparable string.
func labelKey(ls map[string]string, skip string) string {
	var parts []string
	for k, v := range ls {
		if k != skip {
			parts = append(parts, k+"="+strconv.Quote(v))
		}
	}
	sort.Strings(parts)
	return strings.Join(parts, ",")
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
