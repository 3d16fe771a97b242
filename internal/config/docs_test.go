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

var update = flag.Bool("update", false, "rewrite docs/sshfsm.1, docs/options.md and docs/sshfs-compat.md")

func repoFile(name string) string { return filepath.Join("..", "..", name) }

// TestDocs checks that the committed man page and option reference are the
// generator's output; -update rewrites them.
func TestDocs(t *testing.T) {
	compat, err := SshfsCompatDoc()
	if err != nil {
		t.Errorf("sshfs options neither accepted nor refused with a reason: %v", err)
	}
	for _, doc := range []struct{ path, want string }{
		{"docs/sshfsm.1", ManPage()},
		{"docs/options.md", OptionsDoc()},
		{"docs/sshfs-compat.md", compat},
		{"docs/completions/sshfsm.bash", BashCompletion()},
		{"docs/completions/_sshfsm", ZshCompletion()},
		{"docs/completions/sshfsm.fish", FishCompletion()},
	} {
		path := repoFile(doc.path)
		if *update {
			if err := os.WriteFile(path, []byte(doc.want), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if got, err := os.ReadFile(path); err != nil || string(got) != doc.want {
			t.Errorf("%s is not what internal/config generates (err %v); "+
				"regenerate with: go test ./internal/config -run TestDocs -update", doc.path, err)
		}
	}
}

// TestOptionsDocComplete: every option, alias, switch and config file key
// has its row in docs/options.md.
func TestOptionsDocComplete(t *testing.T) {
	doc := OptionsDoc()
	for _, o := range Options() {
		if !strings.Contains(doc, "| `-o "+md(optionNames(o))+"` |") {
			t.Errorf("docs/options.md lacks -o %s", o.Name)
		}
	}
	for _, s := range Switches() {
		if !strings.Contains(doc, "| `"+md(switchNames(s))+"` |") {
			t.Errorf("docs/options.md lacks %v", s.Names)
		}
	}
	for _, k := range FileKeys() {
		if !strings.Contains(doc, "| `"+k.Name+"` |") {
			t.Errorf("docs/options.md lacks the config file key %s", k.Name)
		}
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
	// The README's hand-written command lines too.
	readme, err := os.ReadFile(repoFile("README.md"))
	if err != nil {
		t.Fatal(err)
	}
	n = 0
	for _, args := range readmeCommands(string(readme)) {
		if isSubcommand(args[1]) {
			continue
		}
		n++
		if _, err := Parse(args[1:]); err != nil {
			t.Errorf("README example %q: %v", strings.Join(args, " "), err)
		}
	}
	if n < 5 {
		t.Errorf("README.md shows %d sshfsm mount commands in its sh blocks, expected at least 5", n)
	}
	// A user's first page: what the full references (man page, options.md)
	// hold does not belong in it.
	if len(readme) > readmeMaxBytes {
		t.Errorf("README.md is %d bytes, more than %d: move detail to docs/", len(readme), readmeMaxBytes)
	}
}

// readmeMaxBytes is the README's size limit, 16 KiB.
const readmeMaxBytes = 16 << 10

// readmeCommands returns the sshfsm command lines of the ```sh blocks of a
// Markdown text, split into words, comments removed.
func readmeCommands(text string) [][]string {
	var cmds [][]string
	inSh := false
	for _, l := range strings.Split(text, "\n") {
		if strings.HasPrefix(l, "```") {
			inSh = !inSh && strings.TrimPrefix(l, "```") == "sh"
			continue
		}
		if !inSh {
			continue
		}
		cmd, _, _ := strings.Cut(l, "#")
		if args := strings.Fields(cmd); len(args) > 1 && args[0] == "sshfsm" {
			cmds = append(cmds, args)
		}
	}
	return cmds
}

func isSubcommand(arg string) bool {
	for _, s := range Subcommands() {
		if s.Name == arg {
			return true
		}
	}
	return false
}
