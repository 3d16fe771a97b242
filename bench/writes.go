package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"sshfsm/internal/control"
	"sshfsm/internal/netproxy"
)

// The writes group: what creating, copying and removing files costs, at
// each RTT of -writes-rtts (loopback, and through a latency proxy of its
// own for each other one), with the tools interleaved within each repeat.
// Every timed command runs on a fresh mount after dropping the caches
// (sshfsm's disk cache too), with nothing run through the tool before:
// what a user meets the first time. Each result is then checked on the
// server's side, by reading the served directory directly, not through
// the mount; a result that does not check out is a failure on the page,
// not a figure.
//   - untar: tar -xf of the generated tree (writetree.go) from local disk;
//   - rm -rf of that tree, made server-side beforehand;
//   - cp of a -writes-cp-mib file from local disk;
//   - git clone --no-hardlinks of a repository of that tree on local disk;
//   - an editor's save: stat the file, write a temporary file beside it,
//     fsync, rename it over the file; each save is a sample.
//
// untar and rm -rf are also done by the SFTP floor (sftpfloor.go), a bare
// client sending only what the commands' calls need: what the link and
// the protocol allow, beside what each tool takes.

// writeMode is one configuration of sshfsm measured by the writes group,
// reported as a tool of its own beside sshfs.
type writeMode struct {
	key, name string
	opts      string // -o options added to sshfsm's; "" = its defaults
}

// writeModes are the write modes measured. Adding one is a line such as
// {key: "sshfsm-writeback", name: "sshfsm, writeback", opts: "writeback"}.
var writeModes = []writeMode{
	{key: sshfsmKey, name: "sshfsm"},
}

// writeModeTools are the report rows of the modes other than the default,
// which is sshfsm's own row.
func writeModeTools() []*tool {
	var out []*tool
	for _, m := range writeModes {
		if m.key != sshfsmKey {
			out = append(out, &tool{key: m.key, name: m.name})
		}
	}
	return out
}

// writesLimit is how long one timed command of the group may take:
// sshfs default unpacks or clones the tree in about 2 minutes at 4 ms,
// and needs 7 times as long at 30 ms.
const writesLimit = time.Hour

// editorSaves is how many times the save workload saves the file in one
// mount; the first one finds nothing cached.
const editorSaves = 10

// writeOp is one workload of the writes group. dst is the server-side
// path of the op's data, at the same path below the mount.
type writeOp struct {
	id, unit string
	title    string // {tree}: the tree's size, {cp}: -writes-cp-mib
	prepare  func(ws *writesEnv, dst string) error
	// run times the op below the mount and returns its samples.
	run    func(ws *writesEnv, ctx context.Context, at string) ([]float64, error)
	verify func(ws *writesEnv, ctx context.Context, dst string) error
	// created counts the files the op created (or the names it removed)
	// on the server, for the requests per file; nil: not counted.
	created func(ws *writesEnv, dst string) int
	// per names what created counts; "" = "created file".
	per string
	// removeNow: the op's data is removed at once after checking (a big
	// file), not kept until the end of the group.
	removeNow bool
	// floored: the SFTP floor (sftpfloor.go) does the op too.
	floored bool
}

var writeOps = []writeOp{
	{id: "untar", title: "tar -xf of the tree ({tree}) from local disk", unit: "s",
		prepare: mkdirDst, run: (*writesEnv).untar, verify: (*writesEnv).verifyUntar,
		created: func(ws *writesEnv, _ string) int { return ws.tree.files }, floored: true},
	{id: "rm", title: "rm -rf of the tree ({tree}), made server-side", unit: "s",
		prepare: (*writesEnv).copySource, run: (*writesEnv).remove, verify: verifyGone, floored: true,
		created: func(ws *writesEnv, _ string) int { return ws.tree.files + ws.tree.dirs + 1 }, per: "removed name"},
	{id: "cp", title: "cp of a {cp} MiB file from local disk", unit: "s",
		prepare: mkdirDst, run: (*writesEnv).copyBig, verify: (*writesEnv).verifyBig, removeNow: true},
	{id: "clone", title: "git clone --no-hardlinks of a repository of the tree ({tree}, " + strconv.Itoa(repoCommits) + " commits, packed) on local disk", unit: "s",
		prepare: mkdirDst, run: (*writesEnv).clone, verify: (*writesEnv).verifyClone, created: countFiles},
	{id: "save", title: "an editor's save: write a temporary file, fsync, rename over (each of " + strconv.Itoa(editorSaves) + " saves in a fresh mount a sample)", unit: "ms",
		prepare: prepareSave, run: (*writesEnv).saves, verify: verifySaves,
		created: func(*writesEnv, string) int { return editorSaves }},
}

