package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"

	"sshfsm/internal/netproxy"
	"sshfsm/internal/testenv"
)

// env is the served host, the latency proxy in front of it and the data.
type env struct {
	c        *config
	work     string // everything of this run lives below here
	host     *testenv.Host
	proxy    *netproxy.Proxy
	cfg      string // ssh config defining alias and rttAlias
	alias    string // direct to sshd
	rttAlias string // through the latency proxy
	tools    []*tool
	floor    *tool  // the FUSE floor of the cache group; nil when not measured
	cFloor   *tool  // the C floor of the cache group; nil when not measured
	src      string // Go's src/, the source of the trees
	dropOK   bool   // drop_caches works (root)
	notes    []string
}

func newEnv(ctx context.Context, c *config) (*env, error) {
	work, err := os.MkdirTemp("", "sshfsm-bench-")
	if err != nil {
		return nil, err
	}
	e := &env{c: c, work: work}
	diskCacheDir = filepath.Join(work, "sshfsm-cache")
	ok := false
	defer func() {
		if !ok {
			e.close()
		}
	}()
	if e.host, err = testenv.Start(testenv.Options{Root: filepath.Join(work, "host")}); err != nil {
		return nil, err
	}
	e.alias = e.host.Alias
	target := e.host.Addr + ":" + strconv.Itoa(e.host.Port)
	if e.proxy, err = netproxy.Listen(e.host.Addr+":0", target, netproxy.Symmetric(c.rtt/2, 0)); err != nil {
		return nil, err
	}
	if err := e.writeSSHConfig(); err != nil {
		return nil, err
	}
	if err := e.pickTools(ctx); err != nil {
		return nil, err
	}
	e.dropOK = dropCaches()
	if !e.dropOK {
		e.note("not root: page cache NOT dropped between cold runs")
	} else {
		e.note("page cache dropped (echo 3 > /proc/sys/vm/drop_caches) before every cold run")
	}
	if err := prepareData(ctx, e); err != nil {
		return nil, err
	}
	ok = true
	return e, nil
}

func (e *env) note(format string, args ...any) {
	s := fmt.Sprintf(format, args...)
	e.notes = append(e.notes, s)
	logf("%s", s)
}

// dir returns the absolute server-side path of a data set.
func (e *env) dir(name string) string { return filepath.Join(e.host.Dir, name) }

// localCopy returns the local reference's own copy of a data set: below
// the work directory, outside the served one.
func (e *env) localCopy(name string) string { return filepath.Join(e.work, name+"-local") }

// mnt returns the mount point used for tool t.
func (e *env) mnt(t *tool) string { return filepath.Join(e.work, "mnt", t.key) }

// writeSSHConfig writes one client config with the direct alias and an
// alias reaching the same sshd through the proxy; HostKeyAlias keeps host
// key verification against the direct entry in known_hosts.
func (e *env) writeSSHConfig() error {
	h := e.host
	e.rttAlias = h.Alias + "-rtt"
	block := h.ConfigBlock() + "\n" + h.ConfigBlockVia(e.rttAlias, h.Addr, e.proxy.Port())
	e.cfg = filepath.Join(e.work, "ssh_config")
	return os.WriteFile(e.cfg, []byte(block), 0o600)
}

// pickTools selects the requested tools that exist, building sshfsm.
func (e *env) pickTools(ctx context.Context) error {
	bin := e.c.sshfsmBin
	if e.c.tools[sshfsmKey] && bin == "" {
		bin = filepath.Join(e.work, "sshfsm")
		out, err := exec.CommandContext(ctx, "go", "build", "-o", bin, "./cmd/sshfsm").CombinedOutput()
		if err != nil {
			e.note("sshfsm NOT measured: go build ./cmd/sshfsm failed: %s", firstLine(string(out)))
			bin = ""
		}
	}
	for _, t := range allTools(bin) {
		if !e.c.tools[t.key] {
			continue
		}
		if t.key == sshfsmKey && bin == "" || t.key == sftpFloorKey {
			continue // the SFTP floor is measured by the writes group itself
		}
		if t.argv != nil {
			if _, err := exec.LookPath(t.argv("", "", "", "")[0]); err != nil {
				e.note("%s NOT measured: %v", t.name, err)
				continue
			}
		}
		e.tools = append(e.tools, t)
	}
	if len(e.tools) == 0 {
		return fmt.Errorf("no tool to measure")
	}
	return nil
}

// toolsFor returns the tools that take part in a workload; local only for
// metadata workloads.
func (e *env) toolsFor(withLocal bool) []*tool {
	var out []*tool
	for _, t := range e.tools {
		if t.local && !withLocal {
			continue
		}
		out = append(out, t)
	}
	return out
}

func (e *env) close() {
	unmountAll()
	if e.proxy != nil {
		e.proxy.Close()
	}
	if e.host != nil {
		e.host.Close()
	}
	live.Lock()
	busy := len(live.m) > 0
	live.Unlock()
	if ms, err := testenv.Mounts(); err == nil {
		for _, m := range ms {
			if strings.HasPrefix(m.Point, e.work+"/") {
				busy = true
			}
		}
	}
	switch {
	case busy:
		logf("mounts remain below %s: not removing it", e.work)
	case e.c.keep:
		logf("kept %s", e.work)
	default:
		os.RemoveAll(e.work)
	}
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	return s
}
