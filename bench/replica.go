package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/hanwen/go-fuse/v2/fuse"

	"sshfsm/internal/fusefs"
	"sshfsm/internal/namespace"
	"sshfsm/internal/netproxy"
	"sshfsm/internal/remote"
	"sshfsm/internal/replica"
	"sshfsm/internal/testenv"
	"sshfsm/internal/transport"
)

// The replica workload (group "replica"): a second sshd on 127.0.0.3
// serves the same directory as the first; each is reached through its own
// netproxy capped at -replica-rate MB/s per direction, with one SFTP
// channel per host so that the cap is the host's. Parallel readers read
// through a mount of one host alone, then through a mount of the replica
// set of both (`sshfsm a0,a1:dir`).

const replicaOneKey = "sshfsm-1-replica"

var wReplicaRead = &workload{id: "replica-par-read",
	title: "replicas: 4 parallel readers, each gateway rate-capped (sshfsm = set of 2)",
	unit:  "MiB/s", higher: true, target: &target{ref: replicaOneKey, limit: 1.8}}

// replicaTools are the configurations the replica workload reports: the
// set itself is reported as sshfsm (the target applies to it).
func replicaTools() []*tool {
	return []*tool{{key: replicaOneKey, name: "sshfsm, one replica"}}
}

const replicaReaders = 4

// replicaEnv is the second host and the two capped proxies.
type replicaEnv struct {
	host2   *testenv.Host
	proxies []*netproxy.Proxy
	cfg     string   // ssh config with the aliases below
	aliases []string // one per host, through its proxy
}

func newReplicaEnv(e *env) (*replicaEnv, error) {
	re := &replicaEnv{}
	var err error
	re.host2, err = testenv.Start(testenv.Options{Addr: "127.0.0.3", Root: filepath.Join(e.work, "host2")})
	if err != nil {
		return nil, err
	}
	rate := int64(e.c.replicaRate * 1e6)
	var blocks string
	for i, h := range []*testenv.Host{e.host, re.host2} {
		target := h.Addr + ":" + strconv.Itoa(h.Port)
		p, err := netproxy.Listen(h.Addr+":0", target, netproxy.Symmetric(0, rate))
		if err != nil {
			re.close()
			return nil, err
		}
		re.proxies = append(re.proxies, p)
		alias := fmt.Sprintf("%s-replica%d", h.Alias, i)
		re.aliases = append(re.aliases, alias)
		blocks += h.ConfigBlockVia(alias, h.Addr, p.Port()) + "\n"
	}
	re.cfg = filepath.Join(e.work, "ssh_config_replica")
	if err := os.WriteFile(re.cfg, []byte(blocks), 0o600); err != nil {
		re.close()
		return nil, err
	}
	return re, nil
}

func (re *replicaEnv) close() {
	for _, p := range re.proxies {
		p.Close()
	}
	if re.host2 != nil {
		re.host2.Close()
	}
}

// runReplica measures parallel read throughput through one replica and
// through the set of two, alternating within each repeat.
func runReplica(ctx context.Context, e *env, r *results) error {
	re, err := newReplicaEnv(e)
	if err != nil {
		return err
	}
	defer re.close()
	dir := e.dir("replica")
	size := e.c.replicaMiB << 20
	for i := range replicaReaders {
		if err := randomFile(filepath.Join(dir, fmt.Sprint("r", i)), size+int64(i)); err != nil {
			return err
		}
	}
	e.note("replica: sshd on %s and %s serving one directory, each behind a netproxy capped at %g MB/s per direction, max_conns=1; %d files of %d MiB read in parallel (1 MiB reads) through `sshfsm a0:dir` and `sshfsm a0,a1:dir`",
		e.host.Addr, re.host2.Addr, e.c.replicaRate, replicaReaders, e.c.replicaMiB)
	one, set := replicaTools()[0], &tool{key: sshfsmKey, name: "sshfsm"}
	for rep := 1; rep <= e.c.repeats; rep++ {
		for _, cfg := range []struct {
			t     *tool
			hosts int
		}{{one, 1}, {set, 2}} {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			v, err := replicaRead(ctx, e, re, dir, cfg.hosts)
			if err != nil {
				r.fail(cfg.t, wReplicaRead.id, err)
				continue
			}
			r.add(wReplicaRead, cfg.t, v)
			logf("replica %d/%d %-17s %8.1f MiB/s", rep, e.c.repeats, cfg.t.key, v)
		}
	}
	return nil
}

