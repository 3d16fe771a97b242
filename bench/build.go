package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// The build workloads (group "cache"): `go build ./...` of this module's
// own source, stored on the server and reached through the latency proxy,
// against the same build of a local copy. The Go build cache (GOCACHE,
// always local, as on a developer's machine) starts each first build
// holding the standard library and the module's dependencies compiled,
// but none of the module's own packages: what a checkout of a project
// the developer has not built yet costs. The second build runs right
// after in the same mount; it finds every package in GOCACHE, and what
// remains is reading and hashing every source file, as go does on each
// build. The page cache (and sshfsm's disk cache) is dropped before each
// first build.
const buildTree = "buildtree"

var (
	wBuildFirst  = &workload{id: "build-first", title: "high RTT: go build ./... of this module, first time", unit: "s", target: &target{ref: localKey, limit: 3}}
	wBuildSecond = &workload{id: "build-second", title: "high RTT: go build ./... of this module, second time", unit: "s", target: &target{ref: localKey, limit: 1.3}}
)

// buildShell is the timed build: a GOCACHE of the run's own, no network,
// no VCS stamping (git status has its own rows).
func (e *env) buildShell() string {
	return fmt.Sprintf("GOCACHE=%s GOPROXY=off GOFLAGS=-buildvcs=false GOTOOLCHAIN=local go build ./...",
		e.buildCache())
}

func (e *env) buildCache() string       { return filepath.Join(e.work, "gocache") }
func (e *env) buildCachePrimed() string { return filepath.Join(e.work, "gocache-primed") }

// runBuild times the first and second build with each tool,
// c.rttRepeats times.
func runBuild(ctx context.Context, e *env, r *results) error {
	for _, t := range e.cacheTools() {
		for rep := 1; rep <= e.c.rttRepeats; rep++ {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			if err := resetBuildCache(ctx, e); err != nil {
				return err
			}
			dropCaches()
			d, err := e.cacheSession(ctx, t, buildTree, e.buildShell(), e.buildShell())
			if err != nil {
				r.fail(t, wBuildFirst.id, err)
				break
			}
			r.add(wBuildFirst, t, d[0])
			r.add(wBuildSecond, t, d[1])
			logf("%-13s %-20s %8.3f s, second %8.3f s", t.key, wBuildFirst.id, d[0], d[1])
		}
	}
	return nil
}

// resetBuildCache makes the run's GOCACHE a copy of the primed one.
func resetBuildCache(ctx context.Context, e *env) error {
	if err := os.RemoveAll(e.buildCache()); err != nil {
		return err
	}
	out, err := exec.CommandContext(ctx, "cp", "-a", e.buildCachePrimed(), e.buildCache()).CombinedOutput()
	if err != nil {
		return fmt.Errorf("cp -a %s: %v: %s", e.buildCachePrimed(), err, out)
	}
	return nil
}

// prepareBuildData copies this checkout as go build sees it (the
// benchmark runs from its root: tracked files and untracked ones git does
// not ignore, less those deleted) server-side and to a local copy, and
// primes a GOCACHE with everything the module imports from outside it.
func prepareBuildData(ctx context.Context, e *env) error {
	out, err := exec.CommandContext(ctx, "git", "ls-files", "-z", "--cached", "--others", "--exclude-standard").Output()
	if err != nil {
		return fmt.Errorf("git ls-files (the build workload copies this checkout): %w", err)
	}
	var files []string
	for _, f := range strings.Split(strings.TrimRight(string(out), "\x00"), "\x00") {
		if _, err := os.Lstat(f); err == nil {
			files = append(files, f)
		}
	}
	for _, dst := range []string{e.dir(buildTree), e.localCopy(buildTree)} {
		if err := copyFiles(files, dst); err != nil {
			return err
		}
	}
	list := exec.CommandContext(ctx, "go", "list", "-deps", "-f",
		"{{with .Module}}{{if not .Main}}{{$.ImportPath}}{{end}}{{else}}{{$.ImportPath}}{{end}}", "./...")
	list.Dir = e.localCopy(buildTree)
	deps, err := list.Output()
	if err != nil {
		return fmt.Errorf("go list -deps: %w", err)
	}
	pkgs := strings.Fields(string(deps))
	build := exec.CommandContext(ctx, "go", append([]string{"build"}, pkgs...)...)
	build.Dir = e.localCopy(buildTree)
	build.Env = append(os.Environ(), "GOCACHE="+e.buildCachePrimed(), "GOPROXY=off", "GOFLAGS=-buildvcs=false", "GOTOOLCHAIN=local")
	if out, err := build.CombinedOutput(); err != nil {
		return fmt.Errorf("priming GOCACHE: go build of %d packages: %v: %s", len(pkgs), err, firstLine(string(out)))
	}
	e.note("build: this checkout's %d files (git ls-files: tracked and not ignored) server-side and in a local copy; `go build ./...` with a GOCACHE primed with the %d packages it imports from outside the module (standard library and dependencies), a copy of it before each first build; the second build follows in the same mount",
		len(files), len(pkgs))
	return nil
}

// copyFiles copies the named files, relative to the working directory,
// below dst.
func copyFiles(names []string, dst string) error {
	for _, name := range names {
		b, err := os.ReadFile(name)
		if err != nil {
			return err
		}
		info, err := os.Stat(name)
		if err != nil {
			return err
		}
		to := filepath.Join(dst, name)
		if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(to, b, info.Mode().Perm()|0o200); err != nil {
			return err
		}
	}
	return nil
}
