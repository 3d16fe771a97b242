package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"sshfsm/internal/testenv"
)

// The union workload (group "union"): a second sshd on 127.0.0.4 holds a
// directory of unionNames files, as the first host does. ls -l of a fresh
// mount of the union of both (2 × unionNames names, the branches listed in
// parallel) is compared with ls -l of one host's directory mounted alone
// (the target), and, to show what the union itself costs, with one host
// alone holding all 2 × unionNames names.

const (
	unionOneKey  = "sshfsm-1-host"
	unionSameKey = "sshfsm-1-host-all"
	unionNames   = 1000
)

var wUnionList = &workload{id: "union-list",
	title: fmt.Sprintf("union of 2 hosts: ls -l of a directory with %d names in each branch, fresh mount (sshfsm = union)", unionNames),
	unit:  "s", target: &target{ref: unionOneKey, limit: 1.2}}

// unionTools are the configurations the union workload reports besides the
// union itself, which is reported as sshfsm (the target applies to it).
func unionTools() []*tool {
	return []*tool{{key: unionOneKey, name: "sshfsm, one host"},
		{key: unionSameKey, name: fmt.Sprintf("sshfsm, one host with all %d names", 2*unionNames)}}
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
	host2, err := testenv.Start(testenv.Options{Addr: "127.0.0.4", Root: filepath.Join(e.work, "union-host")})
	if err != nil {
		return err
	}
	defer host2.Close()
	cfg := filepath.Join(e.work, "ssh_config_union")
	if err := testenv.WriteSSHConfig(cfg, e.host, host2); err != nil {
		return err
	}
	dirA, dirB, dirAll := e.dir("union-a"), filepath.Join(host2.Dir, "union-b"), e.dir("union-all")
	for _, d := range []struct{ dir, prefix string }{{dirA, "a"}, {dirB, "b"}, {dirAll, "a"}, {dirAll, "b"}} {
		if err := fillNames(d.dir, d.prefix, unionNames); err != nil {
			return err
		}
	}
	e.note("union: a second sshd on %s; %d files in a directory of each host; ls -l of a fresh mount after dropping caches",
		host2.Addr, unionNames)
	one, same, union := unionTools()[0], unionTools()[1], &tool{key: sshfsmKey, name: "sshfsm"}
	mnt := filepath.Join(e.work, "mnt", "union")
	for rep := 1; rep <= e.c.repeats; rep++ {
		for _, c := range []struct {
			t        *tool
			branches []string
		}{
			{one, []string{e.host.Alias + ":" + dirA}},
			{union, []string{e.host.Alias + ":" + dirA, host2.Alias + ":" + dirB}},
			{same, []string{e.host.Alias + ":" + dirAll}},
		} {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			want := unionNames * len(c.branches)
			if c.t == same {
				want = 2 * unionNames
			}
			v, err := listFresh(ctx, bin, cfg, c.branches, mnt, want)
			if err != nil {
				r.fail(c.t, wUnionList.id, err)
				continue
			}
			r.add(wUnionList, c.t, v)
			logf("union %d/%d %-14s %8.3f s", rep, e.c.repeats, c.t.key, v)
		}
	}
	return nil
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

// listFresh mounts branches at mnt, drops the page cache, times ls -l of
// the root and checks that it listed want names.
func listFresh(ctx context.Context, bin, cfg string, branches []string, mnt string, want int) (float64, error) {
	t := &tool{key: "union", name: "union", argv: func(cfg, _, _, mnt string) []string {
		return append(append([]string{bin, "-F", cfg}, branches...), mnt)
	}}
	m, err := doMount(ctx, t, cfg, "", "", mnt)
	if err != nil {
		return 0, err
	}
	defer unmount(m)
	dropCaches()
	d, out, err := timeShell(ctx, m.path, "ls -l | wc -l")
	if err != nil {
		return 0, err
	}
	// ls -l prints a "total" line before the names.
	if n, err := strconv.Atoi(strings.TrimSpace(out)); err != nil || n != want+1 {
		return 0, fmt.Errorf("ls -l listed %q lines, want %d names", out, want)
	}
	return d.Seconds(), unmount(m)
}
