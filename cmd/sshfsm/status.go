package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"sshfsm/internal/config"
	"sshfsm/internal/control"
	"sshfsm/internal/mountinfo"
)

// runStatus is sshfsm status: what running mounts are doing.
func runStatus(args []string) config.ExitCode {
	sa, err := config.ParseStatus(args)
	if err != nil {
		return fail(os.Stderr, err)
	}
	if sa.Help {
		io.WriteString(os.Stdout, config.SubcommandHelp("status"))
		return config.ExitOK
	}
	c := control.Client{}
	if sa.Mountpoint != "" {
		return statusOne(c, sa, os.Stdout, os.Stderr)
	}
	return statusAll(c, sa, os.Stdout, os.Stderr)
}

// statusOne prints the status of the mount at sa.Mountpoint.
func statusOne(c control.Client, sa config.StatusArgs, out, errw io.Writer) config.ExitCode {
	st, err := queryMount(c, sa.Mountpoint)
	if err != nil {
		return fail(errw, err)
	}
	if sa.JSON {
		return printJSON(out, errw, st)
	}
	writeStatus(out, st)
	return config.ExitOK
}

// failedEntry stands in the JSON list for a mount whose daemon did not
// answer.
type failedEntry struct {
	Mount control.Mount `json:"mount"`
	Error string        `json:"error"`
}

// statusAll prints the status of every mount of the calling user; a
// daemon that does not answer gets a line on errw and exit status 6.
func statusAll(c control.Client, sa config.StatusArgs, out, errw io.Writer) config.ExitCode {
	rs, err := c.List()
	if err != nil {
		return fail(errw, config.Errorf(config.ExitMount, "%v", err))
	}
	code := config.ExitOK
	entries := []any{}
	for i, r := range rs {
		if r.Gone {
			code = config.ExitMount
			fmt.Fprintf(errw, "sshfsm: %s: its sshfsm (pid %d) is gone, every access fails with \"Transport endpoint is not connected\"; remove the mount with: fusermount3 -uz %s\n",
				printable(r.Mountpoint), r.PID, shellWord(r.Mountpoint))
			entries = append(entries, failedEntry{
				Mount: control.Mount{Mountpoint: r.Mountpoint, PID: r.PID}, Error: control.ErrGone.Error()})
			continue
		}
		if r.Err != nil {
			code = config.ExitMount
			fmt.Fprintf(errw, "sshfsm: %s\n", printable(oneLine(r.Err.Error())))
			entries = append(entries, failedEntry{
				Mount: control.Mount{Mountpoint: r.Mountpoint, PID: r.PID}, Error: r.Err.Error()})
			continue
		}
		entries = append(entries, r.Status)
		if !sa.JSON {
			if i > 0 {
				fmt.Fprintln(out)
			}
			writeStatus(out, r.Status)
		}
	}
	if sa.JSON {
		if c := printJSON(out, errw, entries); c != config.ExitOK {
			return c
		}
	} else if len(rs) == 0 {
		fmt.Fprintln(out, "no sshfsm mounts")
	}
	return code
}

// shellWord quotes s for a POSIX shell when it needs it, so that the
// command suggested can be pasted.
func shellWord(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_./-+:@%,=") == "" {
		return s
	}
	return printable("'" + strings.ReplaceAll(s, "'", `'\''`) + "'")
}

func printJSON(out, errw io.Writer, v any) config.ExitCode {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fail(errw, err)
	}
	out.Write(append(b, '\n'))
	return config.ExitOK
}

// queryMount asks the daemon serving the mountpoint p. p is never
// stat'ed itself: the mount of a stuck daemon would hang the caller.
func queryMount(c control.Client, p string) (*control.Status, error) {
	abs, err := filepath.Abs(p)
	if err != nil {
		return nil, config.Errorf(config.ExitUsage, "%s: %v", p, err)
	}
	candidates := []string{abs}
	// The daemon knows its mountpoint with symbolic links resolved; the
	// parent directory is outside the mount, so resolving it is safe.
	if parent, err := filepath.EvalSymlinks(filepath.Dir(abs)); err == nil && abs != "/" {
		if real := filepath.Join(parent, filepath.Base(abs)); real != abs {
			candidates = append(candidates, real)
		}
	}
	for _, mp := range candidates {
		st, err := c.Query(mp)
		switch {
		case errors.Is(err, control.ErrNoSocket):
			continue
		case errors.Is(err, control.ErrGone):
			return nil, config.Errorf(config.ExitMount, "%s: its sshfsm is gone, every access fails with \"Transport endpoint is not connected\"; remove the mount with: fusermount3 -uz %s",
				p, shellWord(p))
		case err != nil:
			return nil, config.Errorf(config.ExitMount, "%v", err)
		}
		return st, nil
	}
	return nil, notServed(p, candidates[len(candidates)-1])
}

