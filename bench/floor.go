package main

import (
	"context"
	"os/exec"
	"path/filepath"
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
		argv: func(_, _, dir, mnt string) []string {
			return []string{"sh", "-c", `exec setsid -f "$0" -q "$1" "$2" >/dev/null 2>&1`, bin, mnt, dir}
		}}
}

// cacheTools are the tools of the cache group: every tool, and the floor
// when it could be built.
func (e *env) cacheTools() []*tool {
	ts := e.toolsFor(true)
	if e.floor != nil {
		ts = append(ts, e.floor)
	}
	return ts
}
