// Package termtext escapes text from a server before it reaches a
// terminal, where an escape sequence could rewrite the screen, the window
// title or the clipboard.
package termtext

import (
	"fmt"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Printable returns s with every byte that could act on a terminal escaped
// as Go's %q would (\x1b, \n, \u202e, \\), without the quotes: control
// characters, invalid UTF-8 and non-printing runes.
func Printable(s string) string {
	if isPrintable(s) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case r == '\\':
			b.WriteString(`\\`)
		case unicode.IsPrint(r):
			b.WriteString(s[i : i+n])
		default:
			q := strconv.QuoteRune(r)
			b.WriteString(q[1 : len(q)-1])
		}
		i += n
	}
	return b.String()
}

// isPrintable reports whether Printable would return s unchanged.
func isPrintable(s string) bool {
	for _, r := range s {
		if r == utf8.RuneError || r == '\\' || !unicode.IsPrint(r) {
			return false
		}
	}
	return true
}
