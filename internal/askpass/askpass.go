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
// The environment also reaches every program ssh starts: the ssh of a
// ProxyJump or a ProxyCommand asks the same askpass program for the jump
// host's password, and must not be given the destination's (a jump host
// would learn it). OpenSSH names the account in each password prompt,
// "user@host's password: " and "(user@host) Password: " (keyboard-
// interactive, OpenSSH 8.4 and later, as SSH_ASKPASS_REQUIRE=force is), so
// only a prompt naming the destination's user@host is answered, and only
// when an ssh that sshfsm started asks (procs.go).
//
// The password lives in the environment of the ssh processes, which only
// their user (and root) can read, as they can read this process's memory.
package askpass

import (
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
)

// Environment variables: modeEnv marks a run as ssh's askpass program,
// passwordEnv holds the password, destEnv the user@host it is for,
// ownerEnv the process id of the sshfsm that starts ssh.
const (
	modeEnv     = "SSHFSM_ASKPASS"
	passwordEnv = "SSHFSM_ASKPASS_PASSWORD"
	destEnv     = "SSHFSM_ASKPASS_DEST"
	ownerEnv    = "SSHFSM_ASKPASS_OWNER"
)

// Env returns base with what makes ssh ask exe, this program, for
// password and nothing else on the terminal (SSH_ASKPASS_REQUIRE=force
// needs OpenSSH 8.4 or later). dest is the account the password is for,
// user@host as ssh's prompts name it (Destination). The calling process
// is to start ssh with it.
func Env(base []string, exe, password, dest string) []string {
	env := make([]string, 0, len(base)+6)
	for _, kv := range base {
		k, _, _ := strings.Cut(kv, "=")
		switch k {
		case "SSH_ASKPASS", "SSH_ASKPASS_REQUIRE", modeEnv, passwordEnv, destEnv, ownerEnv:
			continue
		}
		env = append(env, kv)
	}
	return append(env, "SSH_ASKPASS="+exe, "SSH_ASKPASS_REQUIRE=force",
		modeEnv+"=1", passwordEnv+"="+password, destEnv+"="+dest, ownerEnv+"="+strconv.Itoa(os.Getpid()))
}

// Destination is the account ssh's password prompts name for a connection
// to host (HostKeyAlias when set, else the HostName ssh resolved) as user.
func Destination(user, host string) string { return user + "@" + host }

// Active reports whether this run is ssh's askpass program, from the
// environment getenv reads.
func Active(getenv func(string) string) bool { return getenv(modeEnv) == "1" }

// Run answers the question ssh asks in args (its one argument, the
// prompt) on out, and returns the exit status: 0 with the password for a
// password prompt of the destination asked by an ssh that sshfsm started,
// 1 (no answer) for anything else.
func Run(args []string, getenv func(string) string, out io.Writer) int {
	return run(args, getenv, out, procFS{}, os.Getppid())
}

// run is Run for the question of asker, in the process tree p.
func run(args []string, getenv func(string) string, out io.Writer, p procs, asker int) int {
	if len(args) != 1 || !isDestinationPasswordPrompt(args[0], getenv(destEnv)) {
		return 1
	}
	owner, err := strconv.Atoi(getenv(ownerEnv))
	if err != nil || !askedByOwnSSH(p, owner, asker) {
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

// isDestinationPasswordPrompt reports whether prompt asks for the
// password of dest: OpenSSH's "user@host's password: " (password
// authentication), or "(user@host) " followed by a password prompt of the
// server (keyboard-interactive). A prompt naming no account, or another,
// may come from the ssh of a jump host and gets no answer.
func isDestinationPasswordPrompt(prompt, dest string) bool {
	if dest == "" {
		return false
	}
	if strings.TrimRight(prompt, " ") == dest+"'s password:" {
		return true
	}
	rest, ok := strings.CutPrefix(prompt, "("+dest+") ")
	return ok && isPasswordPrompt(rest)
}

// isPasswordPrompt: "Password: ", "Password for alice@EXAMPLE.ORG: " ask
// for a password; "Enter passphrase for key …", "Are you sure you want to
// continue connecting (yes/no/…)?", "Verification code: ", "New password: "
// do not.
func isPasswordPrompt(prompt string) bool {
	p := strings.ToLower(prompt)
	return strings.Contains(p, "password") && !strings.Contains(p, "new password")
}
