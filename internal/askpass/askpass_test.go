package askpass

import (
	"bytes"
	"slices"
	"testing"
)

func TestRunAnswersOnlyPasswordPrompts(t *testing.T) {
	env := map[string]string{modeEnv: "1", passwordEnv: "s3cret pass", destEnv: "alice@host1"}
	getenv := func(k string) string { return env[k] }
	for _, tc := range []struct {
		prompt string
		answer bool
	}{
		{"alice@host1's password: ", true},
		{"(alice@host1) Password: ", true},
		{"(alice@host1) Password for alice@EXAMPLE.ORG: ", true},
		{"Enter passphrase for key '/home/alice/.ssh/id_ed25519': ", false},
		{"The authenticity of host 'h (127.0.0.2)' can't be established.\nED25519 key fingerprint is SHA256:abc.\nAre you sure you want to continue connecting (yes/no/[fingerprint])? ", false},
		{"(alice@host1) Verification code: ", false},
		{"(alice@host1) New password: ", false},
		// The ssh of a jump host (ProxyJump, ProxyCommand) asks the same
		// program: a prompt for any other account, or naming none, is
		// not the destination's.
		{"alice@gateway's password: ", false},
		{"bob@host1's password: ", false},
		{"(alice@gateway) Password: ", false},
		{"alice@host1.example.org's password: ", false},
		{"xalice@host1's password: ", false},
		{"(alice@gateway) alice@host1's password: ", false},
		{"(alice@gateway) (alice@host1) Password: ", false},
		{"Password: ", false},
		{"Password for alice@host1: ", false},
		{"alice@host1's password: alice@host1's password: ", false},
	} {
		var out bytes.Buffer
		code := Run([]string{tc.prompt}, getenv, &out)
		switch {
		case tc.answer && (code != 0 || out.String() != "s3cret pass\n"):
			t.Errorf("%q: exit %d, answer %q; want the password", tc.prompt, code, out.String())
		case !tc.answer && (code == 0 || out.Len() != 0):
			t.Errorf("%q: exit %d, answer %q; want no answer", tc.prompt, code, out.String())
		}
	}
	var out bytes.Buffer
	if code := Run([]string{"alice@host1's password: "}, func(k string) string {
		return map[string]string{modeEnv: "1", destEnv: "alice@host1"}[k]
	}, &out); code == 0 || out.Len() != 0 {
		t.Errorf("without a password: exit %d, answer %q", code, out.String())
	}
	if code := Run([]string{"alice@host1's password: "}, func(k string) string {
		return map[string]string{modeEnv: "1", passwordEnv: "pw"}[k]
	}, &out); code == 0 || out.Len() != 0 {
		t.Errorf("without a destination: exit %d, answer %q", code, out.String())
	}
}

func TestEnvReplacesInherited(t *testing.T) {
	base := []string{"PATH=/bin", "SSH_ASKPASS=/usr/bin/ssh-askpass", "SSH_ASKPASS_REQUIRE=prefer", "HOME=/root"}
	base = append(base, destEnv+"=inherited@elsewhere")
	got := Env(base, "/usr/local/bin/sshfsm", "pw", "alice@host1")
	want := []string{"PATH=/bin", "HOME=/root", "SSH_ASKPASS=/usr/local/bin/sshfsm",
		"SSH_ASKPASS_REQUIRE=force", modeEnv + "=1", passwordEnv + "=pw", destEnv + "=alice@host1"}
	if !slices.Equal(got, want) {
		t.Errorf("Env = %q, want %q", got, want)
	}
	getenv := func(k string) string {
		for _, kv := range got {
			if len(kv) > len(k) && kv[:len(k)+1] == k+"=" {
				return kv[len(k)+1:]
			}
		}
		return ""
	}
	if !Active(getenv) {
		t.Error("the environment Env makes is not recognised as askpass mode")
	}
	if Active(func(string) string { return "" }) {
		t.Error("askpass mode without its variable")
	}
}
