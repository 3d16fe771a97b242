package main

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// metaCmd is one shell command timed in a tree.
type metaCmd struct {
	name       string
	sh         string
	cold, warm *workload
	git        bool // modifies .git/index: start each tool from the same index
}

// grepWord is searched for by the grep workload; grep reads every file whole.
const grepWord = "GOMAXPROCS"

var metaCmds = []metaCmd{
	{name: "find", sh: "find . | wc -l", cold: wFindCold, warm: wFindWarm},
	{name: "ls -lR", sh: "ls -lR > /dev/null", cold: wLsCold, warm: wLsWarm},
	{name: "git status", sh: "git -c safe.directory='*' status > /dev/null", cold: wGitCold, warm: wGitWarm, git: true},
	{name: "grep -r", sh: grepShell, cold: wGrepCold, warm: wGrepWarm},
}

// grepShell greps the data set; no match is no failure.
const grepShell = "grep -r " + grepWord + " . > /dev/null; test $? -le 1"

// timeShell runs sh in dir and returns the wall time and stdout.
func timeShell(ctx context.Context, dir, sh string) (time.Duration, string, error) {
	return timeShellFor(ctx, dir, sh, 15*time.Minute)
}

// timeShellFor is timeShell with sh killed after limit.
func timeShellFor(ctx context.Context, dir, sh string, limit time.Duration) (time.Duration, string, error) {
	cctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	cmd := exec.CommandContext(cctx, "sh", "-c", sh)
	cmd.Dir = dir
	var out, errb strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errb
	start := time.Now()
	err := cmd.Run()
	d := time.Since(start)
	if err != nil {
		return d, "", fmt.Errorf("%s in %s: %v: %s", sh, dir, err, firstLine(errb.String()))
	}
	return d, strings.TrimSpace(out.String()), nil
}

// coldWarm mounts afresh after dropping caches, runs mc twice and records
// the first run as cold and the second as warm (when mc has a warm
// workload). sub is the data set below the served directory.
func coldWarm(ctx context.Context, e *env, r *results, t *tool, alias, sub string, mc metaCmd) error {
	dropCaches()
	m, err := doMount(ctx, t, e.cfg, alias, e.host.Dir, e.mnt(t))
	if err != nil {
		return err
	}
	defer unmount(m)
	dir := filepath.Join(m.path, sub)
	runs := []*workload{mc.cold}
	if mc.warm != nil {
		runs = append(runs, mc.warm)
	}
	for _, w := range runs {
		d, out, err := timeShell(ctx, dir, mc.sh)
		if err != nil {
			return err
		}
		r.add(w, t, d.Seconds())
		if mc.name == "find" {
			if n, err := strconv.Atoi(out); err == nil {
				r.count(w, t, n)
			}
		}
		logf("%-13s %-20s %8.3f s", t.key, w.id, d.Seconds())
	}
	return unmount(m)
}

// primeGit puts back the server-side index and runs git status once through
// a mount of t, as a user's earlier session on that tool would have: git
// then holds the stat data that tool reports.
func primeGit(ctx context.Context, e *env, t *tool, alias, sub string) error {
	if err := restoreIndex(e.dir(sub)); err != nil {
		return err
	}
	m, err := doMount(ctx, t, e.cfg, alias, e.host.Dir, e.mnt(t))
	if err != nil {
		return err
	}
	defer unmount(m)
	d, _, err := timeShell(ctx, filepath.Join(m.path, sub), "git -c safe.directory='*' status > /dev/null")
	if err != nil {
		return err
	}
	logf("%-13s git status (index refresh, not counted) %.3f s", t.key, d.Seconds())
	return unmount(m)
}

// runMeta measures the metadata workloads on loopback on the full tree.
func runMeta(ctx context.Context, e *env, r *results) error {
	for _, mc := range metaCmds {
		run := metaInterleaved
		if mc.git {
			run = metaPerTool
		}
		if err := run(ctx, e, r, mc); err != nil {
			return err
		}
	}
	return nil
}

// metaInterleaved runs the repeats of mc with the tools interleaved within
// each repeat, so that background load spreads over all of them.
func metaInterleaved(ctx context.Context, e *env, r *results, mc metaCmd) error {
	failed := map[*tool]bool{}
	for rep := 1; rep <= e.c.repeats; rep++ {
		for _, t := range e.toolsFor(true) {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			if failed[t] {
				continue
			}
			if err := coldWarm(ctx, e, r, t, e.alias, treeDir, mc); err != nil {
				r.fail(t, mc.cold.id, err)
				failed[t] = true
			}
		}
	}
	return nil
}

