package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// results collects the samples of one run.
type results struct {
	c       *config
	e       *env
	started time.Time
	samples map[string]map[string][]float64 // workload id → tool key → values
	counts  map[string]map[string][]int     // entries seen by find, per sample
	notes   []string
	errors  []string
	// rowNotes are remarks on one workload's figures, by workload id.
	rowNotes map[string][]string
}

func newResults(c *config, e *env) *results {
	return &results{
		c: c, e: e, started: time.Now(),
		samples:  map[string]map[string][]float64{},
		counts:   map[string]map[string][]int{},
		rowNotes: map[string][]string{},
	}
}

func (r *results) add(w *workload, t *tool, v float64) {
	if r.samples[w.id] == nil {
		r.samples[w.id] = map[string][]float64{}
	}
	r.samples[w.id][t.key] = append(r.samples[w.id][t.key], v)
}

func (r *results) count(w *workload, t *tool, n int) {
	if r.counts[w.id] == nil {
		r.counts[w.id] = map[string][]int{}
	}
	r.counts[w.id][t.key] = append(r.counts[w.id][t.key], n)
}

// rowNote adds a remark on w's figures, shown under the table.
func (r *results) rowNote(w *workload, s string) { r.rowNotes[w.id] = append(r.rowNotes[w.id], s) }

func (r *results) note(what, v string) { r.notes = append(r.notes, what+": "+v) }

func (r *results) fail(t *tool, what string, err error) {
	s := fmt.Sprintf("%s %s: %v", t.name, what, err)
	r.errors = append(r.errors, s)
	logf("FAILED %s", s)
}

// stats of one sample set.
type stats struct{ med, min, max float64 }

func summarize(v []float64) (stats, bool) {
	if len(v) == 0 {
		return stats{}, false
	}
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	med := s[len(s)/2]
	if len(s)%2 == 0 {
		med = (s[len(s)/2-1] + s[len(s)/2]) / 2
	}
	return stats{med: med, min: s[0], max: s[len(s)-1]}, true
}

func (r *results) stat(w *workload, tool string) (stats, bool) {
	return summarize(r.samples[w.id][tool])
}

// title is a workload's display title with this run's parameters.
func (r *results) title(w *workload) string {
	t := strings.Replace(w.title, "high RTT", fmt.Sprintf("%v RTT", r.c.rtt), 1)
	return strings.Replace(t, "the wide tree", fmt.Sprintf("%d entries", r.c.entries), 1)
}

// verdict judges sshfsm against w's target: the text of the goal, and
// "yes", "NO" or "–" when it cannot be judged.
func (r *results) verdict(w *workload) (goal, pass string) {
	tg := w.target
	if tg == nil {
		return "", ""
	}
	word := "≥"
	if !w.higher {
		word = "≤"
	}
	me, ok := r.stat(w, sshfsmKey)
	if tg.ref == "" {
		goal = fmt.Sprintf("%s %g %s", word, tg.limit, w.unit)
		if !ok {
			return goal, "–"
		}
		return goal, yesNo(better(w, me.med, tg.limit))
	}
	refName := map[string]string{sshfsDefault: "sshfs default", sshfsTuned: "sshfs tuned", bestSSHFS: "best sshfs",
		replicaOneKey: "one replica", unionOneKey: "one host", localKey: "local disk"}[tg.ref]
	goal = fmt.Sprintf("%s %g× %s", word, tg.limit, refName)
	if tg.worst > 0 {
		goal += fmt.Sprintf("; worst ≥ %g× median", tg.worst)
	}
	ref, refOK := r.refStat(w, tg.ref)
	if !ok || !refOK || ref.med == 0 {
		return goal, "–"
	}
	pass = yesNo(better(w, me.med/ref.med, tg.limit))
	if tg.worst > 0 && me.min < tg.worst*me.med {
		pass = "NO"
	}
	return goal, pass
}

// refStat returns the stats of a reference tool; bestSSHFS picks the
// better median of the two sshfs configurations.
func (r *results) refStat(w *workload, ref string) (stats, bool) {
	if ref != bestSSHFS {
		return r.stat(w, ref)
	}
	a, aok := r.stat(w, sshfsDefault)
	b, bok := r.stat(w, sshfsTuned)
	switch {
	case aok && bok:
		if better(w, b.med, a.med) {
			return b, true
		}
		return a, true
	case aok:
		return a, true
	}
	return b, bok
}

// better reports whether v reaches limit in w's direction.
func better(w *workload, v, limit float64) bool {
	if w.higher {
		return v >= limit
	}
	return v <= limit
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "NO"
}

