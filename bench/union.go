package main

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"sshfsm/internal/netproxy"
	"sshfsm/internal/testenv"
)

// The union workloads (group "union"): a second sshd on 127.0.0.4 holds a
// directory of unionNames files, as the first host does. ls -l of a fresh
// mount of the union of both (2 × unionNames names, the branches listed in
// parallel) is compared with ls -l of one host's directory mounted alone
// (the target), and, to show what the union itself costs, with one host
// alone holding all 2 × unionNames names; then a union of two branches
// holding the same unionNames names (the union lists unionNames), and the
// first comparison again with each host behind its own latency proxy.
// ls -l of the same directories on local disk (unionNames and 2 ×
// unionNames names) shows what listing twice the names costs without any
// filesystem of ours: ls and the kernel do work per name too; and through
// the FUSE floor (floor.go), what it costs any go-fuse filesystem.

const (
	unionOneKey  = "sshfsm-1-host"
	unionSameKey = "sshfsm-1-host-all"
	unionLocal1  = "local-1-dir"
	unionLocal2  = "local-all"
	unionFloor1  = "floor-1-dir"
	unionFloor2  = "floor-all"
	unionNames   = 1000
)

var (
	wUnionList = &workload{id: "union-list",
		title: fmt.Sprintf("union of 2 hosts: ls -l of a directory with %d names in each branch, fresh mount (sshfsm = union)", unionNames),
		unit:  "s", target: &target{ref: unionOneKey, limit: 1.2}}
	wUnionOverlap = &workload{id: "union-list-overlap",
		title: fmt.Sprintf("union of 2 hosts holding the same %d names: ls -l (%[1]d names listed), fresh mount (sshfsm = union)", unionNames),
		unit:  "s"}
	wUnionRTT = &workload{id: "union-list-rtt",
		title: fmt.Sprintf("high RTT: union of 2 hosts, each behind its own proxy: ls -l of a directory with %d names in each branch, fresh mount (sshfsm = union; one host through its proxy too)", unionNames),
		unit:  "s"}
	wUnionFind = &workload{id: "union-find-rtt",
		title: "high RTT: find of two source trees, one on each host, each behind its own proxy, fresh mount (sshfsm = union of both hosts; one host holding both trees)",
		unit:  "s"}
	wGraftFind = &workload{id: "graft-find-rtt",
		title: "high RTT: find of two source trees grafted from two hosts (A=host1:… B=host2:…), each behind its own proxy, fresh mount (sshfsm = the grafts; one host holding both trees)",
		unit:  "s"}
)

// unionTools are the configurations the union workloads report besides the
// union itself, which is reported as sshfsm (the target applies to it).
func unionTools() []*tool {
	return []*tool{{key: unionOneKey, name: "sshfsm, one host"},
		{key: unionSameKey, name: fmt.Sprintf("sshfsm, one host with all %d names", 2*unionNames)},
		{key: unionLocal1, name: fmt.Sprintf("local disk, %d names", unionNames), local: true},
		{key: unionLocal2, name: fmt.Sprintf("local disk, %d names", 2*unionNames), local: true},
		{key: unionFloor1, name: fmt.Sprintf("FUSE floor, %d names", unionNames), floor: true},
		{key: unionFloor2, name: fmt.Sprintf("FUSE floor, %d names", 2*unionNames), floor: true}}
}

// unionRun is one mount measured in every repeat; its sample counts for
// each of ws (the one-host mount is the reference of two workloads).
type unionRun struct {
	label    string
	t        *tool
	branches []string // none: local lists dir on local disk
	dir      string
	want     int // names ls -l must show
	ws       []*workload
	walk     bool // find instead of ls -l; want counts find's lines
}

// unionEnv is the second host, the proxies in front of both hosts and
// the ssh config reaching them directly and through the proxies.
type unionEnv struct {
	host2  *testenv.Host
	proxy2 *netproxy.Proxy // the first host's is e.proxy
	cfg    string
	runs   []unionRun
}

func runUnion(ctx context.Context, e *env, r *results) error {
	bin := ""
	for _, t := range e.tools {
		if t.key == sshfsmKey {
			bin = t.argv("", "", "", "")[0]
		}
	}
	if bin == "" {
		return fmt.Errorf("union: sshfsm is not among the tools")
	}
	ue, err := newUnionEnv(e)
	if err != nil {
		return err
	}
	defer ue.close()
	mnt := filepath.Join(e.work, "mnt", "union")
	for rep := 1; rep <= e.c.repeats; rep++ {
		for _, u := range ue.runs {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			var v float64
			switch {
			case u.t.floor:
				v, err = listFloor(ctx, e.floor, u.dir, mnt, u.want)
			case u.branches == nil:
				v, err = listLocal(ctx, u.dir, u.want)
			default:
				v, err = listFresh(ctx, bin, ue.cfg, u.branches, mnt, u.want, u.walk)
			}
			if err != nil {
				r.fail(u.t, u.ws[0].id, err)
				continue
			}
			for _, w := range u.ws {
				r.add(w, u.t, v)
			}
			logf("union %d/%d %-18s %8.3f s", rep, e.c.repeats, u.label, v)
		}
	}
	var ratios []string
	for _, w := range []*workload{wUnionList, wUnionOverlap, wUnionRTT, wUnionFind, wGraftFind} {
		if s := r.ratio(w, sshfsmKey, unionOneKey); s != "" {
			ratios = append(ratios, w.id+" "+s)
		}
	}
	e.note("union: median union / one host: %s", strings.Join(ratios, ", "))
	if s := r.ratio(wUnionList, unionLocal2, unionLocal1); s != "" {
		e.note("union: local disk, ls -l of %d names / %d names: %s", 2*unionNames, unionNames, s)
	}
	if s := r.ratio(wUnionList, unionFloor2, unionFloor1); s != "" {
		e.note("union: FUSE floor, ls -l of %d names / %d names: %s", 2*unionNames, unionNames, s)
	}
	return nil
}

