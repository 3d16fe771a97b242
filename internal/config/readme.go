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
		fmt.Fprintf(&b, "| `%s` | %s |\n", md(switchNames(s)), md(s.Help))
	}
	for _, sec := range Sections() {
		fmt.Fprintf(&b, "\n#### %s\n\n", sec.Title())
		if in := sec.Intro(); in != "" {
			b.WriteString(md(in) + "\n\n")
		}
		b.WriteString("| Option | Default | Description |\n|---|---|---|\n")
		for _, o := range optionsIn(sec) {
			fmt.Fprintf(&b, "| `-o %s` | %s | %s |\n", md(optionNames(o)), mdDefault(o), md(o.Help))
		}
	}
	writeSubcommandsReadme(&b)
	b.WriteString("\n#### Exit status\n\n| Code | Meaning |\n|---|---|\n")
	for _, e := range ExitCodes() {
		fmt.Fprintf(&b, "| %d | %s |\n", e.Code, md(e.Help))
	}
	return b.String()
}

// readmeBlock is one generated part of README.md and the section that
// holds it when README.md has no markers yet.
type readmeBlock struct {
	begin, end, body, section string
}

func readmeBlocks() []readmeBlock {
	return []readmeBlock{
		{ReadmeBegin, ReadmeEnd, ReadmeOptions(), "## Options"},
		{ReadmeFileBegin, ReadmeFileEnd, ReadmeFile(), "## Several directories in one mountpoint"},
	}
}

// UpdateReadme returns readme with the text between each pair of markers
// replaced by what the declarations generate; a block without markers is
// appended in a section of its own.
func UpdateReadme(readme string) (string, error) {
	for _, blk := range readmeBlocks() {
		body := blk.begin + "\n" + blk.body + blk.end
		i := strings.Index(readme, blk.begin)
		j := strings.Index(readme, blk.end)
		switch {
		case i < 0 && j < 0:
			if readme != "" && !strings.HasSuffix(readme, "\n") {
				readme += "\n"
			}
			if readme != "" {
				readme += "\n"
			}
			readme += blk.section + "\n\n" + body + "\n"
		case i < 0 || j < i:
			return "", errors.New("README.md: markers " + blk.begin + " and " + blk.end + " are out of order or one is missing")
		default:
			readme = readme[:i] + body + readme[j+len(blk.end):]
		}
	}
	return readme, nil
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