// notServed explains why no daemon of the calling user answers for p
// (resolved: real).
func notServed(p, real string) error {
	ms, _ := mountinfo.All()
	var at, inside *mountinfo.Mount
	for i := range ms {
		m := &ms[i]
		switch {
		case m.Point == real:
			at = m
		case m.FSType == "fuse.sshfsm" && strings.HasPrefix(real, strings.TrimSuffix(m.Point, "/")+"/"):
			inside = m
		}
	}
	switch {
	case at != nil && at.FSType == "fuse.sshfsm":
		return config.Errorf(config.ExitMountpoint,
			"%s is an sshfsm mount, but no sshfsm of yours answers for it in %s (mounted by another user, by an older sshfsm, or with another XDG_RUNTIME_DIR; if its sshfsm was killed, remove the mount with fusermount3 -uz %s)",
			p, control.RuntimeDir(), shellWord(p))
	case at != nil:
		return config.Errorf(config.ExitMountpoint, "%s is not an sshfsm mount (it is a %s mount)", p, at.FSType)
	case inside != nil:
		return config.Errorf(config.ExitMountpoint, "%s is not a mountpoint; it is inside the sshfsm mount %s", p, inside.Point)
	}
	return config.Errorf(config.ExitMountpoint, "%s is not an sshfsm mount", p)
}

// writeStatus prints one mount as a block: a heading, the options, the
// cache, then per branch a table of its hosts. Every string of the status
// goes through printable: servers name the branch directories and write
// much of the details (errors, what the watcher said).
func writeStatus(w io.Writer, st *control.Status) {
	m := st.Mount
	fmt.Fprintf(w, "%s  (pid %d, up %s, sshfsm %s)\n", printable(m.Mountpoint), m.PID,
		duration(time.Duration(m.UptimeSeconds*float64(time.Second))), printable(m.Program))
	fmt.Fprintf(w, "  options  %s\n", printable(strings.Join(m.Options, ",")))
	if m.Log != "" {
		fmt.Fprintf(w, "  log      %s\n", printable(m.Log))
	}
	fmt.Fprintf(w, "  cache    %s\n", cacheLine(st.Cache))
	if st.Meta != nil {
		fmt.Fprintf(w, "  metadata %s\n", printable(metaLine(*st.Meta)))
	}
	if r := st.Requests; r != nil {
		fmt.Fprintf(w, "  requests %s\n", printable(requestAgeLine(*r)))
	}
	if d := st.Disk; d != nil {
		fmt.Fprintf(w, "  disk     %s in %d files (%s), hits %s of %s read (%s)\n", humanBytes(uint64(d.Bytes)), d.Entries, printable(d.Dir),
			humanBytes(uint64(d.HitBytes)), humanBytes(uint64(d.HitBytes+d.MissBytes)), percent(d.HitRatio))
	}
	for _, b := range st.Branches {
		mode := "rw"
		if b.ReadOnly {
			mode = "ro"
		}
		fmt.Fprintf(w, "  branch   %s (%s, %s, %s)\n", printable(b.Name), printable(b.Kind), mode, printable(b.Dir))
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "    HOST\tSTATE\tCHANNELS\tIN FLIGHT\tLATENCY\tREAD\tWRITTEN\tERRORS\tRECONNECTS")
		for _, h := range b.Hosts {
			fmt.Fprintf(tw, "    %s\t%s\t%d/%d\t%s\t%s\t%s\t%s\t%d\t%d\n", printable(h.Name), printable(h.State), h.ChannelsUp, h.Channels,
				inFlight(h), latency(h.LatencyMillis), humanBytes(h.BytesRead), humanBytes(h.BytesWritten), h.Errors, h.Reconnects)
		}
		tw.Flush()
		for _, h := range b.Hosts {
			name := printable(h.Name)
			if h.Detail != "" {
				fmt.Fprintf(w, "    %s: %s\n", name, printable(h.Detail))
			}
			if len(b.Hosts) > 1 {
				fmt.Fprintf(w, "    %s requests: %s\n", name, printable(requestsLine(h.Requests)))
			} else {
				fmt.Fprintf(w, "    requests: %s\n", printable(requestsLine(h.Requests)))
			}
			if line := printable(watchLine(h)); line != "" && len(b.Hosts) > 1 {
				fmt.Fprintf(w, "    %s change detection: %s\n", name, line)
			} else if line != "" {
				fmt.Fprintf(w, "    change detection: %s\n", line)
			}
		}
	}
}

