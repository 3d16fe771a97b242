package config

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestBashCompletion: the generated bash completion completes the last of
// a comma-separated -o list from the declarations, switches and the
// subcommands.
func TestBashCompletion(t *testing.T) {
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("no bash")
	}
	script := filepath.Join(t.TempDir(), "sshfsm.bash")
	if err := os.WriteFile(script, []byte(BashCompletion()), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		words []string
		want  []string
		not   []string
	}{
		{[]string{"sshfsm", "-o", "ro,ui"}, []string{"ro,uid=", "ro,uidfile="}, []string{"ro,gid="}},
		{[]string{"sshfsm", "-o", "cache=im"}, []string{"cache=immutable"}, nil},
		{[]string{"sshfsm", "-o", "auto_u"}, []string{"auto_unmount"}, nil},
		{[]string{"sshfsm", "--verb"}, []string{"--verbose"}, nil},
		{[]string{"sshfsm", "sta"}, []string{"status"}, nil},
	} {
		cmd := exec.Command("bash", "-c", `source "$1"; shift; COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); _sshfsm; printf '%s\n' "${COMPREPLY[@]}"`,
			"bash", script)
		cmd.Args = append(cmd.Args, tc.words...)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%q: %v: %s", tc.words, err, out)
		}
		got := strings.Fields(string(out))
		for _, w := range tc.want {
			if !contains(got, w) {
				t.Errorf("%q completes to %q, want %s among them", tc.words, got, w)
			}
		}
		for _, w := range tc.not {
			if contains(got, w) {
				t.Errorf("%q completes to %q, want no %s", tc.words, got, w)
			}
		}
	}
}

// TestCompletionSyntax: the zsh and fish completions parse.
func TestCompletionSyntax(t *testing.T) {
	for _, sh := range []struct{ shell, name, text string }{
		{"zsh", "_sshfsm", ZshCompletion()},
		{"fish", "sshfsm.fish", FishCompletion()},
		{"bash", "sshfsm.bash", BashCompletion()},
	} {
		if _, err := exec.LookPath(sh.shell); err != nil {
			t.Logf("no %s: its completion is not checked", sh.shell)
			continue
		}
		p := filepath.Join(t.TempDir(), sh.name)
		if err := os.WriteFile(p, []byte(sh.text), 0o644); err != nil {
			t.Fatal(err)
		}
		if out, err := exec.Command(sh.shell, "-n", p).CombinedOutput(); err != nil {
			t.Errorf("%s -n %s: %v: %s", sh.shell, sh.name, err, out)
		}
	}
}

// TestFishCompletion: fish completes the last of a comma-separated -o list.
func TestFishCompletion(t *testing.T) {
	if _, err := exec.LookPath("fish"); err != nil {
		t.Skip("no fish")
	}
	p := filepath.Join(t.TempDir(), "sshfsm.fish")
	if err := os.WriteFile(p, []byte(FishCompletion()), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("fish", "--no-config", "-c", "source "+p+"; complete -C 'sshfsm -o ro,allow_r'").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "ro,allow_root") {
		t.Errorf("fish completes 'sshfsm -o ro,allow_r' to %q (%v); want ro,allow_root", out, err)
	}
}
