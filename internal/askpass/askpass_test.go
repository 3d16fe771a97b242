package askpass

import (
	"bytes"
	"os"
	"slices"
	"strconv"
	"testing"
)

// fakeProcs is a process tree: pid → parent and program.
type fakeProcs map[int]struct {
	ppid int
	exe  string
}

func (f fakeProcs) parent(pid int) (int, error) {
	p, ok := f[pid]
	if !ok {
		return 0, os.ErrNotExist
	}
	return p.ppid, nil
}

func (f fakeProcs) exe(pid int) (string, error) {
	p, ok := f[pid]
	if !ok {
		return "", os.ErrNotExist
	}
	return p.exe, nil
}

// The processes of the tests: sshfsm (10) started ssh (100).
var ownSSH = fakeProcs{10: {1, "/usr/bin/sshfsm"}, 100: {10, "/usr/bin/ssh"}}

func TestRunAnswersOnlyPasswordPrompts(t *testing.T) {
	env := map[string]string{modeEnv: "1", passwordEnv: "s3cret pass", destEnv: "alice@host1", ownerEnv: "10"}
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
		code := run([]string{tc.prompt}, getenv, &out, ownSSH, 100)
		switch {
		case tc.answer && (code != 0 || out.String() != "s3cret pass\n"):
			t.Errorf("%q: exit %d, answer %q; want the password", tc.prompt, code, out.String())
		case !tc.answer && (code == 0 || out.Len() != 0):
			t.Errorf("%q: exit %d, answer %q; want no answer", tc.prompt, code, out.String())
		}
	}
	var out bytes.Buffer
	if code := run([]string{"alice@host1's password: "}, func(k string) string {
		return map[string]string{modeEnv: "1", destEnv: "alice@host1", ownerEnv: "10"}[k]
	}, &out, ownSSH, 100); code == 0 || out.Len() != 0 {
		t.Errorf("without a password: exit %d, answer %q", code, out.String())
	}
	if code := run([]string{"alice@host1's password: "}, func(k string) string {
		return map[string]string{modeEnv: "1", passwordEnv: "pw", ownerEnv: "10"}[k]
	}, &out, ownSSH, 100); code == 0 || out.Len() != 0 {
		t.Errorf("without a destination: exit %d, answer %q", code, out.String())
	}
	for _, owner := range []string{"", "11", "x"} {
		if code := run([]string{"alice@host1's password: "}, func(k string) string {
			return map[string]string{modeEnv: "1", passwordEnv: "pw", destEnv: "alice@host1", ownerEnv: owner}[k]
		}, &out, ownSSH, 100); code == 0 || out.Len() != 0 {
			t.Errorf("owner %q, not the asker's parent: exit %d, answer %q", owner, code, out.String())
		}
	}
}

// The password goes to an ssh that sshfsm started, directly or through a
// wrapper, never to an ssh that ssh started (a jump host's), whose
// prompt may read the same.
func TestAskedByOwnSSH(t *testing.T) {
	const sshfsm, ssh = "/usr/bin/sshfsm", "/usr/bin/ssh"
	type proc = struct {
		ppid int
		exe  string
	}
	for _, tc := range []struct {
		name  string
		procs fakeProcs
		want  bool
	}{
		{"ssh started by sshfsm", fakeProcs{10: {1, sshfsm}, 100: {10, ssh}}, true},
		{"through a wrapper", fakeProcs{10: {1, sshfsm}, 50: {10, "/bin/bash"}, 100: {50, ssh}}, true},
		{"ProxyJump", fakeProcs{10: {1, sshfsm}, 50: {10, ssh}, 100: {50, ssh}}, false},
		{"ProxyCommand through sh", fakeProcs{10: {1, sshfsm}, 50: {10, ssh}, 60: {50, "/bin/sh"}, 100: {60, ssh}}, false},
		{"not below sshfsm", fakeProcs{10: {1, sshfsm}, 50: {1, "/bin/bash"}, 100: {50, ssh}}, false},
		{"parent unreadable", fakeProcs{10: {1, sshfsm}, 100: {50, ssh}}, false},
		{"asker unreadable", fakeProcs{10: {1, sshfsm}}, false},
	} {
		if got := askedByOwnSSH(tc.procs, 10, 100); got != tc.want {
			t.Errorf("%s: %t, want %t", tc.name, got, tc.want)
		}
	}
	var deep = fakeProcs{10: {1, sshfsm}}
	for pid := 11; pid < 100; pid++ {
		deep[pid] = proc{pid - 1, "/bin/prog" + strconv.Itoa(pid)}
	}
	deep[100] = proc{99, ssh}
	if askedByOwnSSH(deep, 10, 100) {
		t.Error("answered past maxDepth")
	}
}

// The process tree of this test as /proc shows it.
func TestProcFS(t *testing.T) {
	ppid, err := procFS{}.parent(os.Getpid())
	if err != nil || ppid != os.Getppid() {
		t.Errorf("parent = %d, %v; want %d", ppid, err, os.Getppid())
	}
	exe, _ := os.Executable()
	if got, err := (procFS{}).exe(os.Getpid()); err != nil || got != exe {
		t.Errorf("exe = %q, %v; want %q", got, err, exe)
	}
}

func TestEnvReplacesInherited(t *testing.T) {
	base := []string{"PATH=/bin", "SSH_ASKPASS=/usr/bin/ssh-askpass", "SSH_ASKPASS_REQUIRE=prefer", "HOME=/root"}
	base = append(base, destEnv+"=inherited@elsewhere", ownerEnv+"=1")
	got := Env(base, "/usr/local/bin/sshfsm", "pw", "alice@host1")
	want := []string{"PATH=/bin", "HOME=/root", "SSH_ASKPASS=/usr/local/bin/sshfsm",
		"SSH_ASKPASS_REQUIRE=force", modeEnv + "=1", passwordEnv + "=pw", destEnv + "=alice@host1",
		ownerEnv + "=" + strconv.Itoa(os.Getpid())}
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