// writesWorkloads holds the workloads of the group by op id and RTT
// label, made by registerWrites.
var writesWorkloads = map[string]*workload{}

// rttLabel names an RTT in workload ids: "lo" for loopback.
func rttLabel(rtt time.Duration) string {
	if rtt == 0 {
		return "lo"
	}
	return rtt.String()
}

func rttTitle(rtt time.Duration) string {
	if rtt == 0 {
		return "loopback"
	}
	return rtt.String() + " RTT"
}

// registerWrites adds the group's workloads to the report, one per op
// and RTT.
func registerWrites(c *config) {
	spec := specFor(c.writesFiles)
	fill := strings.NewReplacer("{tree}", fmt.Sprintf("%d files, %.0f MB", spec.files, float64(spec.bytes)/1e6),
		"{cp}", strconv.FormatInt(c.writesCpMiB, 10))
	for _, rtt := range c.writesRTTs {
		for _, op := range writeOps {
			w := &workload{id: "writes-" + op.id + "-" + rttLabel(rtt), unit: op.unit,
				title: "writes, " + rttTitle(rtt) + ": " + fill.Replace(op.title)}
			writesWorkloads[op.id+"/"+rttLabel(rtt)] = w
			workloads = append(workloads, w)
		}
	}
}

// parseRTTs reads a comma-separated list of durations; "0" is loopback.
func parseRTTs(s string) ([]time.Duration, error) {
	var out []time.Duration
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f == "" {
			continue
		}
		d, err := time.ParseDuration(f)
		if err != nil || d < 0 {
			return nil, fmt.Errorf("RTT %q: not a duration ≥ 0", f)
		}
		out = append(out, d)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no RTT in %q", s)
	}
	return out, nil
}

// writeLink is one way to the server: direct, or through a proxy.
type writeLink struct {
	rtt   time.Duration
	alias string
}

// writesEnv is the group's data on local disk and its ways to the server.
type writesEnv struct {
	e       *env
	cfg     string
	links   []writeLink
	proxies []*netproxy.Proxy
	src     string // the generated tree
	tree    treeInfo
	tarball string
	repo    string
	head    string // the repository's HEAD commit
	big     string // the file cp copies
	trash   string // where checked data goes until the end of the group
	trashed int
	// reqs sums up sshfsm's requests by workload id and tool key.
	reqs map[string]map[string]*reqTally
}

// reqTally is the SFTP requests sshfsm sent in the runs of one workload.
type reqTally struct {
	runs, created int
	per           string // what created counts: "created file", "removed name"
	byType        map[string]uint64
}

func runWrites(ctx context.Context, e *env, r *results) error {
	ws, err := newWritesEnv(ctx, e)
	if err != nil {
		return err
	}
	defer ws.close()
	var tools []*tool
	for _, t := range e.toolsFor(true) {
		if t.key != sshfsmKey {
			tools = append(tools, t)
			continue
		}
		for _, m := range writeModes {
			tools = append(tools, modeTool(t, m))
		}
	}
	for _, link := range ws.links {
		failed := map[string]bool{}
		for rep := 1; rep <= e.c.writesRepeats; rep++ {
			for _, t := range tools {
				for _, op := range writeOps {
					if ctx.Err() != nil {
						return ctx.Err()
					}
					w := writesWorkloads[op.id+"/"+rttLabel(link.rtt)]
					if failed[t.key+"/"+op.id] {
						continue
					}
					if err := ws.measure(ctx, r, link, t, op, w, rep); err != nil {
						r.fail(t, w.id, err)
						failed[t.key+"/"+op.id] = true
					}
				}
			}
			floor := sftpFloorTool()
			for _, op := range writeOps {
				w := writesWorkloads[op.id+"/"+rttLabel(link.rtt)]
				if !op.floored || failed[floor.key+"/"+op.id] || ctx.Err() != nil {
					continue
				}
				if err := ws.measureFloor(ctx, r, link, floor, op, w, rep); err != nil {
					r.fail(floor, w.id, err)
					failed[floor.key+"/"+op.id] = true
				}
			}
		}
	}
	ws.rowNotes(r)
	return nil
}