// inFlight is a host's requests in flight and, when known, how long the
// oldest has waited.
func inFlight(h control.Host) string {
	if h.InFlight == 0 || h.OldestSeconds <= 0 {
		return fmt.Sprint(h.InFlight)
	}
	return fmt.Sprintf("%d (%s)", h.InFlight, duration(time.Duration(h.OldestSeconds*float64(time.Second))))
}

// requestAgeLine says how many requests of the kernel the daemon is
// answering and how old the oldest is.
func requestAgeLine(r control.Requests) string {
	if r.InFlight == 0 {
		return "none in flight"
	}
	return fmt.Sprintf("%d in flight, oldest %s (%s)", r.InFlight,
		duration(time.Duration(r.OldestSeconds*float64(time.Second))), r.OldestKind)
}

// watchLine says whether changes made on the host are pushed, and why not;
// "" from a daemon that does not say.
func watchLine(h control.Host) string {
	if h.WatchDetail == "" {
		return h.Watch
	}
	return h.Watch + ": " + h.WatchDetail
}

func cacheLine(c control.Cache) string {
	if !c.Enabled {
		return "listings off (dcache_timeout=0)"
	}
	return fmt.Sprintf("listing hits %d/%d (%s), attribute hits %d/%d (%s), negative hits %d",
		c.ListingHits, c.ListingHits+c.ListingMisses, percent(c.ListingRatio),
		c.AttrHits, c.AttrHits+c.AttrMisses, percent(c.AttrRatio), c.NegativeHits)
}

// metaLine sums up the listings kept across mounts.
func metaLine(m control.Meta) string {
	var b strings.Builder
	b.WriteString(m.Mode + ": ")
	if m.SnapshotAgeSeconds < 0 {
		b.WriteString("no snapshot loaded")
	} else {
		fmt.Fprintf(&b, "%d listings (%d names) loaded from a snapshot %s old, %d revalidated, %d changed",
			m.LoadedDirs, m.LoadedEntries, duration(time.Duration(m.SnapshotAgeSeconds*float64(time.Second))),
			m.Revalidated, m.Changed)
		if m.Pending > 0 {
			fmt.Fprintf(&b, ", %d pending", m.Pending)
		}
		switch m.Check {
		case "done":
			fmt.Fprintf(&b, ", checked at mount (%d names changed)", m.CheckChanged)
		case "":
		default:
			fmt.Fprintf(&b, ", check at mount %s", m.Check)
		}
	}
	fmt.Fprintf(&b, "; %d listings (%d names) kept", m.Dirs, m.Entries)
	if m.LastWriteSeconds >= 0 {
		fmt.Fprintf(&b, ", written %s ago", duration(time.Duration(m.LastWriteSeconds*float64(time.Second))))
	}
	if m.WriteError != "" {
		b.WriteString(", last write failed: " + m.WriteError)
	}
	return b.String()
}

func percent(r float64) string {
	if r < 0 {
		return "-"
	}
	return fmt.Sprintf("%.1f%%", 100*r)
}

// requestsLine lists request counts, the most frequent first.
func requestsLine(reqs map[string]uint64) string {
	if len(reqs) == 0 {
		return "none"
	}
	names := make([]string, 0, len(reqs))
	for n := range reqs {
		names = append(names, n)
	}
	sort.Slice(names, func(i, j int) bool {
		if reqs[names[i]] != reqs[names[j]] {
			return reqs[names[i]] > reqs[names[j]]
		}
		return names[i] < names[j]
	})
	parts := make([]string, len(names))
	for i, n := range names {
		parts[i] = fmt.Sprintf("%s %d", n, reqs[n])
	}
	return strings.Join(parts, ", ")
}

func latency(ms float64) string {
	switch {
	case ms <= 0:
		return "-"
	case ms < 10:
		return fmt.Sprintf("%.2f ms", ms)
	}
	return fmt.Sprintf("%.0f ms", ms)
}

// humanBytes is n in binary units: 512 B, 1.5 KiB, 20.0 MiB.
func humanBytes(n uint64) string {
	if n < 1024 {
		return fmt.Sprintf("%d B", n)
	}
	v, unit := float64(n)/1024, 0
	for v >= 1024 && unit < 4 {
		v /= 1024
		unit++
	}
	return fmt.Sprintf("%.1f %s", v, []string{"KiB", "MiB", "GiB", "TiB", "PiB"}[unit])
}

// duration is d to the two largest units: 45s, 12m03s, 5h07m, 3d04h.
func duration(d time.Duration) string {
	s := int64(d / time.Second)
	switch {
	case s < 60:
		return fmt.Sprintf("%ds", s)
	case s < 3600:
		return fmt.Sprintf("%dm%02ds", s/60, s%60)
	case s < 86400:
		return fmt.Sprintf("%dh%02dm", s/3600, s%3600/60)
	}
	return fmt.Sprintf("%dd%02dh", s/86400, s%86400/3600)
}