// metaPerTool runs the repeats of a git command one tool after the other:
// git rewrites the index with the stat data the tool reports, so each
// tool's runs follow its own priming (primeGit).
func metaPerTool(ctx context.Context, e *env, r *results, mc metaCmd) error {
	for _, t := range e.toolsFor(true) {
		if err := primeGit(ctx, e, t, e.alias, treeDir); err != nil {
			r.fail(t, mc.cold.id, err)
			continue
		}
		for rep := 1; rep <= e.c.repeats; rep++ {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			if err := coldWarm(ctx, e, r, t, e.alias, treeDir, mc); err != nil {
				r.fail(t, mc.cold.id, err)
				break
			}
		}
	}
	return nil
}

// runRTT measures sequential read, find and git status through the latency
// proxy.
func runRTT(ctx context.Context, e *env, r *results) error {
	c := e.c
	cmds := []metaCmd{
		{name: "find", sh: "find . | wc -l", cold: wRTTFind},
		{name: "git status", sh: "git -c safe.directory='*' status > /dev/null", cold: wRTTGit, git: true},
		{name: "grep -r", sh: grepShell, cold: wRTTGrep},
	}
	reads := []fioJob{
		{w: wRTTSeqRead, rw: "read", bs: "128k", depth: 4, file: "rtt.dat", mib: c.rttMiB},
		{w: wRTTSeqReadBuf, rw: "read", bs: "1m", depth: 1, file: "rtt.dat", mib: c.rttMiB, buffered: true},
	}
	for _, t := range e.toolsFor(false) {
		for _, read := range reads {
			if err := rttRead(ctx, e, r, t, read); err != nil {
				return err
			}
		}
		for _, mc := range cmds {
			if mc.git {
				if err := primeGit(ctx, e, t, e.rttAlias, smallDir); err != nil {
					r.fail(t, mc.cold.id, err)
					continue
				}
			}
			for rep := 1; rep <= c.rttRepeats; rep++ {
				if ctx.Err() != nil {
					return ctx.Err()
				}
				if err := coldWarm(ctx, e, r, t, e.rttAlias, smallDir, mc); err != nil {
					r.fail(t, mc.cold.id, err)
					break
				}
			}
		}
	}
	return nil
}

// rttRead runs one fio read job through the proxy, each repeat on a fresh
// mount so that nothing is in the page cache.
func rttRead(ctx context.Context, e *env, r *results, t *tool, read fioJob) error {
	for rep := 1; rep <= e.c.rttRepeats; rep++ {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		m, err := doMount(ctx, transportOnly(t), e.cfg, e.rttAlias, e.host.Dir, e.mnt(t))
		if err != nil {
			r.fail(t, read.w.id, err)
			return nil
		}
		v, err := runFioJob(ctx, m.path, read, e.c.runtime)
		unmount(m)
		if err != nil {
			r.fail(t, read.w.id, err)
			return nil
		}
		r.add(read.w, t, v)
		logf("%-13s %-20s %8.1f %s", t.key, read.w.id, v, read.w.unit)
	}
	return nil
}

// runRSS walks the wide tree on a fresh mount and reads the daemon's memory.
func runRSS(ctx context.Context, e *env, r *results) error {
	for rep := 1; rep <= e.c.rssRepeats; rep++ {
		for _, t := range e.toolsFor(false) {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			if err := walkRSS(ctx, e, r, t); err != nil {
				r.fail(t, wRSS.id, err)
			}
		}
	}
	return nil
}

func walkRSS(ctx context.Context, e *env, r *results, t *tool) error {
	dropCaches()
	m, err := doMount(ctx, t, e.cfg, e.alias, e.host.Dir, e.mnt(t))
	if err != nil {
		return err
	}
	defer unmount(m)
	if m.pid == 0 {
		return fmt.Errorf("daemon process of %s not found", m.path)
	}
	d, out, err := timeShell(ctx, filepath.Join(m.path, manyDir), "find . | wc -l")
	if err != nil {
		return err
	}
	rss, hwm, err := rssKiB(m.pid)
	if err != nil {
		return err
	}
	r.add(wWalk, t, d.Seconds())
	r.add(wRSS, t, float64(rss)*1024/1e6)
	r.add(wHWM, t, float64(hwm)*1024/1e6)
	if n, err := strconv.Atoi(out); err == nil {
		r.count(wWalk, t, n)
	}
	logf("%-13s walk %s entries %.2f s, RSS %.1f MB (peak %.1f MB)", t.key, out, d.Seconds(),
		float64(rss)*1024/1e6, float64(hwm)*1024/1e6)
	return unmount(m)
}
