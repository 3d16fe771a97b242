package config

import (
	"fmt"
	"strings"
)

// Help returns the text of sshfsm --help.
func Help() string {
	var b strings.Builder
	fmt.Fprintf(&b, "usage: %s\n       %s\n%s\n", usageLine, configUsageLine, subcommandUsages("       "))
	for _, p := range descriptionParas()[:2] {
		for _, l := range wrap(p, "", 79) {
			b.WriteString(l + "\n")
		}
		b.WriteString("\n")
	}
	writeBranchesHelp(&b)
	b.WriteString("Switches:\n")
	for _, s := range Switches() {
		writeItem(&b, switchNames(s), s.Help)
	}
	writeFileHelp(&b)
	for _, sec := range Sections() {
		fmt.Fprintf(&b, "\n%s:\n", sec.Title())
		if in := sec.Intro(); in != "" {
			for _, l := range wrap(in, "    ", 79) {
				b.WriteString(l + "\n")
			}
		}
		for _, o := range optionsIn(sec) {
			writeItem(&b, "-o "+optionNames(o), helpWithDefault(o))
		}
	}
	writeSubcommandsHelp(&b)
	b.WriteString("\nExit status:\n")
	for _, e := range ExitCodes() {
		writeItem(&b, itoa(int(e.Code)), e.Help)
	}
	b.WriteString("\nSee sshfsm --man for the manual page.\n")
	return b.String()
}

// writeItem writes a name in a left column and its wrapped help beside or
// under it.
func writeItem(b *strings.Builder, name, help string) {
	const col = 28
	lines := wrap(help, strings.Repeat(" ", col), 79)
	head := "    " + name
	if len(head) < col-1 {
		lines[0] = head + lines[0][len(head):]
	} else {
		for _, l := range wrap(name, "    ", 79) {
			b.WriteString(l + "\n")
		}
	}
	for _, l := range lines {
		b.WriteString(l + "\n")
	}
}
