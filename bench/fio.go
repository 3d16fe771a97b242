package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// fioJob is one fio invocation on one file below the mount.
type fioJob struct {
	w     *workload
	rw    string // fio rw=
	bs    string
	depth int
	file  string // name below fioDir
	mib   int64
	// buffered reads through the page cache (kernel readahead), as cp and
	// cat do, instead of O_DIRECT.
	buffered bool
}

func (j fioJob) writes() bool { return strings.Contains(j.rw, "write") }

func (j fioJob) engine() string {
	if j.buffered {
		return "psync"
	}
	return "libaio"
}

func (j fioJob) direct() int {
	if j.buffered {
		return 0
	}
	return 1
}

// fioOutput is the part of fio's JSON output the benchmark reads.
type fioOutput struct {
	Jobs []struct {
		Error int         `json:"error"`
		Read  fioDirStats `json:"read"`
		Write fioDirStats `json:"write"`
	} `json:"jobs"`
}

type fioDirStats struct {
	BWBytes float64 `json:"bw_bytes"`
	IOPS    float64 `json:"iops"`
	IOBytes int64   `json:"io_bytes"`
}

// runFioJob runs j with the mount's copy of the fio directory and returns
// MiB/s or IOPS as the workload's unit says.
func runFioJob(ctx context.Context, mountDir string, j fioJob, limit time.Duration) (float64, error) {
	args := []string{
		"--name=" + j.w.id,
		"--filename=" + filepath.Join(mountDir, fioDir, j.file),
		"--rw=" + j.rw,
		"--bs=" + j.bs,
		fmt.Sprintf("--iodepth=%d", j.depth),
		"--ioengine=" + j.engine(),
		fmt.Sprintf("--direct=%d", j.direct()),
		fmt.Sprintf("--size=%dm", j.mib),
		fmt.Sprintf("--runtime=%dms", limit.Milliseconds()),
		"--numjobs=1",
		"--output-format=json",
	}
	if j.writes() {
		args = append(args, "--end_fsync=1")
	}
	cctx, cancel := context.WithTimeout(ctx, limit+3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(cctx, "fio", args...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return 0, fmt.Errorf("fio %s: %v: %s", j.w.id, err, firstLine(stderr.String()))
	}
	return parseFio(out, j, stderr.String())
}

// parseFio reads fio's JSON output and returns MiB/s or IOPS as j's
// workload unit says.
func parseFio(out []byte, j fioJob, stderr string) (float64, error) {
	// fio may print warnings before the JSON document.
	if i := strings.IndexByte(string(out), '{'); i > 0 {
		out = out[i:]
	}
	var fo fioOutput
	if err := json.Unmarshal(out, &fo); err != nil {
		return 0, fmt.Errorf("fio %s: parse output: %v", j.w.id, err)
	}
	if len(fo.Jobs) == 0 || fo.Jobs[0].Error != 0 {
		return 0, fmt.Errorf("fio %s: job failed: %s", j.w.id, firstLine(stderr))
	}
	st := fo.Jobs[0].Read
	if j.writes() {
		st = fo.Jobs[0].Write
	}
	if st.IOBytes == 0 {
		return 0, fmt.Errorf("fio %s: no I/O done", j.w.id)
	}
	if j.w.unit == "IOPS" {
		return st.IOPS, nil
	}
	return st.BWBytes / (1 << 20), nil
}

// runFio measures the four fio workloads on loopback, tools interleaved
// within each repeat so that background noise spreads over all of them.
func runFio(ctx context.Context, e *env, r *results) error {
	c := e.c
	jobs := []fioJob{
		{w: wSeqWrite, rw: "write", bs: "128k", depth: 4, file: "seqw.dat", mib: c.seqMiB},
		{w: wSeqRead, rw: "read", bs: "128k", depth: 4, file: "seq.dat", mib: c.seqMiB},
		{w: wRandWrite, rw: "randwrite", bs: "4k", depth: 32, file: "randw.dat", mib: c.randMiB},
		{w: wRandRead, rw: "randread", bs: "4k", depth: 32, file: "randr.dat", mib: c.randMiB},
	}
	for rep := 1; rep <= c.repeats; rep++ {
		for _, t := range e.toolsFor(false) {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			m, err := doMount(ctx, transportOnly(t), e.cfg, e.alias, e.host.Dir, e.mnt(t))
			if err != nil {
				r.fail(t, "fio", err)
				continue
			}
			for _, j := range jobs {
				if j.writes() && j.file == "seqw.dat" {
					os.Remove(e.dir(filepath.Join(fioDir, j.file)))
				}
				v, err := runFioJob(ctx, m.path, j, c.runtime)
				if err != nil {
					r.fail(t, j.w.id, err)
					continue
				}
				r.add(j.w, t, v)
				if j.w == wSeqRead && t.key != sshfsmKey {
					r.add(wSeqReadFill, t, v)
				}
				logf("fio %d/%d %-13s %-11s %10.1f %s", rep, c.repeats, t.key, j.w.id, v, j.w.unit)
			}
			if err := unmount(m); err != nil {
				return err
			}
			if t.key == sshfsmKey {
				if err := seqReadFill(ctx, e, r, t, jobs[1], rep); err != nil {
					return err
				}
				if err := seqWriteNoWatch(ctx, e, r, t, jobs[0], rep); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// seqWriteNoWatch measures the sequential write job as the fio rows do,
// with the change watcher off too.
func seqWriteNoWatch(ctx context.Context, e *env, r *results, t *tool, j fioJob, rep int) error {
	os.Remove(e.dir(filepath.Join(fioDir, j.file)))
	j.w = wSeqWriteNoWatch
	return fioRow(ctx, e, r, sshfsmWith(transportOnly(t), "watch=no"), j, rep)
}

// seqReadFill measures the sequential read job with sshfsm's default
// options: the disk cache, emptied first, stores every block it fetches.
func seqReadFill(ctx context.Context, e *env, r *results, t *tool, j fioJob, rep int) error {
	clearDiskCache()
	j.w = wSeqReadFill
	err := fioRow(ctx, e, r, t, j, rep)
	clearDiskCache()
	return err
}

// fioRow runs j once on a mount of its own made with t and records it as
// j.w's sample; a failed mount or job is recorded, not returned.
func fioRow(ctx context.Context, e *env, r *results, t *tool, j fioJob, rep int) error {
	m, err := doMount(ctx, t, e.cfg, e.alias, e.host.Dir, e.mnt(t))
	if err != nil {
		r.fail(t, j.w.id, err)
		return nil
	}
	v, err := runFioJob(ctx, m.path, j, e.c.runtime)
	if err != nil {
		r.fail(t, j.w.id, err)
	} else {
		r.add(j.w, t, v)
		logf("fio %d/%d %-13s %-11s %10.1f %s", rep, e.c.repeats, t.key, j.w.id, v, j.w.unit)
	}
	return unmount(m)
}
