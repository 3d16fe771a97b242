package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"sshfsm/internal/config"
)

// fakeSSH is an ssh_command that asks SSH_ASKPASS what ssh would ask a user
// who logs in to ACCOUNT with a password through a jump host: first
// whether to trust a new host key, which must be left unanswered, then
// the jump host's password (the ssh of a ProxyJump inherits the
// environment), which must be left unanswered too, also when the jump
// host's account has the destination's name (prompts do not name the
// port): a process running the same program as the one asking, between it
// and sshfsm, is the ssh it is a jump host of. Then the password of
// ACCOUNT, which must be password. Like ssh, it runs SSH_ASKPASS as a
// child of its own. It then logs the login in LOG and runs the real ssh,
// which logs in with the test host's key. ssh -G, which only prints the
// configuration, runs the real ssh at once.
const fakeSSH = `#!/bin/sh
for a in "$@"; do [ "$a" = -G ] && exec ssh "$@"; done
[ "$SSH_ASKPASS_REQUIRE" = force ] || { echo "fake-ssh: SSH_ASKPASS_REQUIRE is not force" >&2; exit 255; }
for a in "$@"; do [ "$a" = -oBatchMode=yes ] && { echo "fake-ssh: BatchMode forbids the password prompt" >&2; exit 255; }; done
if "$SSH_ASKPASS" "Are you sure you want to continue connecting (yes/no/[fingerprint])? " >/dev/null; then
	echo "fake-ssh: askpass answered a host key question" >&2; exit 255
fi
for prompt in "jumper@gateway's password: " "(jumper@gateway) Password: " "Password: "; do
	if "$SSH_ASKPASS" "$prompt" >/dev/null; then
		echo "fake-ssh: askpass answered a jump host's prompt: $prompt" >&2; exit 255
	fi
done
if sh -c '"$SSH_ASKPASS" "$1" >/dev/null; exit $?' jump-ssh "ACCOUNT's password: "; then
	echo "fake-ssh: askpass answered the destination's prompt to a jump host's ssh" >&2; exit 255
fi
"$SSH_ASKPASS" "ACCOUNT's password: " >"$0.pw" || { echo "fake-ssh: askpass gave no password" >&2; exit 255; }
pw=$(cat "$0.pw")
[ "$pw" = PASSWORD ] || { echo "ACCOUNT: Permission denied (password)." >&2; exit 255; }
echo login >> LOG
exec ssh "$@"
`

// TestPasswordStdin: the password read from standard input answers ssh's
// password prompt at the mount and again when the mount reconnects, and
// no jump host's; a wrong password and a missing one fail with one clear
// line.
func TestPasswordStdin(t *testing.T) {
	h, ssh := sshHost(t)
	if err := os.WriteFile(filepath.Join(h.Dir, "f"), []byte("data"), 0o644); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	logins := filepath.Join(dir, "logins")
	const password = `pa ss"word$`
	account := h.User + "@" + h.Addr // as ssh's prompts name it: the HostName of the alias
	script := strings.NewReplacer("LOG", logins, "PASSWORD", `'`+password+`'`, "ACCOUNT", account).Replace(fakeSSH)
	wrapper := filepath.Join(dir, "fake-ssh")
	if err := os.WriteFile(wrapper, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	args := func(mnt string) []string {
		return append(append([]string(nil), ssh...),
			"-o", "password_stdin,max_conns=1,ssh_command="+wrapper, h.Alias+":"+h.Dir, mnt)
	}
	count := func() int {
		b, _ := os.ReadFile(logins)
		return strings.Count(string(b), "login\n")
	}

	mnt := mountpoint(t)
	r := sshfsmIn(t, 20*time.Second, password+"\n", args(mnt)...)
	if r.code != 0 {
		t.Fatalf("mount: exit %d, stderr %q", r.code, r.stderr)
	}
	if b, err := os.ReadFile(filepath.Join(mnt, "f")); err != nil || string(b) != "data" {
		t.Fatalf("read through the mount: %q, %v", b, err)
	}
	first := count()
	if first < 1 {
		t.Fatalf("%d logins with the password", first)
	}

	// The server goes away and comes back: the mount logs in again.
	if err := h.Restart(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		b, err := os.ReadFile(filepath.Join(mnt, "f"))
		if err == nil && string(b) == "data" && count() > first {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after the restart: read %q, %v; %d logins, %d before", b, err, count(), first)
		}
		time.Sleep(100 * time.Millisecond)
	}

	bad := sshfsmIn(t, 20*time.Second, "wrong\n", args(mountpoint(t))...)
	expectFailure(t, bad, config.ExitAuth, "Permission denied (password)")
	none := sshfsm(t, 20*time.Second, args(mountpoint(t))...)
	expectFailure(t, none, config.ExitUsage, "password_stdin: no password on standard input")
}

// TestPasswordStdinDelayConnect: with delay_connect, the password read
// from standard input at mount answers ssh's prompt at the first access,
// after the mount has left the terminal; the mount itself logs in nowhere.
func TestPasswordStdinDelayConnect(t *testing.T) {
	h, ssh := sshHost(t)
	if err := os.WriteFile(filepath.Join(h.Dir, "f"), []byte("data"), 0o644); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	logins := filepath.Join(dir, "logins")
	const password = `pa ss"word$`
	account := h.User + "@" + h.Addr
	script := strings.NewReplacer("LOG", logins, "PASSWORD", `'`+password+`'`, "ACCOUNT", account).Replace(fakeSSH)
	wrapper := filepath.Join(dir, "fake-ssh")
	if err := os.WriteFile(wrapper, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	mnt := mountpoint(t)
	r := sshfsmIn(t, 20*time.Second, password+"\n", append(append([]string(nil), ssh...),
		"-o", "delay_connect,password_stdin,max_conns=1,ssh_command="+wrapper, h.Alias+":"+h.Dir, mnt)...)
	if r.code != 0 {
		t.Fatalf("mount: exit %d, stderr %q", r.code, r.stderr)
	}
	if b, err := os.ReadFile(logins); len(b) != 0 {
		t.Fatalf("logins at mount: %q, %v; want none", b, err)
	}
	if b, err := os.ReadFile(filepath.Join(mnt, "f")); err != nil || string(b) != "data" {
		t.Fatalf("read through the mount: %q, %v", b, err)
	}
	if b, _ := os.ReadFile(logins); strings.Count(string(b), "login\n") != 1 {
		t.Fatalf("logins after the first access: %q; want one", b)
	}
}