// replicaRead mounts the first n hosts (the host alone for 1, a replica
// set otherwise) with the sshfsm binary (`-o max_conns=1 a0,a1:dir`), or
// in this process when the binary is not measured, reads every file in
// parallel and returns MiB/s.
func replicaRead(ctx context.Context, e *env, re *replicaEnv, dir string, n int) (float64, error) {
	var bin *tool
	for _, t := range e.tools {
		if t.key == sshfsmKey {
			bin = t
		}
	}
	if bin == nil {
		return replicaReadInProcess(ctx, e, re, dir, n)
	}
	only := transportOnly(bin)
	t := &tool{key: bin.key, name: bin.name, argv: func(cfg, alias, dir, mnt string) []string {
		argv := only.argv(cfg, alias, dir, mnt)
		return append([]string{argv[0], "-o", "max_conns=1"}, argv[1:]...)
	}}
	m, err := doMount(ctx, t, re.cfg, strings.Join(re.aliases[:n], ","), dir, filepath.Join(e.work, "mnt", "replica"))
	if err != nil {
		return 0, err
	}
	defer unmount(m)
	return parallelRead(ctx, m.path)
}

// replicaReadInProcess is replicaRead with a mount served by this process
// (fusefs.Mount over the host's remote or over a replica.Set).
func replicaReadInProcess(ctx context.Context, e *env, re *replicaEnv, dir string, n int) (float64, error) {
	var ms []replica.Member
	var hosts []*transport.Host
	defer func() {
		for _, h := range hosts {
			h.Close()
		}
	}()
	for _, alias := range re.aliases[:n] {
		h, err := transport.Dial(ctx, transport.Options{Host: alias, SSHArgs: []string{"-F", re.cfg},
			Dir: dir, Conns: 1, Reconnect: true, FailFast: n > 1})
		if err != nil {
			return 0, err
		}
		hosts = append(hosts, h)
		ms = append(ms, replica.Member{Name: alias, Remote: h.Remote()})
	}
	var root remote.Remote = ms[0].Remote
	if n > 1 {
		s, err := replica.New(ms, replica.Options{})
		if err != nil {
			return 0, err
		}
		defer s.Close()
		hosts = nil // closed by the set
		root = s
	}
	mnt := filepath.Join(e.work, "mnt", "replica")
	srv, err := mountInProcess(mnt, root)
	if err != nil {
		return 0, err
	}
	defer unmountInProcess(mnt, srv)
	return parallelRead(ctx, mnt)
}

func mountInProcess(mnt string, root remote.Remote) (*fuse.Server, error) {
	if err := os.MkdirAll(mnt, 0o755); err != nil {
		return nil, err
	}
	live.Lock()
	live.m[mnt] = true
	live.Unlock()
	return fusefs.Mount(mnt, namespace.Single(root), fusefs.Options{
		AttrTimeout: 20 * time.Second, EntryTimeout: 20 * time.Second,
		NegativeTimeout: 20 * time.Second, DirCacheTimeout: 20 * time.Second,
	}, fusefs.MountOptions{FsName: "bench-replica", Subtype: "sshfsm"})
}

func unmountInProcess(mnt string, srv *fuse.Server) {
	if err := srv.Unmount(); err != nil {
		logf("unmount %s: %v", mnt, err)
		return
	}
	live.Lock()
	delete(live.m, mnt)
	live.Unlock()
}

// parallelRead reads r0 … r3 under mnt concurrently, as cat would, and
// returns the aggregate MiB/s.
func parallelRead(ctx context.Context, mnt string) (float64, error) {
	start := time.Now()
	var wg sync.WaitGroup
	var mu sync.Mutex
	var total int64
	var first error
	for i := range replicaReaders {
		wg.Add(1)
		go func() {
			defer wg.Done()
			n, err := readFile(ctx, filepath.Join(mnt, fmt.Sprint("r", i)))
			mu.Lock()
			defer mu.Unlock()
			total += n
			if err != nil && first == nil {
				first = err
			}
		}()
	}
	wg.Wait()
	if first != nil {
		return 0, first
	}
	return float64(total) / (1 << 20) / time.Since(start).Seconds(), nil
}

func readFile(ctx context.Context, path string) (int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	buf := make([]byte, 1<<20)
	var n int64
	for ctx.Err() == nil {
		k, err := f.Read(buf)
		n += int64(k)
		if err == io.EOF {
			return n, nil
		}
		if err != nil {
			return n, err
		}
	}
	return n, ctx.Err()
}