// modeTool is sshfsm t mounting in write mode m.
func modeTool(t *tool, m writeMode) *tool {
	if m.opts == "" {
		return t
	}
	return &tool{key: m.key, name: m.name, argv: sshfsmWith(t, m.opts).argv}
}

// isSSHFSM reports whether t is sshfsm in one of the write modes.
func isSSHFSM(t *tool) bool {
	for _, m := range writeModes {
		if t.key == m.key {
			return true
		}
	}
	return false
}

func newWritesEnv(ctx context.Context, e *env) (*writesEnv, error) {
	c := e.c
	ws := &writesEnv{e: e, cfg: filepath.Join(e.work, "ssh_config_writes"),
		src: filepath.Join(e.work, "writes-src"), tarball: filepath.Join(e.work, "writes-src.tar"),
		repo: filepath.Join(e.work, "writes-repo"), big: filepath.Join(e.work, "writes-big.dat"),
		trash: filepath.Join(e.work, "writes-trash"), reqs: map[string]map[string]*reqTally{}}
	ok := false
	defer func() {
		if !ok {
			ws.close()
		}
	}()
	blocks := []string{e.host.ConfigBlock()}
	target := e.host.Addr + ":" + strconv.Itoa(e.host.Port)
	for _, rtt := range c.writesRTTs {
		if rtt == 0 {
			ws.links = append(ws.links, writeLink{alias: e.host.Alias})
			continue
		}
		p, err := netproxy.Listen(e.host.Addr+":0", target, netproxy.Symmetric(rtt/2, 0))
		if err != nil {
			return nil, err
		}
		ws.proxies = append(ws.proxies, p)
		alias := e.host.Alias + "-writes-" + rttLabel(rtt)
		blocks = append(blocks, e.host.ConfigBlockVia(alias, e.host.Addr, p.Port()))
		ws.links = append(ws.links, writeLink{rtt: rtt, alias: alias})
	}
	if err := os.WriteFile(ws.cfg, []byte(strings.Join(blocks, "\n")), 0o600); err != nil {
		return nil, err
	}
	var err error
	spec := specFor(c.writesFiles)
	if ws.tree, err = genTree(ws.src, spec); err != nil {
		return nil, err
	}
	if err := writeTar(ws.src, ws.tarball); err != nil {
		return nil, err
	}
	if err := makeRepo(ctx, ws.src, ws.repo); err != nil {
		return nil, err
	}
	out, err := exec.CommandContext(ctx, "git", "-C", ws.repo, "rev-parse", "HEAD").Output()
	if err != nil {
		return nil, fmt.Errorf("git rev-parse HEAD in %s: %w", ws.repo, err)
	}
	ws.head = strings.TrimSpace(string(out))
	if err := randomFile(ws.big, c.writesCpMiB<<20); err != nil {
		return nil, err
	}
	var rtts []string
	for _, l := range ws.links {
		rtts = append(rtts, rttTitle(l.rtt))
	}
	var modes []string
	for _, m := range writeModes {
		opts := "its default options"
		if m.opts != "" {
			opts = "-o " + m.opts
		}
		modes = append(modes, fmt.Sprintf("%s (%s)", m.name, opts))
	}
	e.note("writes: a tree generated with seed %d (%s), its tarball (tar -xf --no-same-owner, as a user's tar does), a git repository of it (%d commits, packed) and a %d MiB file, all on local disk; at %s (a latency proxy of its own for each RTT); every timed command on a fresh mount after dropping caches; each result checked by reading the served directory directly; sshfsm modes: %s",
		spec.seed, ws.tree, repoCommits, c.writesCpMiB, strings.Join(rtts, ", "), strings.Join(modes, ", "))
	ok = true
	return ws, nil
}

func (ws *writesEnv) close() {
	for _, p := range ws.proxies {
		p.Close()
	}
	os.RemoveAll(ws.trash)
}

