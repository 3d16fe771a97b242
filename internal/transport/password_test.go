package transport

import (
	"os"
	"path/filepath"
	"testing"
)

// The password answers only prompts naming the account ssh logs in to:
// user and host name as the ssh config resolves them, HostKeyAlias in
// place of the name when set, the destination as given when ssh cannot
// tell.
func TestPasswordAccount(t *testing.T) {
	cfg := filepath.Join(t.TempDir(), "ssh_config")
	err := os.WriteFile(cfg, []byte("Host box\n\tHostName 127.0.0.9\n\tUser carol\n"+
		"Host aliased\n\tHostName 127.0.0.9\n\tUser carol\n\tHostKeyAlias keyname\n"), 0o600)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		o    Options
		want string
	}{
		{Options{Host: "box", SSHArgs: []string{"-F", cfg}}, "carol@127.0.0.9"},
		{Options{Host: "aliased", SSHArgs: []string{"-F", cfg}}, "carol@keyname"},
		{Options{Host: "box", User: "dave", SSHArgs: []string{"-F", cfg}}, "dave@127.0.0.9"},
		{Options{Host: "erin@Other.Example", SSHArgs: []string{"-F", cfg}}, "erin@other.example"},
		{Options{Host: "erin@box", SSHCommand: []string{"false"}}, "erin@box"},
		{Options{Host: "box", User: "frank", SSHCommand: []string{"false"}}, "frank@box"},
	} {
		if got := passwordAccount(bg, &tc.o); got != tc.want {
			t.Errorf("%+v: %q, want %q", tc.o, got, tc.want)
		}
	}
}
