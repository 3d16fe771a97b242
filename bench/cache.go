package main

import (
	"context"
	"path/filepath"
)

// The cache workloads (group "cache"): what the disk cache and the
// listings kept across mounts give, behind the latency proxy, on a
// source tree in git (cacheDir, c.smallFiles files of Go's src/). Each
// tool has its own copy's git index, primed through that tool (git
// compares the stat data it saw last), and the local reference its own
// copy of the tree: its times are those of a warm local disk.
//   - git status on a first mount: no disk cache, nothing of earlier
//     mounts (sshfs too);
//   - git status on a remount: the previous mount of the same tree ran
//     git status and was unmounted;
//   - find on a remount, likewise after a find;
//   - grep -r run a second time in the same mount.
const cacheTree = "cachetree"

var (
	wCacheGitFirst   = &workload{id: "cache-git-first", title: "high RTT: git status, first mount", unit: "s", target: &target{ref: sshfsDefault, limit: 0.02}}
	wCacheGitRemount = &workload{id: "cache-git-remount", title: "high RTT: git status, remount with the disk cache warm", unit: "s", target: &target{ref: localKey, limit: 3}}
	wCacheGrepSecond = &workload{id: "cache-grep-second", title: "high RTT: grep -r, second run", unit: "s", target: &target{ref: localKey, limit: 2}}
	wCacheFindRemnt  = &workload{id: "cache-find-remount", title: "high RTT: find ., remount with the disk cache warm", unit: "s", target: &target{ref: localKey, limit: 2}}
)

const (
	shGit  = "git -c safe.directory='*' status > /dev/null"
	shFind = "find . | wc -l"
	shGrep = "grep -r " + grepWord + " . > /dev/null; test $? -le 1"
)

func runCache(ctx context.Context, e *env, r *results) error {
	for _, t := range e.cacheTools() {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if err := cacheTool(ctx, e, r, t); err != nil {
			r.fail(t, wCacheGitFirst.id, err)
		}
	}
	if err := runBuild(ctx, e, r); err != nil {
		return err
	}
	return runCachedRead(ctx, e, r)
}

// cacheTool measures every cache workload with t, c.rttRepeats times.
func cacheTool(ctx context.Context, e *env, r *results, t *tool) error {
	dir := e.dir(cacheTree)
	if t.local || t.floor {
		dir = e.localCopy(cacheTree)
	}
	if err := restoreIndex(dir); err != nil {
		return err
	}
	// Priming: git refreshes its index with the stat data t reports.
	prime := t
	if t.noWrites {
		prime = &tool{key: localKey, local: true}
	}
	if _, err := e.cacheSession(ctx, prime, cacheTree, shGit); err != nil {
		return err
	}
	for rep := 1; rep <= e.c.rttRepeats; rep++ {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		dropCaches()  // the disk cache too: a first mount finds nothing
		if !t.floor { // nothing of a first mount to compare with
			first, err := e.cacheSession(ctx, t, cacheTree, shGit)
			if err != nil {
				return err
			}
			r.add(wCacheGitFirst, t, first[0])
		}
		if t.key == sshfsDefault || t.key == sshfsTuned {
			continue // no disk cache: their remounts are first mounts
		}
		steps := []struct {
			w     *workload
			shs   []string // run in one mount, the last timed
			fresh bool     // a first mount before: the cache holds what it did
		}{
			{wCacheGitRemount, []string{shGit}, false},
			{wCacheFindRemnt, []string{shFind}, true},
			{wCacheGrepSecond, []string{shGrep, shGrep}, true},
		}
		for _, s := range steps {
			if s.fresh && !t.local {
				dropCaches()
				if _, err := e.cacheSession(ctx, t, cacheTree, s.shs[0]); err != nil {
					return err
				}
			}
			d, err := e.cacheSession(ctx, t, cacheTree, s.shs...)
			if err != nil {
				return err
			}
			r.add(s.w, t, d[len(d)-1])
			logf("%-13s %-20s %8.3f s", t.key, s.w.id, d[len(d)-1])
		}
	}
	return nil
}

// cacheSession mounts the served directory with t through the proxy,
// runs each command in the data set sub and returns their times; the
// local reference runs them in its own copy of sub.
func (e *env) cacheSession(ctx context.Context, t *tool, sub string, shs ...string) ([]float64, error) {
	src := e.host.Dir
	if t.floor {
		src = e.localCopy(sub)
	}
	m, err := doMount(ctx, t, e.cfg, e.rttAlias, src, e.mnt(t))
	if err != nil {
		return nil, err
	}
	defer unmount(m)
	var at string
	switch {
	case t.local:
		at = e.localCopy(sub)
	case t.floor:
		at = m.path
	default:
		at = filepath.Join(m.path, sub)
	}
	var out []float64
	for _, sh := range shs {
		d, _, err := timeShell(ctx, at, sh)
		if err != nil {
			return nil, err
		}
		out = append(out, d.Seconds())
	}
	return out, unmount(m)
}

// prepareCacheData copies the tree twice: server-side, and a local copy
// for the local reference, each committed to git.
func prepareCacheData(ctx context.Context, e *env, src string) error {
	for _, dir := range []string{e.dir(cacheTree), e.localCopy(cacheTree)} {
		if _, err := copyTree(src, dir, e.c.smallFiles); err != nil {
			return err
		}
		if err := gitInit(ctx, dir); err != nil {
			return err
		}
	}
	e.note("cache: first %d files of %s, committed to git, server-side and in a local copy for the local reference; RTT %v; the disk cache is emptied before each first mount",
		e.c.smallFiles, src, e.c.rtt)
	if err := randomFile(filepath.Join(e.dir(fioDir), cachedFile), e.c.seqMiB<<20); err != nil {
		return err
	}
	return prepareBuildData(ctx, e)
}
