package config

import (
	"fmt"
	"strings"
)

// OptionsDoc returns docs/options.md: the full reference of the command
// line, the -o options, the branch forms, the config file, the subcommands
// and the exit status, in Markdown, from the same declarations as the
// parser, --help and the man page.
func OptionsDoc() string {
	var b strings.Builder
	b.WriteString("# sshfsm options\n\n")
	b.WriteString("<!-- Generated from internal/config; regenerate with: go test ./internal/config -run TestDocs -update -->\n\n")
	b.WriteString("The reference of everything sshfsm accepts, generated from the declarations the parser uses, " +
		"as are `sshfsm --help` and the manual page ([sshfsm.1](sshfsm.1), `sshfsm --man`). " +
		"How each option of sshfs is taken: [sshfs-compat.md](sshfs-compat.md).\n\n")
	fmt.Fprintf(&b, "Usage: `%s`, or `%s`\n\n", usageLine, configUsageLine)
	writeSwitchesDoc(&b)
	writeOptionsDoc(&b)
	writeBranchesDoc(&b)
	writeFileDoc(&b)
	writeSubcommandsDoc(&b)
	b.WriteString("\n## Exit status\n\n| Code | Meaning |\n|---|---|\n")
	for _, e := range ExitCodes() {
		fmt.Fprintf(&b, "| %d | %s |\n", e.Code, md(e.Help))
	}
	return b.String()
}

func writeSwitchesDoc(b *strings.Builder) {
	b.WriteString("## Switches\n\n| Switch | Description |\n|---|---|\n")
	for _, s := range Switches() {
		fmt.Fprintf(b, "| `%s` | %s |\n", md(switchNames(s)), md(s.Help))
	}
}

func writeOptionsDoc(b *strings.Builder) {
	b.WriteString("\n## Options (-o)\n")
	for _, sec := range Sections() {
		fmt.Fprintf(b, "\n### %s\n\n", sec.Title())
		if in := sec.Intro(); in != "" {
			b.WriteString(md(in) + "\n\n")
		}
		b.WriteString("| Option | Default | Description |\n|---|---|---|\n")
		for _, o := range optionsIn(sec) {
			fmt.Fprintf(b, "| `-o %s` | %s | %s |\n", md(optionNames(o)), mdDefault(o), md(o.Help))
		}
	}
}

func mdDefault(o Option) string {
	switch {
	case o.Default == "on":
		return "on"
	case o.Default == "":
		return ""
	}
	return "`" + o.Default + "`"
}

// md escapes text for a Markdown table cell.
func md(s string) string { return strings.ReplaceAll(s, "|", `\|`) }