// measure runs op once with t over link and records its samples when its
// result checks out on the server.
func (ws *writesEnv) measure(ctx context.Context, r *results, link writeLink, t *tool, op writeOp, w *workload, rep int) error {
	e := ws.e
	rel := filepath.Join("writes", rttLabel(link.rtt), t.key, fmt.Sprintf("%s-%d", op.id, rep))
	dst := e.dir(rel)
	if err := op.prepare(ws, dst); err != nil {
		return fmt.Errorf("preparing %s: %w", dst, err)
	}
	defer ws.discard(dst, op.removeNow)
	dropCaches()
	m, err := doMount(ctx, t, ws.cfg, link.alias, e.host.Dir, e.mnt(t))
	if err != nil {
		return err
	}
	defer unmount(m)
	// sshfsm's requests are counted from just before the command: the
	// mount's own are left out.
	counted := isSSHFSM(t) && op.created != nil
	var before, reqs map[string]uint64
	if counted {
		if before, err = daemonRequests(ctx, t, m); err != nil {
			return err
		}
	}
	vals, err := op.run(ws, ctx, filepath.Join(m.path, rel))
	if err != nil {
		return err
	}
	if counted {
		if reqs, err = daemonRequests(ctx, t, m); err != nil {
			return err
		}
		for k, v := range before {
			reqs[k] -= min(v, reqs[k]) // counters only grow
		}
	}
	// Checked while mounted: what the command was told is written must be
	// on the server when it returns.
	if err := op.verify(ws, ctx, dst); err != nil {
		return fmt.Errorf("result on the server: %w", err)
	}
	for _, v := range vals {
		r.add(w, t, v)
	}
	if reqs != nil {
		ws.tally(w, t, reqs, op.created(ws, dst), op.per)
	}
	logf("%-13s %-22s %s", t.key, w.id, fmtSamples(vals, w.unit))
	return unmount(m)
}

// measureFloor runs op once with the SFTP floor over link and records
// its time when its result checks out on the server.
func (ws *writesEnv) measureFloor(ctx context.Context, r *results, link writeLink, t *tool, op writeOp, w *workload, rep int) error {
	rel := filepath.Join("writes", rttLabel(link.rtt), t.key, fmt.Sprintf("%s-%d", op.id, rep))
	dst := ws.e.dir(rel)
	if err := op.prepare(ws, dst); err != nil {
		return fmt.Errorf("preparing %s: %w", dst, err)
	}
	defer ws.discard(dst, op.removeNow)
	dropCaches()
	v, err := ws.floorRun(ctx, link, op, dst)
	if err != nil {
		return err
	}
	if err := op.verify(ws, ctx, dst); err != nil {
		return fmt.Errorf("result on the server: %w", err)
	}
	r.add(w, t, v)
	logf("%-13s %-22s %s", t.key, w.id, fmtSamples([]float64{v}, w.unit))
	return nil
}

func fmtSamples(vals []float64, unit string) string {
	if s, ok := summarize(vals); ok && len(vals) > 1 {
		return fmt.Sprintf("median %s %s (%s–%s, %d samples)", fmtVal(s.med, unit), unit, fmtVal(s.min, unit), fmtVal(s.max, unit), len(vals))
	}
	if len(vals) == 1 {
		return fmtVal(vals[0], unit) + " " + unit
	}
	return "no sample"
}

// discard moves an op's data out of the way once checked: into the
// group's trash, removed at its end (removing thousands of files just
// before the next run creates as many slows ext4's inode allocation for
// that run), or at once for a single big file.
func (ws *writesEnv) discard(dst string, now bool) {
	if now {
		os.RemoveAll(dst)
		return
	}
	if err := os.MkdirAll(ws.trash, 0o755); err != nil {
		return
	}
	ws.trashed++
	if err := os.Rename(dst, filepath.Join(ws.trash, strconv.Itoa(ws.trashed))); err != nil && !errors.Is(err, fs.ErrNotExist) {
		os.RemoveAll(dst)
	}
}

func mkdirDst(_ *writesEnv, dst string) error { return os.MkdirAll(dst, 0o755) }

func (ws *writesEnv) copySource(dst string) error {
	_, err := copyTree(ws.src, dst, 0)
	return err
}

