package config

import (
	"errors"
	"fmt"
	"math"
	"net"
	"strconv"
	"strings"
	"time"
)

func parseInt(v string, lo, hi int) (int, error) {
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("not an integer")
	}
	if n < int64(lo) || n > int64(hi) {
		return 0, fmt.Errorf("must be between %d and %d", lo, hi)
	}
	return int(n), nil
}

// parseSize parses a byte count with an optional K, M, G or T suffix
// (powers of 1024).
func parseSize(v string) (int64, error) {
	mult := int64(1)
	if i := strings.IndexAny(v, "KMGTkmgt"); i >= 0 && i == len(v)-1 {
		mult = 1 << (10 * (strings.IndexByte("KMGT", v[i]&^0x20) + 1))
		v = v[:i]
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("not a size (bytes, with an optional K, M, G or T suffix)")
	}
	if n > math.MaxInt64/mult {
		return 0, fmt.Errorf("too large")
	}
	return n * mult, nil
}

func parseOctal(v string) (uint32, error) {
	n, err := strconv.ParseUint(v, 8, 32)
	if err != nil {
		return 0, fmt.Errorf("not an octal number")
	}
	if n > 0o7777 {
		return 0, fmt.Errorf("must be at most 7777")
	}
	return uint32(n), nil
}

// parseSeconds reads a number of seconds such as 20, 0.5 or 1e-3.
func parseSeconds(v string, positive bool) (time.Duration, error) {
	f, err := strconv.ParseFloat(v, 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
		return 0, fmt.Errorf("not a number of seconds")
	}
	switch {
	case f < 0:
		return 0, fmt.Errorf("must not be negative")
	case positive && f == 0:
		return 0, fmt.Errorf("must be more than 0")
	case f > 1e6:
		return 0, fmt.Errorf("must be at most 1000000 seconds")
	}
	return time.Duration(f * float64(time.Second)), nil
}

// seconds writes d as parseSeconds reads it, e.g. "30" or "0.5".
func seconds(d time.Duration) string { return strconv.FormatFloat(d.Seconds(), 'f', -1, 64) }

// splitOptions splits the argument of -o at commas; a comma preceded by a
// backslash belongs to the value, as with libfuse.
func splitOptions(s string) []string {
	var out []string
	var cur strings.Builder
	for i := 0; i < len(s); i++ {
		switch {
		case s[i] == '\\' && i+1 < len(s):
			i++
			cur.WriteByte(s[i])
		case s[i] == ',':
			out = append(out, cur.String())
			cur.Reset()
		default:
			cur.WriteByte(s[i])
		}
	}
	return append(out, cur.String())
}

// splitWords splits a command into words like a shell does: blanks separate
// words, single and double quotes group, backslash escapes one character.
func splitWords(s string) ([]string, error) {
	var words []string
	var cur strings.Builder
	inWord := false
	var quote byte
	for i := 0; i < len(s); i++ {
		ch := s[i]
		switch {
		case quote != 0 && ch == quote:
			quote = 0
		case quote == '\'':
			cur.WriteByte(ch)
		case ch == '\\' && i+1 < len(s):
			i++
			cur.WriteByte(s[i])
			inWord = true
		case quote == 0 && (ch == '\'' || ch == '"'):
			quote = ch
			inWord = true
		case quote == 0 && (ch == ' ' || ch == '\t' || ch == '\n'):
			if inWord {
				words = append(words, cur.String())
				cur.Reset()
				inWord = false
			}
		default:
			cur.WriteByte(ch)
			inWord = true
		}
	}
	if quote != 0 {
		return nil, errors.New("unterminated quote")
	}
	if inWord {
		words = append(words, cur.String())
	}
	if len(words) == 0 {
		return nil, errors.New("needs a value")
	}
	return words, nil
}

// parseMetrics reads metrics=: unix:PATH, or HOST:PORT with a port that
// a scraper can be told (not 0).
func parseMetrics(v string) (Metrics, error) {
	if path, ok := strings.CutPrefix(v, "unix:"); ok {
		if path == "" {
			return Metrics{}, fmt.Errorf("unix: needs a socket path")
		}
		return Metrics{Network: "unix", Address: path}, nil
	}
	host, port, err := net.SplitHostPort(v)
	if err != nil {
		return Metrics{}, fmt.Errorf("expected HOST:PORT or unix:PATH")
	}
	if strings.ContainsAny(host, "/ ") {
		return Metrics{}, fmt.Errorf("bad host %q: expected HOST:PORT or unix:PATH", host)
	}
	if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
		return Metrics{}, fmt.Errorf("port %q: must be a number between 1 and 65535", port)
	}
	return Metrics{Network: "tcp", Address: v}, nil
}
