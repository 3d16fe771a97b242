package config

import (
	"fmt"
	"strings"
)

// The BRANCHES and CONFIGURATION FILE parts of --help, the man page and
// docs/options.md, from BranchForms, FileKeys and ExampleFile.

func writeBranchesHelp(b *strings.Builder) {
	b.WriteString("Branches:\n")
	for _, f := range BranchForms() {
		writeItem(b, f.Form, f.Help)
	}
	b.WriteString("\n")
	for _, p := range branchParas()[:1] {
		for _, l := range wrap(p, "    ", 79) {
			b.WriteString(l + "\n")
		}
	}
	b.WriteString("\n")
}

func writeFileHelp(b *strings.Builder) {
	b.WriteString("\nConfiguration file (" + configSwitch + ", TOML; sshfsm --man shows an example):\n")
	for _, t := range FileTables() {
		fmt.Fprintf(b, "  %s\n", t.Heading())
		for _, k := range fileKeysIn(t) {
			writeItem(b, fileKeyDoc(k), k.Help)
		}
	}
}

func writeBranchesMan(b *strings.Builder) {
	b.WriteString(".SH BRANCHES\n")
	for _, f := range BranchForms() {
		manItem(b, f.Form, f.Help)
	}
	b.WriteString(".PP\n")
	writeParas(b, branchParas())
}

func writeFileMan(b *strings.Builder) {
	b.WriteString(".SH CONFIGURATION FILE\n")
	writeParas(b, fileParas())
	for _, t := range FileTables() {
		fmt.Fprintf(b, ".SS %s\n", roff(t.Heading()))
		writeParas(b, []string{t.Intro()})
		for _, k := range fileKeysIn(t) {
			manItem(b, fileKeyDoc(k), k.Help)
		}
	}
	b.WriteString(".SS Example\n.nf\n")
	for _, l := range strings.Split(strings.TrimSuffix(ExampleFile, "\n"), "\n") {
		b.WriteString(roff(l) + "\n")
	}
	b.WriteString(".fi\n.PP\n" + roff(exampleMeaning()) + "\n")
}

// writeBranchesDoc writes the branch forms of docs/options.md.
func writeBranchesDoc(b *strings.Builder) {
	b.WriteString("\n## Branches\n\n| BRANCH | Meaning |\n|---|---|\n")
	for _, f := range BranchForms() {
		fmt.Fprintf(b, "| `%s` | %s |\n", f.Form, md(f.Help))
	}
	for _, p := range branchParas() {
		b.WriteString("\n" + md(p) + "\n")
	}
}

// writeFileDoc writes the configuration file reference of docs/options.md.
func writeFileDoc(b *strings.Builder) {
	b.WriteString("\n## Configuration file\n\n")
	for _, p := range fileParas() {
		b.WriteString(md(p) + "\n\n")
	}
	b.WriteString("```toml\n" + ExampleFile + "```\n\n" + exampleMeaning() + "\n")
	for _, t := range FileTables() {
		heading := "`" + t.Heading() + "`"
		if t == TableTop {
			heading = t.Heading()
		}
		fmt.Fprintf(b, "\n%s: %s\n\n| Key | Type | Meaning |\n|---|---|---|\n", heading, md(t.Intro()))
		for _, k := range fileKeysIn(t) {
			fmt.Fprintf(b, "| `%s` | %s | %s |\n", k.Name, k.Type, md(k.Help))
		}
	}
}