func (ws *writesEnv) untar(ctx context.Context, at string) ([]float64, error) {
	d, _, err := timeShellFor(ctx, at, "tar --no-same-owner -xf "+shellQuote(ws.tarball), writesLimit)
	return []float64{d.Seconds()}, err
}

func (ws *writesEnv) verifyUntar(_ context.Context, dst string) error {
	return compareTrees(ws.src, dst, nil)
}

func (ws *writesEnv) remove(ctx context.Context, at string) ([]float64, error) {
	d, _, err := timeShellFor(ctx, filepath.Dir(at), "rm -rf "+shellQuote(filepath.Base(at)), writesLimit)
	return []float64{d.Seconds()}, err
}

func verifyGone(_ *writesEnv, _ context.Context, dst string) error {
	if _, err := os.Lstat(dst); !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("%s still exists after rm -rf (%v)", dst, err)
	}
	return nil
}

const bigName = "big.dat"

func (ws *writesEnv) copyBig(ctx context.Context, at string) ([]float64, error) {
	d, _, err := timeShellFor(ctx, at, "cp "+shellQuote(ws.big)+" "+bigName, writesLimit)
	return []float64{d.Seconds()}, err
}

func (ws *writesEnv) verifyBig(_ context.Context, dst string) error {
	same, err := sameContent(ws.big, filepath.Join(dst, bigName))
	if err == nil && !same {
		err = fmt.Errorf("%s differs from %s", filepath.Join(dst, bigName), ws.big)
	}
	return err
}

const cloneName = "clone"

func (ws *writesEnv) clone(ctx context.Context, at string) ([]float64, error) {
	d, _, err := timeShellFor(ctx, at, "git clone -q --no-hardlinks "+shellQuote(ws.repo)+" "+cloneName, writesLimit)
	return []float64{d.Seconds()}, err
}

// verifyClone checks the clone's work tree against the tree, its HEAD
// against the repository's, and its objects with git fsck.
func (ws *writesEnv) verifyClone(ctx context.Context, dst string) error {
	dir := filepath.Join(dst, cloneName)
	if err := compareTrees(ws.src, dir, map[string]bool{".git": true}); err != nil {
		return err
	}
	out, err := exec.CommandContext(ctx, "git", "-C", dir, "rev-parse", "HEAD").Output()
	if err != nil {
		return fmt.Errorf("git rev-parse HEAD in %s: %w", dir, err)
	}
	if got := strings.TrimSpace(string(out)); got != ws.head {
		return fmt.Errorf("clone's HEAD is %s, want %s", got, ws.head)
	}
	if out, err := exec.CommandContext(ctx, "git", "-C", dir, "fsck", "--no-progress", "--no-dangling").CombinedOutput(); err != nil {
		return fmt.Errorf("git fsck in %s: %v: %s", dir, err, firstLine(string(out)))
	}
	return nil
}

// countFiles counts the regular files below dir.
func countFiles(_ *writesEnv, dir string) int {
	n := 0
	filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			n++
		}
		return nil
	})
	return n
}

const saveName = "notes.txt"

// saveContent is the text of the i-th save (0: the file as prepared).
func saveContent(i int) []byte {
	return []byte(strings.Repeat(fmt.Sprintf("line of the text, version %d\n", i), 1000))
}

func prepareSave(_ *writesEnv, dst string) error {
	if err := os.MkdirAll(dst, 0o755); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dst, saveName), saveContent(0), 0o644)
}

// saves saves the file editorSaves times as editors do (vim with
// backupcopy=no, and most others): stat it, write the new text to a
// temporary file beside it, fsync, close, rename it over the file.
func (ws *writesEnv) saves(ctx context.Context, dir string) ([]float64, error) {
	var out []float64
	for i := 1; i <= editorSaves; i++ {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		start := time.Now()
		if err := editorSave(dir, i); err != nil {
			return nil, fmt.Errorf("save %d: %w", i, err)
		}
		out = append(out, float64(time.Since(start).Microseconds())/1000)
	}
	return out, nil
}

func editorSave(dir string, i int) error {
	target := filepath.Join(dir, saveName)
	if _, err := os.Stat(target); err != nil {
		return err
	}
	tmp := filepath.Join(dir, fmt.Sprintf(".%s.%d~", saveName, i))
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return err
	}
	_, err = f.Write(saveContent(i))
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	return os.Rename(tmp, target)
}

