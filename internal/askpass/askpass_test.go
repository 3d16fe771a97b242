package askpass

import (
	"bytes"
	"slices"
	"testing"
)

func TestRunAnswersOnlyPasswordPrompts(t *testing.T) {
	env := map[string]string{modeEnv: "1", passwordEnv: "s3cret pass"}
	getenv := func(k string) string { return env[k] }
	for _, tc := range []struct {
		prompt string
		answer bool
	}{
		{"alice@host1's password: ", true},
		{"Password: ", true},
		{"(alice@host1) Password: ", true},
		{"Password for alice@EXAMPLE.ORG: ", true},
		{"Enter passphrase for key '/home/alice/.ssh/id_ed25519': ", false},
		{"The authenticity of host 'h (127.0.0.2)' can't be established.\nED25519 key fingerprint is SHA256:abc.\nAre you sure you want to continue connecting (yes/no/[fingerprint])? ", false},
		{"Verification code: ", false},
		{"New password: ", false},
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
	if code := Run([]string{"Password: "}, func(string) string { return "" }, &out); code == 0 || out.Len() != 0 {
		t.Errorf("without a password: exit %d, answer %q", code, out.String())
	}
}

func TestEnvReplacesInherited(t *testing.T) {
	base := []string{"PATH=/bin", "SSH_ASKPASS=/usr/bin/ssh-askpass", "SSH_ASKPASS_REQUIRE=prefer", "HOME=/root"}
	got := Env(base, "/usr/local/bin/sshfsm", "pw")
	want := []string{"PATH=/bin", "HOME=/root", "SSH_ASKPASS=/usr/local/bin/sshfsm",
		"SSH_ASKPASS_REQUIRE=force", modeEnv + "=1", passwordEnv + "=pw"}
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