func fmtVal(v float64, unit string) string {
	switch {
	case unit == "s" && v < 10:
		return fmt.Sprintf("%.3f", v)
	case v >= 1000:
		return fmt.Sprintf("%.0f", v)
	}
	return fmt.Sprintf("%.1f", v)
}

func (r *results) ratio(w *workload, tool, ref string) string {
	a, aok := r.stat(w, tool)
	b, bok := r.stat(w, ref)
	if !aok || !bok || b.med == 0 {
		return ""
	}
	return fmt.Sprintf("%.2f×", a.med/b.med)
}

// markdown renders the report.
func (r *results) markdown() string {
	var b strings.Builder
	c := r.c
	fmt.Fprintf(&b, "# sshfsm benchmark, %s\n\n", r.started.Format("2006-01-02 15:04 MST"))
	fmt.Fprintf(&b, "Command: `%s`\n\n", strings.TrimSpace("go run ./bench "+strings.Join(os.Args[1:], " ")))
	b.WriteString("## Setup\n\n")
	for _, s := range machine() {
		fmt.Fprintf(&b, "- %s\n", s)
	}
	fmt.Fprintf(&b, "- repeats: %d (high latency: %d, memory walk: %d, writes: %d); values are medians, min–max over the repeats\n", c.repeats, c.rttRepeats, c.rssRepeats, c.writesRepeats)
	for _, s := range r.e.notes {
		fmt.Fprintf(&b, "- %s\n", s)
	}
	b.WriteString("- sshd and all clients run on this machine over loopback; the CPU is shared with other work, so absolute numbers are noisy (load averages below)\n")
	b.WriteString("- git status: before each tool's series the server-side index is restored and one uncounted git status runs through that tool, as a user's earlier session would have; every counted run is on a fresh mount\n")
	if c.groups["git"] {
		b.WriteString("- git status, first contact: before every run the server-side index is restored and refreshed by git on the server; nothing runs through the tool before the counted run, on a fresh mount with every cache empty\n")
	}
	for _, s := range r.notes {
		fmt.Fprintf(&b, "- load average (1/5/15 min) at %s\n", s)
	}
	b.WriteString("\n## Results\n\n")
	b.WriteString("Ratios are median / median of the same run (for times and memory, lower is better; for MiB/s and IOPS, higher is better). Targets apply to sshfsm.\n\n")
	b.WriteString("| workload | tool | median | min–max | n | vs sshfs default | vs sshfs tuned | target | pass |\n")
	b.WriteString("|---|---|---:|---:|---:|---:|---:|---|---|\n")
	for _, w := range workloads {
		first := true
		for _, t := range allTools("") {
			s, ok := r.stat(w, t.key)
			if !ok {
				continue
			}
			goal, pass := "", ""
			if t.key == sshfsmKey {
				goal, pass = r.verdict(w)
			}
			name := ""
			if first {
				name = r.title(w)
				first = false
			}
			fmt.Fprintf(&b, "| %s | %s | %s %s | %s–%s | %d | %s | %s | %s | %s |\n",
				name, t.name, fmtVal(s.med, w.unit), w.unit, fmtVal(s.min, w.unit), fmtVal(s.max, w.unit),
				len(r.samples[w.id][t.key]), r.ratio(w, t.key, sshfsDefault), r.ratio(w, t.key, sshfsTuned), goal, pass)
		}
		if first && w.target != nil {
			goal, _ := r.verdict(w)
			fmt.Fprintf(&b, "| %s | – | not measured | | | | | %s | – |\n", r.title(w), goal)
		}
	}
	if s := r.countCheck(); s != "" {
		b.WriteString("\n" + s)
	}
	r.writeRowNotes(&b)
	if len(r.errors) > 0 {
		b.WriteString("\n## Failures\n\n")
		for _, s := range r.errors {
			fmt.Fprintf(&b, "- %s\n", strings.ReplaceAll(s, "\n", " "))
		}
	}
	r.writeChartLinks(&b)
	return b.String()
}

// writeRowNotes lists the remarks on the workloads' figures, in report
// order.
func (r *results) writeRowNotes(b *strings.Builder) {
	first := true
	for _, w := range workloads {
		for _, s := range r.rowNotes[w.id] {
			if first {
				b.WriteString("\n## Notes on the rows\n\n")
				first = false
			}
			fmt.Fprintf(b, "- %s — %s\n", r.title(w), strings.ReplaceAll(s, "\n", " "))
		}
	}
}

