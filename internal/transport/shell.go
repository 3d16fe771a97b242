package transport

import (
	"errors"
	"strings"
)

// sshd runs a remote command through the user's login shell, which may be
// any shell: bash, dash, zsh, but also fish, tcsh or rc, each with its own
// quoting rules (in fish, \' inside single quotes is an escaped quote). A
// path quoted for one shell can end a quoted word in another and run the
// rest of the name as a command. So no login shell ever sees a script of
// ours, nor a path in it: remoteLine wraps the POSIX script in a fixed
// line, `exec sh -c '...' sh '...' ...`, whose arguments to sh vary only
// in runs of letters, digits, "_./-" and \0NNN escapes, each in single
// quotes. Every shell above reads it as the same words, and sh, whose
// quoting the paths in the script are written for (shellQuote), decodes
// and runs the script.

// errNULInScript refuses a script no shell can carry (a path with a NUL,
// which no server file has).
var errNULInScript = errors.New("remote command contains a NUL byte")

// remoteLine returns the command line that makes any login shell run
// script, a POSIX sh script, with sh. The script travels as the arguments
// of printf %b, which prints them one after another, each byte outside
// [A-Za-z0-9_./-] written as \0NNN: inside the single quotes no shell then
// finds anything to interpret (fish's only escapes there, \\ and \',
// cannot occur: every backslash is followed by 0). The arguments are
// pieces of at most maxWord bytes, as csh refuses a longer word.
func remoteLine(script string) (string, error) {
	if strings.IndexByte(script, 0) >= 0 {
		return "", errNULInScript
	}
	var line strings.Builder
	line.WriteString(`exec sh -c 'eval "$(printf %b "$@")"' sh`)
	for _, w := range octalEscape(script, maxWord) {
		line.WriteString(" '" + w + "'")
	}
	return line.String(), nil
}

// maxWord bounds each word of the line: csh fails with "Word too long"
// past about 8 KiB.
const maxWord = 4096

// octalEscape writes every byte of s outside [A-Za-z0-9_./-] as printf %b's
// \0NNN, in pieces of at most limit bytes that split no escape.
func octalEscape(s string, limit int) []string {
	var words []string
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if b.Len()+len(`\0NNN`) > limit {
			words = append(words, b.String())
			b.Reset()
		}
		if isPlainByte(c) {
			b.WriteByte(c)
			continue
		}
		b.WriteString(`\0`)
		b.WriteByte('0' + c>>6)
		b.WriteByte('0' + c>>3&7)
		b.WriteByte('0' + c&7)
	}
	return append(words, b.String())
}

// isPlainByte reports whether c means itself to every shell, quoted or
// not.
func isPlainByte(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' ||
		c == '_' || c == '.' || c == '/' || c == '-'
}

// shellQuote quotes s as one word for a POSIX shell: the server's sh, which
// reads the scripts remoteLine carries; never for the login shell.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