// newUnionEnv starts the second host and its proxy, writes the data and
// the ssh config, and lists the mounts to measure.
func newUnionEnv(e *env) (*unionEnv, error) {
	host2, err := testenv.Start(testenv.Options{Addr: "127.0.0.4", Root: filepath.Join(e.work, "union-host")})
	if err != nil {
		return nil, err
	}
	ue := &unionEnv{host2: host2, cfg: filepath.Join(e.work, "ssh_config_union")}
	target := host2.Addr + ":" + strconv.Itoa(host2.Port)
	if ue.proxy2, err = netproxy.Listen(host2.Addr+":0", target, netproxy.Symmetric(e.c.rtt/2, 0)); err != nil {
		ue.close()
		return nil, err
	}
	// HostKeyAlias in the blocks through the proxies: host keys are
	// still verified against the direct entries.
	rtt1, rtt2 := e.host.Alias+"-union-rtt", host2.Alias+"-union-rtt"
	blocks := []string{e.host.ConfigBlock(), host2.ConfigBlock(),
		e.host.ConfigBlockVia(rtt1, e.host.Addr, e.proxy.Port()), host2.ConfigBlockVia(rtt2, host2.Addr, ue.proxy2.Port())}
	if err := os.WriteFile(ue.cfg, []byte(strings.Join(blocks, "\n")), 0o600); err != nil {
		ue.close()
		return nil, err
	}
	// dirA2 holds the names of dirA: the overlap workload.
	dirA, dirB, dirAll := e.dir("union-a"), filepath.Join(host2.Dir, "union-b"), e.dir("union-all")
	dirA2 := filepath.Join(host2.Dir, "union-a")
	for _, d := range []struct{ dir, prefix string }{{dirA, "a"}, {dirB, "b"}, {dirAll, "a"}, {dirAll, "b"}, {dirA2, "a"}} {
		if err := fillNames(d.dir, d.prefix, unionNames); err != nil {
			ue.close()
			return nil, err
		}
	}
	// Two source trees, a/ on the first host and b/ on the second, and
	// both on the first host: the walks.
	treeA, treeB, treeAll := e.dir("union-tree-a"), filepath.Join(host2.Dir, "union-tree-b"), e.dir("union-tree-all")
	for _, d := range []struct{ dir, sub string }{{treeA, "a"}, {treeB, "b"}, {treeAll, "a"}, {treeAll, "b"}} {
		if _, err := copyTree(e.src, filepath.Join(d.dir, d.sub), e.c.smallFiles); err != nil {
			ue.close()
			return nil, err
		}
	}
	walkWant, err := countNames(treeAll)
	if err != nil {
		ue.close()
		return nil, err
	}
	e.note("union: a second sshd on %s; %d files in a directory of each host (the same names on both for %s); ls -l of a fresh mount after dropping caches; for %s each sshd is reached through its own internal/netproxy adding %v RTT (ssh_config aliases with HostKeyAlias)",
		host2.Addr, unionNames, wUnionOverlap.id, wUnionRTT.id, e.c.rtt)
	e.note("union: %s and %s: the first %d files of %s as a/ on the first host and as b/ on the second (%d names in all), find . | wc -l of a fresh mount after dropping caches, both hosts through their proxies; the reference holds a/ and b/ on the first host",
		wUnionFind.id, wGraftFind.id, e.c.smallFiles, e.src, walkWant)
	a1, a2 := e.host.Alias+":", host2.Alias+":"
	ut := unionTools()
	one, all, local1, local2, union := ut[0], ut[1], ut[2], ut[3], &tool{key: sshfsmKey, name: "sshfsm"}
	floor1, floor2 := ut[4], ut[5]
	ue.runs = []unionRun{
		{"one-host", one, []string{a1 + dirA}, "", unionNames, []*workload{wUnionList, wUnionOverlap}, false},
		{"union", union, []string{a1 + dirA, a2 + dirB}, "", 2 * unionNames, []*workload{wUnionList}, false},
		{"one-host-all", all, []string{a1 + dirAll}, "", 2 * unionNames, []*workload{wUnionList}, false},
		{"local", local1, nil, dirA, unionNames, []*workload{wUnionList}, false},
		{"local-all", local2, nil, dirAll, 2 * unionNames, []*workload{wUnionList}, false},
		{"union-same-names", union, []string{a1 + dirA, a2 + dirA2}, "", unionNames, []*workload{wUnionOverlap}, false},
		{"one-host-rtt", one, []string{rtt1 + ":" + dirA}, "", unionNames, []*workload{wUnionRTT}, false},
		{"union-rtt", union, []string{rtt1 + ":" + dirA, rtt2 + ":" + dirB}, "", 2 * unionNames, []*workload{wUnionRTT}, false},
		{"one-host-trees-rtt", one, []string{rtt1 + ":" + treeAll}, "", walkWant, []*workload{wUnionFind, wGraftFind}, true},
		{"union-trees-rtt", union, []string{rtt1 + ":" + treeA, rtt2 + ":" + treeB}, "", walkWant, []*workload{wUnionFind}, true},
		{"graft-trees-rtt", union, []string{"a=" + rtt1 + ":" + treeA + "/a", "b=" + rtt2 + ":" + treeB + "/b"}, "", walkWant, []*workload{wGraftFind}, true},
	}
	if e.floor != nil {
		ue.runs = append(ue.runs,
			unionRun{"floor", floor1, nil, dirA, unionNames, []*workload{wUnionList}, false},
			unionRun{"floor-all", floor2, nil, dirAll, 2 * unionNames, []*workload{wUnionList}, false})
	}
	return ue, nil
}