// verifySaves checks that the directory holds the file with the last
// save's text and nothing else.
func verifySaves(_ *writesEnv, _ context.Context, dst string) error {
	ents, err := os.ReadDir(dst)
	if err != nil {
		return err
	}
	if len(ents) != 1 || ents[0].Name() != saveName {
		var names []string
		for _, e := range ents {
			names = append(names, e.Name())
		}
		return fmt.Errorf("%s holds %q, want only %s", dst, names, saveName)
	}
	b, err := os.ReadFile(filepath.Join(dst, saveName))
	if err != nil {
		return err
	}
	if string(b) != string(saveContent(editorSaves)) {
		return fmt.Errorf("%s does not hold the last save's text", filepath.Join(dst, saveName))
	}
	return nil
}

// daemonRequests returns the SFTP requests the sshfsm daemon of m sent
// since it started, by type, summed over its hosts (sshfsm status --json).
func daemonRequests(ctx context.Context, t *tool, m *mount) (map[string]uint64, error) {
	bin := t.argv("", "", "", "")[0]
	out, err := exec.CommandContext(ctx, bin, "status", "--json", m.path).Output()
	if err != nil {
		return nil, fmt.Errorf("%s status --json %s: %w", filepath.Base(bin), m.path, err)
	}
	var st control.Status
	if err := json.Unmarshal(out, &st); err != nil {
		return nil, fmt.Errorf("status --json %s: %w", m.path, err)
	}
	reqs := map[string]uint64{}
	for _, b := range st.Branches {
		for _, h := range b.Hosts {
			for k, v := range h.Requests {
				reqs[k] += v
			}
		}
	}
	return reqs, nil
}

func (ws *writesEnv) tally(w *workload, t *tool, reqs map[string]uint64, created int, per string) {
	if ws.reqs[w.id] == nil {
		ws.reqs[w.id] = map[string]*reqTally{}
	}
	rt := ws.reqs[w.id][t.key]
	if rt == nil {
		if per == "" {
			per = "created file"
		}
		rt = &reqTally{per: per, byType: map[string]uint64{}}
		ws.reqs[w.id][t.key] = rt
	}
	rt.runs++
	rt.created += created
	for k, v := range reqs {
		if v > 0 {
			rt.byType[k] += v
		}
	}
}

// perFile describes the requests sent per created file, most frequent
// type first.
func (rt *reqTally) perFile() string {
	if rt.created == 0 {
		return ""
	}
	var total uint64
	var types []string
	for k, v := range rt.byType {
		total += v
		types = append(types, k)
	}
	sort.Slice(types, func(i, j int) bool {
		a, b := rt.byType[types[i]], rt.byType[types[j]]
		return a > b || a == b && types[i] < types[j]
	})
	var parts []string
	for _, k := range types {
		parts = append(parts, fmt.Sprintf("%s %.2f", k, float64(rt.byType[k])/float64(rt.created)))
	}
	per := rt.per
	if per == "" {
		per = "created file"
	}
	return fmt.Sprintf("%.2f SFTP requests per %s (%s; %d runs, %d %ss, counted from just before the command)",
		float64(total)/float64(rt.created), per, strings.Join(parts, ", "), rt.runs, rt.created, per)
}

// rowNotes adds the requests per created file of each sshfsm mode and
// its median against local disk to the group's rows.
func (ws *writesEnv) rowNotes(r *results) {
	mine := map[*workload]bool{}
	for _, w := range writesWorkloads {
		mine[w] = true
	}
	for _, w := range workloads {
		if !mine[w] {
			continue
		}
		for _, m := range writeModes {
			if rt := ws.reqs[w.id][m.key]; rt != nil {
				r.rowNote(w, m.name+": "+rt.perFile())
			}
			if ratio := r.ratio(w, m.key, localKey); ratio != "" {
				r.rowNote(w, fmt.Sprintf("%s / local disk (medians): %s", m.name, ratio))
			}
			if ratio := r.ratio(w, m.key, sftpFloorKey); ratio != "" {
				r.rowNote(w, fmt.Sprintf("%s / SFTP floor (medians): %s", m.name, ratio))
			}
		}
	}
}

// shellQuote quotes s for sh.
func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }
