package main

import (
	"context"
	_ "embed"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// The FUSE floor (cache group): go-fuse's own loopback example serving
// the local reference's copy of a data set. It answers every request from
// the local disk, with no network, no protocol and no cache of its own,
// so its times are what the kernel and go-fuse alone cost for a workload
// on this machine: the floor under any go-fuse filesystem, sshfsm
// included. Its remounts start, as sshfsm's do, with nothing in the
// kernel's caches for the mount.
const floorKey = "fuse-floor"

// newFloorTool builds the loopback example from the module cache (go-fuse
// is a dependency) into the work directory; nil when that fails.
func (e *env) newFloorTool(ctx context.Context) *tool {
	bin := filepath.Join(e.work, "loopback")
	out, err := exec.CommandContext(ctx, "go", "build", "-o", bin, "github.com/hanwen/go-fuse/v2/example/loopback").CombinedOutput()
	if err != nil {
		e.note("FUSE floor NOT measured: go build of go-fuse's example/loopback failed: %s", firstLine(string(out)))
		return nil
	}
	e.note("FUSE floor: go-fuse's example/loopback (the go-fuse version sshfsm is built with) serving the local reference's copy, mounted afresh for each remount row")
	return floorTool(bin)
}

// floorTool mounts dir with the loopback binary, detached (it serves in
// the foreground), at mnt; cfg and alias are not used.
func floorTool(bin string) *tool {
	return &tool{key: floorKey, name: "FUSE floor (go-fuse loopback of local disk)", floor: true,
		argv: func(_, _, dir, mnt string) []string { return detached(bin, "-q", mnt, dir) }}
}

// detached is the command line that starts bin with args in a session of
// its own, its output discarded: a floor serves in the foreground.
func detached(bin string, args ...string) []string {
	return append([]string{"sh", "-c", `exec setsid -f "$0" "$@" >/dev/null 2>&1`, bin}, args...)
}

// The C floor (cache group): cfloor/cfloor.c, a FUSE server that answers
// from a snapshot in memory, sends no request of its own, and tells the
// kernel it has no open, so that it is not asked to open or release
// anything. Below go-fuse's floor, it is what the kernel's FUSE requests
// alone cost a workload on this machine, for a server in any language.
const cFloorKey = "c-floor"

//go:embed cfloor/cfloor.c
var cFloorSource []byte

// newCFloorTool compiles cfloor.c into the work directory with the system's
// C compiler and libfuse3 (Debian: gcc, pkg-config, libfuse3-dev); nil
// when they are missing.
func (e *env) newCFloorTool(ctx context.Context) *tool {
	src := filepath.Join(e.work, "cfloor.c")
	bin := filepath.Join(e.work, "cfloor")
	if err := os.WriteFile(src, cFloorSource, 0o644); err != nil {
		e.note("C floor NOT measured: %v", err)
		return nil
	}
	flags, err := exec.CommandContext(ctx, "pkg-config", "--cflags", "--libs", "fuse3").Output()
	if err != nil {
		e.note("C floor NOT measured: pkg-config finds no fuse3 (Debian: apt-get install gcc pkg-config libfuse3-dev)")
		return nil
	}
	args := append([]string{"-O2", "-o", bin, src}, strings.Fields(string(flags))...)
	if out, err := exec.CommandContext(ctx, "cc", args...).CombinedOutput(); err != nil {
		e.note("C floor NOT measured: cc cfloor.c failed: %s", firstLine(string(out)))
		return nil
	}
	e.note("C floor: bench/cfloor/cfloor.c, a one-thread libfuse server answering from a snapshot in memory of the local reference's copy, with day-long timeouts and no open or opendir requests; mounted afresh for each remount row")
	return cFloorTool(bin)
}

// cFloorTool mounts dir with the cfloor binary, detached, at mnt.
func cFloorTool(bin string) *tool {
	return &tool{key: cFloorKey, name: "C floor (in-memory libfuse server, no opens)", floor: true, noWrites: true,
		argv: func(_, _, dir, mnt string) []string { return detached(bin, dir, mnt) }}
}

// cacheTools are the tools of the cache group: every tool, and the floors
// that could be built.
func (e *env) cacheTools() []*tool {
	ts := e.toolsFor(true)
	for _, f := range []*tool{e.floor, e.cFloor} {
		if f != nil {
			ts = append(ts, f)
		}
	}
	return ts
}