func (ue *unionEnv) close() {
	if ue.proxy2 != nil {
		ue.proxy2.Close()
	}
	ue.host2.Close()
}

// fillNames creates n empty files prefixNNNN in dir.
func fillNames(dir, prefix string, n int) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for i := range n {
		f, err := os.Create(filepath.Join(dir, fmt.Sprintf("%s%04d", prefix, i)))
		if err != nil {
			return err
		}
		f.Close()
	}
	return nil
}

// listLocal drops the page cache and times ls -l of dir on local disk,
// checking that it listed want names.
func listLocal(ctx context.Context, dir string, want int) (float64, error) {
	dropCaches()
	d, out, err := timeShell(ctx, dir, "ls -l | wc -l")
	if err != nil {
		return 0, err
	}
	if n, err := strconv.Atoi(strings.TrimSpace(out)); err != nil || n != want+1 {
		return 0, fmt.Errorf("ls -l listed %q lines, want %d names", out, want)
	}
	return d.Seconds(), nil
}

// listFloor mounts dir with the FUSE floor at mnt, drops the page cache,
// times ls -l of the root and checks that it listed want names.
func listFloor(ctx context.Context, floor *tool, dir, mnt string, want int) (float64, error) {
	m, err := doMount(ctx, floor, "", "", dir, mnt)
	if err != nil {
		return 0, err
	}
	return listMount(ctx, m, want)
}

// listFresh empties the disk cache (the listings the previous mount left),
// mounts branches at mnt, drops the page cache, times ls -l of the root,
// or with walk find, and checks that it listed want names.
func listFresh(ctx context.Context, bin, cfg string, branches []string, mnt string, want int, walk bool) (float64, error) {
	t := &tool{key: "union", name: "union", argv: func(cfg, _, _, mnt string) []string {
		return append(append([]string{bin, "-F", cfg, "-o", "cache_dir=" + diskCacheDir}, branches...), mnt)
	}}
	clearDiskCache()
	m, err := doMount(ctx, t, cfg, "", "", mnt)
	if err != nil {
		return 0, err
	}
	if walk {
		return timeMount(ctx, m, "find . | wc -l", want)
	}
	return listMount(ctx, m, want)
}

// listMount drops the page cache, times ls -l of the root of m, checks
// that it listed want names and unmounts m.
func listMount(ctx context.Context, m *mount, want int) (float64, error) {
	// ls -l prints a "total" line before the names.
	return timeMount(ctx, m, "ls -l | wc -l", want+1)
}

// timeMount drops the caches, times sh (which prints a line count) at the
// root of m, checks that count and unmounts m.
func timeMount(ctx context.Context, m *mount, sh string, lines int) (float64, error) {
	defer unmount(m)
	dropCaches()
	d, out, err := timeShell(ctx, m.path, sh)
	if err != nil {
		return 0, err
	}
	if n, err := strconv.Atoi(strings.TrimSpace(out)); err != nil || n != lines {
		return 0, fmt.Errorf("%s: %q lines, want %d", sh, out, lines)
	}
	return d.Seconds(), unmount(m)
}

// countNames counts what find lists in dir, dir itself included.
func countNames(dir string) (int, error) {
	n := 0
	err := filepath.WalkDir(dir, func(_ string, _ fs.DirEntry, err error) error {
		n++
		return err
	})
	return n, err
}
