package config

import (
	"errors"
	"fmt"
	"strings"
)

// Markers delimiting the generated option reference in README.md.
const (
	ReadmeBegin = "<!-- options:begin -->"
	ReadmeEnd   = "<!-- options:end -->"
)

// ReadmeOptions returns the Markdown option reference that README.md holds
// between ReadmeBegin and ReadmeEnd.
func ReadmeOptions() string {
	var b strings.Builder
	b.WriteString("<!-- Generated from internal/config; regenerate with: go test ./internal/config -run TestDocs -update -->\n\n")
	fmt.Fprintf(&b, "Usage: `%s`\n\n", usageLine)
	b.WriteString("| Switch | Description |\n|---|---|\n")
	for _, s := range Switches() {
		fmt.Fprintf(&b, "| `%s` | %s |\n", switchNames(s), md(s.Help))
	}
	for _, sec := range Sections() {
		fmt.Fprintf(&b, "\n#### %s\n\n", sec.Title())
		if in := sec.Intro(); in != "" {
			b.WriteString(md(in) + "\n\n")
		}
		b.WriteString("| Option | Default | Description |\n|---|---|---|\n")
		for _, o := range optionsIn(sec) {
			fmt.Fprintf(&b, "| `-o %s` | %s | %s |\n", optionNames(o), mdDefault(o), md(o.Help))
		}
	}
	writeSubcommandsReadme(&b)
	b.WriteString("\n#### Exit status\n\n| Code | Meaning |\n|---|---|\n")
	for _, e := range ExitCodes() {
		fmt.Fprintf(&b, "| %d | %s |\n", e.Code, md(e.Help))
	}
	return b.String()
}

// UpdateReadme returns readme with the text between the markers replaced by
// ReadmeOptions; without markers, an Options section holding them is
// appended.
func UpdateReadme(readme string) (string, error) {
	body := ReadmeBegin + "\n" + ReadmeOptions() + ReadmeEnd
	i := strings.Index(readme, ReadmeBegin)
	j := strings.Index(readme, ReadmeEnd)
	switch {
	case i < 0 && j < 0:
		if readme != "" && !strings.HasSuffix(readme, "\n") {
			readme += "\n"
		}
		if readme != "" {
			readme += "\n"
		}
		return readme + "## Options\n\n" + body + "\n", nil
	case i < 0 || j < i:
		return "", errors.New("README.md: options markers are out of order or one is missing")
	}
	return readme[:i] + body + readme[j+len(ReadmeEnd):], nil
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

func md(s string) string { return strings.ReplaceAll(s, "|", `\|`) }