// writeChartLinks shows the charts on the results page, with links
// relative to the page.
func (r *results) writeChartLinks(b *strings.Builder) {
	rel, err := filepath.Rel(filepath.Dir(r.c.page), r.c.out)
	if err != nil || r.c.page == "" {
		rel = r.c.out
	}
	link := func(name string) string { return filepath.ToSlash(filepath.Join(rel, name)) }
	b.WriteString("\n## Charts\n\nBars: medians; error bars: min–max. Raw samples: [results.json](" + link("results.json") + ").\n\n")
	for _, w := range workloads {
		if len(r.samples[w.id]) > 0 {
			fmt.Fprintf(b, "![%s](%s)\n", r.title(w), link(w.id+".png"))
		}
	}
}

// countCheck reports whether every tool saw the same number of entries.
func (r *results) countCheck() string {
	var b strings.Builder
	for _, w := range workloads {
		seen := map[int][]string{}
		for tool, ns := range r.counts[w.id] {
			for _, n := range ns {
				seen[n] = append(seen[n], tool)
			}
		}
		if len(seen) == 0 {
			continue
		}
		var parts []string
		for n, tools := range seen {
			sort.Strings(tools)
			parts = append(parts, fmt.Sprintf("%d (%s)", n, strings.Join(dedup(tools), ", ")))
		}
		sort.Strings(parts)
		status := "same for all tools"
		if len(seen) > 1 {
			status = "DIFFER"
		}
		fmt.Fprintf(&b, "- %s: entries listed %s: %s\n", w.id, status, strings.Join(parts, "; "))
	}
	return b.String()
}

func dedup(s []string) []string {
	var out []string
	for i, v := range s {
		if i == 0 || v != s[i-1] {
			out = append(out, v)
		}
	}
	return out
}

// machine describes the host and the versions of the tools.
func machine() []string {
	var out []string
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if strings.HasPrefix(line, "model name") {
				out = append(out, "CPU: "+strings.TrimSpace(line[strings.IndexByte(line, ':')+1:]))
				break
			}
		}
	}
	run := func(name string, args ...string) string { return firstLine(run2(name, args...)) }
	out = append(out,
		fmt.Sprintf("cores: %s, kernel %s", run("nproc"), run("uname", "-r")),
		"sshfs: "+grepLine(run2("sshfs", "--version"), "SSHFS version"),
		"ssh: "+run("ssh", "-V"),
		"fio: "+run("fio", "--version"),
		"go: "+run("go", "version"),
	)
	return out
}

// write prints the table and writes the results page, results.json and
// the charts.
func (r *results) write() error {
	if err := os.MkdirAll(r.c.out, 0o755); err != nil {
		return err
	}
	md := r.markdown()
	fmt.Print(md)
	if err := os.WriteFile(r.c.page, []byte(md), 0o644); err != nil {
		return err
	}
	if err := r.writeJSON(filepath.Join(r.c.out, "results.json")); err != nil {
		return err
	}
	if err := r.charts(r.c.out); err != nil {
		return err
	}
	logf("wrote %s and %s", r.c.page, r.c.out)
	return nil
}

func (r *results) writeJSON(path string) error {
	type wl struct {
		ID      string               `json:"id"`
		Title   string               `json:"title"`
		Unit    string               `json:"unit"`
		Higher  bool                 `json:"higher_is_better"`
		Samples map[string][]float64 `json:"samples"`
		Entries map[string][]int     `json:"entries_listed,omitempty"`
		Notes   []string             `json:"notes,omitempty"`
	}
	doc := struct {
		Started   time.Time `json:"started"`
		Args      []string  `json:"args"`
		Machine   []string  `json:"machine"`
		Notes     []string  `json:"notes"`
		Load      []string  `json:"load_average"`
		Errors    []string  `json:"errors"`
		Workloads []wl      `json:"workloads"`
	}{Started: r.started, Args: os.Args[1:], Machine: machine(), Notes: r.e.notes, Load: r.notes, Errors: r.errors}
	for _, w := range workloads {
		if len(r.samples[w.id]) == 0 {
			continue
		}
		doc.Workloads = append(doc.Workloads, wl{ID: w.id, Title: r.title(w), Unit: w.unit, Higher: w.higher,
			Samples: r.samples[w.id], Entries: r.counts[w.id], Notes: r.rowNotes[w.id]})
	}
	b, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}

// run2 returns the combined output of a command, "?" when it cannot run.
func run2(name string, args ...string) string {
	o, err := exec.Command(name, args...).CombinedOutput()
	if err != nil && len(o) == 0 {
		return "?"
	}
	return string(o)
}

// grepLine returns the first line of s containing sub, else its first line.
func grepLine(s, sub string) string {
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			return strings.TrimSpace(l)
		}
	}
	return firstLine(s)
}
