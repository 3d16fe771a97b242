// Package askpass gives ssh a password read once (password_stdin): every
// ssh we start gets this program as its SSH_ASKPASS, and the password in
// its environment, so that the first connection and every reconnection
// authenticate without a terminal.
//
// ssh runs the askpass program for every question it has, not only for
// passwords. Only password prompts are answered; any other question (an
// unknown host key, a key's passphrase, a one-time code) gets no answer,
// so ssh's decisions, host key checking first, stay as strict as without
// a password.
//
// The password lives in the environment of the ssh processes, which only
// their user (and root) can read, as they can read this process's memory.
package askpass

import (
	"fmt"
	"io"
	"strings"
)

// Environment variables: modeEnv marks a run as ssh's askpass program,
// passwordEnv holds the password.
const (
	modeEnv     = "SSHFSM_ASKPASS"
	passwordEnv = "SSHFSM_ASKPASS_PASSWORD"
)

// Env returns base with what makes ssh ask exe, this program, for
// password and nothing else on the terminal (SSH_ASKPASS_REQUIRE=force
// needs OpenSSH 8.4 or later).
func Env(base []string, exe, password string) []string {
	env := make([]string, 0, len(base)+4)
	for _, kv := range base {
		k, _, _ := strings.Cut(kv, "=")
		switch k {
		case "SSH_ASKPASS", "SSH_ASKPASS_REQUIRE", modeEnv, passwordEnv:
			continue
		}
		env = append(env, kv)
	}
	return append(env, "SSH_ASKPASS="+exe, "SSH_ASKPASS_REQUIRE=force",
		modeEnv+"=1", passwordEnv+"="+password)
}

// Active reports whether this run is ssh's askpass program, from the
// environment getenv reads.
func Active(getenv func(string) string) bool { return getenv(modeEnv) == "1" }

// Run answers the question ssh asks in args (its one argument, the
// prompt) on out, and returns the exit status: 0 with the password for a
// password prompt, 1 (no answer) for anything else.
func Run(args []string, getenv func(string) string, out io.Writer) int {
	if len(args) != 1 || !isPasswordPrompt(args[0]) {
		return 1
	}
	pw := getenv(passwordEnv)
	if pw == "" {
		return 1
	}
	if _, err := fmt.Fprintln(out, pw); err != nil {
		return 1
	}
	return 0
}

// isPasswordPrompt: "user@host's password: ", "Password: ", "(user@host)
// Password: " (keyboard-interactive) ask for a password; "Enter passphrase
// for key …", "Are you sure you want to continue connecting (yes/no/…)?",
// "Verification code: " do not.
func isPasswordPrompt(prompt string) bool {
	p := strings.ToLower(prompt)
	return strings.Contains(p, "password") && !strings.Contains(p, "new password")
}
