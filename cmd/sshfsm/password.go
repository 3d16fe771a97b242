package main

import (
	"fmt"
	"io"
	"os"
	"strings"

	"golang.org/x/sys/unix"

	"sshfsm/internal/askpass"
	"sshfsm/internal/config"
)

// maxPassword bounds what is read as a password.
const maxPassword = 4096

// readPassword fills cfg.SSH.Password from in when password_stdin asks for
// it: the first line, without its line end. On a terminal it prompts on
// prompt and does not echo what is typed.
func readPassword(cfg *config.Config, in *os.File, prompt io.Writer) error {
	if !cfg.SSH.PasswordStdin {
		return nil
	}
	if t, err := unix.IoctlGetTermios(int(in.Fd()), unix.TCGETS); err == nil {
		fmt.Fprint(prompt, "Password: ")
		quiet := *t
		quiet.Lflag &^= unix.ECHO
		if unix.IoctlSetTermios(int(in.Fd()), unix.TCSETS, &quiet) == nil {
			defer func() {
				unix.IoctlSetTermios(int(in.Fd()), unix.TCSETS, t)
				fmt.Fprintln(prompt)
			}()
		}
	}
	line, err := readLine(in)
	if err != nil {
		return config.Errorf(config.ExitUsage, "password_stdin: cannot read the password: %v", err)
	}
	if line == "" {
		return config.Errorf(config.ExitUsage, "password_stdin: no password on standard input")
	}
	cfg.SSH.Password = line
	return nil
}

// readLine reads up to the first line end a byte at a time, so that
// nothing after the password is taken from a shared standard input.
func readLine(r io.Reader) (string, error) {
	var b strings.Builder
	buf := make([]byte, 1)
	for b.Len() < maxPassword {
		n, err := r.Read(buf)
		if n == 1 {
			if buf[0] == '\n' {
				break
			}
			b.WriteByte(buf[0])
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			return "", err
		}
	}
	return strings.TrimSuffix(b.String(), "\r"), nil
}

// runAskpass answers ssh's question when this run is its SSH_ASKPASS
// program (internal/askpass); ok is false otherwise.
func runAskpass(args []string) (code int, ok bool) {
	if !askpass.Active(os.Getenv) {
		return 0, false
	}
	return askpass.Run(args, os.Getenv, os.Stdout), true
}
