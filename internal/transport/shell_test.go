package transport

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// loginShells are the shells sshd may run a command with, as "name args":
// each is run as SHELL -c LINE, the way sshd runs it. scripts/test.sh
// installs them all.
var loginShells = [][]string{
	{"sh"}, {"bash"}, {"dash"}, {"zsh"}, {"ksh"}, {"mksh"}, {"yash"}, {"posh"},
	{"busybox", "sh"}, {"fish"}, {"tcsh"}, {"csh"}, {"rc"},
}

// posixShells are the shells a server's sh may be. Not yash: it cannot
// read a script holding bytes that are not text in its locale.
var posixShells = [][]string{
	{"bash"}, {"dash"}, {"zsh"}, {"ksh"}, {"mksh"}, {"posh"}, {"busybox", "sh"},
}

// injections are names meant to break out of some shell's quoting: each
// would create the file PWNED if any shell ran part of it.
var injections = []string{
	`x\'; touch PWNED #`, `x\'; id > PWNED #`, `'; touch PWNED; '`, `"; touch PWNED; "`,
	`$(touch PWNED)`, "`touch PWNED`", "a\ntouch PWNED\n", "a'\ntouch PWNED\n'", `\\'; touch PWNED #`,
	`\0047; touch PWNED #`, `\047; touch PWNED #`, `\x27; touch PWNED #`, `%b\0047`,
	"!touch PWNED", `{touch,PWNED}`, `$'\x27'; touch PWNED #`, `^touch PWNED`,
}

// printArgsScript returns the script that prints each of args followed by a NUL.
func printArgsScript(args []string) string {
	var b strings.Builder
	b.WriteString(`printf '%s\0'`)
	for _, a := range args {
		b.WriteString(" " + shellQuote(a))
	}
	return b.String()
}

// runLine runs line as sshd would with shell as the login shell, in dir,
// with a PATH whose sh is sh[0] (nil: the system's).
func runLine(t *testing.T, shell []string, line, dir string, sh []string) ([]byte, error) {
	t.Helper()
	cmd := exec.Command(shell[0], append(shell[1:], "-c", line)...)
	cmd.Dir = dir
	path := os.Getenv("PATH")
	if sh != nil {
		bin := filepath.Join(dir, "bin")
		if err := os.Mkdir(bin, 0o755); err != nil {
			t.Fatal(err)
		}
		wrapper := "#!/bin/sh\nexec " + strings.Join(sh, " ") + ` "$@"` + "\n"
		if err := os.WriteFile(filepath.Join(bin, "sh"), []byte(wrapper), 0o755); err != nil {
			t.Fatal(err)
		}
		path = bin + ":" + path
	}
	cmd.Env = []string{"HOME=" + dir, "PATH=" + path, "LC_ALL=C.UTF-8", "XDG_CONFIG_HOME=" + dir, "XDG_DATA_HOME=" + dir}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Logf("%s: %v: %s", shell, err, stderr.String())
	}
	return out, err
}

// hostileArgs are every name the line must carry intact. The longest,
// a path of PATH_MAX quotes, is five times as long escaped: longer than
// a word may be in csh (about 8 KiB).
func hostileArgs() []string {
	return append(append([]string{"-n", "-e", "--", "-", "%s", `\c`, "\xff\xfe\x80", "a\n\n",
		strings.Repeat("'", 4095)}, hostileNames...), injections...)
}

// checkArgs runs the line printing args and checks that the script saw
// exactly args and that nothing else ran.
func checkArgs(t *testing.T, shell, sh []string, args []string) {
	t.Helper()
	line, err := remoteLine(printArgsScript(args))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	out, err := runLine(t, shell, line, dir, sh)
	if err != nil {
		t.Fatalf("login shell %s, sh %s: %v", shell, sh, err)
	}
	want := strings.Join(args, "\x00") + "\x00"
	if string(out) != want {
		got := strings.Split(strings.TrimSuffix(string(out), "\x00"), "\x00")
		t.Errorf("login shell %s, sh %s: the script received %d arguments, want %d:\n got %q\nwant %q",
			shell, sh, len(got), len(args), got, args)
	}
	if _, err := os.Stat(filepath.Join(dir, "PWNED")); err == nil {
		t.Errorf("login shell %s, sh %s: a command hidden in a name ran", shell, sh)
	}
}

// Whatever the login shell, the script remoteLine carries reaches sh with
// every name intact, and no part of a name runs.
func TestRemoteLineUnderEveryLoginShell(t *testing.T) {
	for _, shell := range loginShells {
		t.Run(strings.Join(shell, "-"), func(t *testing.T) {
			if _, err := exec.LookPath(shell[0]); err != nil {
				t.Skipf("%s is not installed (scripts/test.sh installs it)", shell[0])
			}
			checkArgs(t, shell, nil, hostileArgs())
		})
	}
}

// Whatever the server's sh, it decodes the script exactly.
func TestRemoteLineUnderEveryServerSh(t *testing.T) {
	for _, sh := range posixShells {
		t.Run(strings.Join(sh, "-"), func(t *testing.T) {
			if _, err := exec.LookPath(sh[0]); err != nil {
				t.Skipf("%s is not installed (scripts/test.sh installs it)", sh[0])
			}
			checkArgs(t, []string{"bash"}, sh, hostileArgs())
		})
	}
}

// The line itself holds nothing but the fixed alphabet, whatever the
// script, and a backslash only before the 0 of an escape.
func TestRemoteLineAlphabet(t *testing.T) {
	var all []byte
	for c := 1; c < 256; c++ {
		all = append(all, byte(c))
	}
	line, err := remoteLine(string(all))
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < len(line); i++ {
		c := line[i]
		switch {
		case isPlainByte(c), strings.IndexByte(` '"$()%@`, c) >= 0:
		case c == '\\' && i+1 < len(line) && line[i+1] == '0':
		default:
			t.Fatalf("byte %q at %d of the line", c, i)
		}
	}
	if _, err := remoteLine("a\x00b"); err == nil {
		t.Error("a script with a NUL was accepted")
	}
}
