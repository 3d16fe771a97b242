package config

import (
	"bufio"
	"compress/gzip"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite docs/sshfsm.1 and the README option table")

func repoFile(name string) string { return filepath.Join("..", "..", name) }

// TestDocs checks that the committed man page and README option table are
// the generator's output; -update rewrites them.
func TestDocs(t *testing.T) {
	man := repoFile("docs/sshfsm.1")
	readme := repoFile("README.md")
	old, err := os.ReadFile(readme)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	newReadme, err := UpdateReadme(string(old))
	if err != nil {
		t.Fatal(err)
	}
	if *update {
		if err := os.WriteFile(man, []byte(ManPage()), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(readme, []byte(newReadme), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	const how = "; regenerate with: go test ./internal/config -run TestDocs -update"
	if got, err := os.ReadFile(man); err != nil || string(got) != ManPage() {
		t.Errorf("docs/sshfsm.1 differs from sshfsm --man (err %v)%s", err, how)
	}
	if string(old) != newReadme {
		t.Errorf("README.md option table is not current%s", how)
	}
}

func TestUpdateReadme(t *testing.T) {
	got, err := UpdateReadme("# sshfsm\n\nintro\n")
	if err != nil || !strings.HasPrefix(got, "# sshfsm\n\nintro\n\n## Options\n\n"+ReadmeBegin+"\n") ||
		!strings.Contains(got, ReadmeEnd+"\n\n## Several directories in one mountpoint\n\n"+ReadmeFileBegin+"\n") ||
		!strings.HasSuffix(got, ReadmeFileEnd+"\n") {
		t.Fatalf("appending the sections: %q, %v", got, err)
	}
	stale := strings.Replace(got, "| `-o ro` |", "| `-o stale` |", 1)
	stale = strings.Replace(stale, "| `ro` | boolean |", "| `rw` | boolean |", 1)
	if stale == got {
		t.Fatal("the test's stale text is not in the generated README")
	}
	round, err := UpdateReadme(stale + "tail\n")
	if err != nil || round != got+"tail\n" {
		t.Errorf("replacing between the markers lost or kept text: %v", err)
	}
	if _, err := UpdateReadme("x " + ReadmeEnd + " " + ReadmeBegin); err == nil {
		t.Error("markers out of order: no error")
	}
	if _, err := UpdateReadme(ReadmeBegin + ReadmeEnd + ReadmeFileBegin); err == nil {
		t.Error("config end marker missing: no error")
	}
}

func TestDeclarations(t *testing.T) {
	seen := map[string]bool{}
	for _, o := range Options() {
		for _, n := range append([]string{o.Name}, o.Aliases...) {
			if seen[n] {
				t.Errorf("option %s declared twice", n)
			}
			seen[n] = true
			if _, ok := sshKeyword(n); ok && !o.Fold && o.HasValue() {
				t.Errorf("option %s shadows an ssh keyword without Fold", n)
			}
		}
		if o.Help == "" || !strings.HasSuffix(o.Help, ".") {
			t.Errorf("option %s: help must be a sentence", o.Name)
		}
		if o.apply == nil {
			t.Errorf("option %s has no setter", o.Name)
		}
	}
	for _, s := range Switches() {
		if s.Help == "" || s.apply == nil {
			t.Errorf("switch %v is incomplete", s.Names)
		}
	}
}

func TestHelpFits(t *testing.T) {
	h := Help()
	for _, l := range strings.Split(h, "\n") {
		if len(l) > 80 {
			t.Errorf("help line longer than 80 columns: %q", l)
		}
	}
	for _, want := range []string{"usage: sshfsm [options] BRANCH... MOUNTPOINT\n       sshfsm [options] --config FILE|NAME [MOUNTPOINT]\n",
		"NAME=[user@]host:[dir]", "[[branch]]", "identity_file (string)", "-o create=epff|ff|mfs|lfs|rand", "--config FILE|NAME",
		"-o allow_other", "-o timeout=SECONDS", "(default: 30)", "-p PORT", "--man", "Exit status:"} {
		if !strings.Contains(h, want) {
			t.Errorf("help lacks %q", want)
		}
	}
	for _, e := range ExitCodes() {
		if !strings.Contains(ManPage(), e.Help[:20]) || !strings.Contains(h, e.Help[:20]) {
			t.Errorf("exit code %d missing from help or man page", e.Code)
		}
	}
}

// TestSSHKeywordsCurrent checks the keyword list against the installed
// ssh_config(5).
func TestSSHKeywordsCurrent(t *testing.T) {
	f, err := os.Open("/usr/share/man/man5/ssh_config.5.gz")
	if err != nil {
		t.Skip("ssh_config(5) is not installed")
	}
	defer f.Close()
	z, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(z)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 3 || fields[0] != ".It" || fields[1] != "Cm" {
			continue
		}
		k := fields[2]
		if k == "Host" || k == "Match" || k == "Include" {
			continue
		}
		if _, ok := sshKeyword(strings.ToLower(k)); !ok {
			t.Errorf("ssh_config keyword %s is not accepted", k)
		}
	}
}

// TestExamplesParse: every sshfsm command of the man page's EXAMPLES is a
// valid command line; "--config work" reads the documented example file.
func TestExamplesParse(t *testing.T) {
	t.Setenv("HOME", t.TempDir())
	xdg := t.TempDir()
	t.Setenv("XDG_CONFIG_HOME", xdg)
	if err := os.Mkdir(filepath.Join(xdg, "sshfsm"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(xdg, "sshfsm", "work.toml"), []byte(ExampleFile), 0o600); err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, ex := range examples() {
		args := strings.Fields(ex[0])
		if args[0] != "sshfsm" {
			continue
		}
		n++
		if _, err := Parse(args[1:]); err != nil {
			t.Errorf("example %q: %v", ex[0], err)
		}
	}
	if n < 5 {
		t.Errorf("%d sshfsm examples, expected the man page to show at least 5", n)
	}
	// The README's hand-written examples of several branches too.
	readme, err := os.ReadFile(repoFile("README.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, sec, ok := strings.Cut(string(readme), "## Several directories in one mountpoint\n")
	sec, _, _ = strings.Cut(sec, ReadmeFileBegin)
	n = 0
	for _, l := range strings.Split(sec, "\n") {
		cmd, _, _ := strings.Cut(l, "#")
		if args := strings.Fields(cmd); len(args) > 0 && args[0] == "sshfsm" {
			n++
			if _, err := Parse(args[1:]); err != nil {
				t.Errorf("README example %q: %v", l, err)
			}
		}
	}
	if !ok || n == 0 {
		t.Error("README.md has no examples under \"Several directories in one mountpoint\"")
	}
}
