package main

import (
	"context"
	"fmt"
	"os/exec"
	"slices"
)

// The git first contact workload (group "rtt"): a checkout whose index git
// wrote on the server, as a user who cloned or worked there leaves it,
// met by a fresh mount with every cache empty; the first git status
// through the tool is timed. git takes a file whose inode number or
// change time differs from its index's for changed and reads it whole,
// so this is where a tool showing the server's numbers differs. The
// rtt-git-status-cold row is the same command after a priming run
// through the tool (primeGit).
var wRTTGitFirst = &workload{id: "rtt-git-first-contact", title: "high RTT: git status, first contact with an index written on the server", unit: "s", target: &target{ref: sshfsDefault, limit: 0.02}}

func init() {
	// Reported next to the primed git status.
	i := slices.Index(workloads, wRTTGit)
	workloads = slices.Insert(workloads, i+1, wRTTGitFirst)
}

// runGitFirst times git status through each tool, on a fresh mount behind
// the latency proxy, after git refreshed the index on the server.
func runGitFirst(ctx context.Context, e *env, r *results) error {
	mc := metaCmd{name: "git status", sh: shGit, cold: wRTTGitFirst, git: true}
	for _, t := range e.toolsFor(false) {
		for rep := 1; rep <= e.c.rttRepeats; rep++ {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			if err := serverIndex(ctx, e.dir(smallDir)); err != nil {
				return err
			}
			if err := coldWarm(ctx, e, r, t, e.rttAlias, smallDir, mc); err != nil {
				r.fail(t, mc.cold.id, err)
				break
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
