package main

import (
	"context"
	"fmt"
	"os/exec"
	"slices"
)

// The git first contact workloads (group "git"): a checkout whose index
// git wrote on the server, as a user who cloned or worked there leaves it,
// met by a fresh mount with every cache empty; the first git status
// through the tool is timed. git takes a file whose inode number or
// change time differs from its index's for changed and reads it whole,
// so this is where a tool showing the server's numbers differs. Two
// trees: Go's src/ on loopback (git-first-contact), and its first
// -small-files files behind the latency proxy (rtt-git-first-contact).
// The git-status-cold and rtt-git-status-cold rows are the same command
// after a priming run through the tool (primeGit).
var (
	wGitFirst    = &workload{id: "git-first-contact", title: "git status, first contact with an index written on the server", unit: "s", target: &target{ref: sshfsDefault, limit: 0.1}}
	wRTTGitFirst = &workload{id: "rtt-git-first-contact", title: "high RTT: git status, first contact with an index written on the server", unit: "s", target: &target{ref: sshfsDefault, limit: 0.02}}
)

func init() {
	// Each reported next to its primed git status.
	for _, p := range []struct{ after, w *workload }{{wGitWarm, wGitFirst}, {wRTTGit, wRTTGitFirst}} {
		i := slices.Index(workloads, p.after)
		workloads = slices.Insert(workloads, i+1, p.w)
	}
}

// runGitFirst times the first git status through each tool on a fresh
// mount, after git refreshed the index on the server: on loopback over
// the whole tree, then behind the latency proxy over the small one. The
// tools take turns within each repeat, so background load spreads over
// all of them.
func runGitFirst(ctx context.Context, e *env, r *results) error {
	sets := []struct {
		alias, sub string
		w          *workload
		repeats    int
	}{
		{e.alias, treeDir, wGitFirst, e.c.repeats},
		{e.rttAlias, smallDir, wRTTGitFirst, e.c.rttRepeats},
	}
	for _, s := range sets {
		mc := metaCmd{name: "git status", sh: shGit, cold: s.w, git: true}
		failed := map[*tool]bool{}
		for rep := 1; rep <= s.repeats; rep++ {
			for _, t := range e.toolsFor(false) {
				if ctx.Err() != nil {
					return ctx.Err()
				}
				if failed[t] {
					continue
				}
				if err := serverIndex(ctx, e.dir(s.sub)); err != nil {
					return err
				}
				if err := coldWarm(ctx, e, r, t, s.alias, s.sub, mc); err != nil {
					r.fail(t, mc.cold.id, err)
					failed[t] = true
				}
			}
		}
	}
	return nil
}

// serverIndex puts back the index gitInit wrote and has git refresh it
// on the server: its entries then hold the server's stat data, none of
// them racily clean (written in the second the index was).
func serverIndex(ctx context.Context, dir string) error {
	if err := restoreIndex(dir); err != nil {
		return err
	}
	cmd := exec.CommandContext(ctx, "git", "-c", "safe.directory=*", "update-index", "-q", "--really-refresh")
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("git update-index in %s: %v: %s", dir, err, out)
	}
	return nil
}
