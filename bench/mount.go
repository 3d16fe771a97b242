package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"sshfsm/internal/testenv"
)

// tool is one way of reaching the served directory: a FUSE mount made by
// some command, or the local directory itself as a reference.
type tool struct {
	key   string // short name used in flags, JSON and file names
	name  string // display name
	local bool   // the served directory itself, no mount
	floor bool   // a loopback mount of the local reference's copy (floor.go)
	// noWrites: the mount writes nothing, and reports the local copy's
	// stat data; git's index is primed on the local copy instead.
	noWrites bool
	argv     func(cfg, alias, dir, mnt string) []string
}

const (
	sshfsDefault = "sshfs-default"
	sshfsTuned   = "sshfs-tuned"
	sshfsmKey    = "sshfsm"
	localKey     = "local"
)

func allTools(sshfsmBin string) []*tool {
	return append([]*tool{
		{key: sshfsDefault, name: "sshfs default", argv: func(cfg, alias, dir, mnt string) []string {
			return []string{"sshfs", "-F", cfg, alias + ":" + dir, mnt}
		}},
		{key: sshfsTuned, name: "sshfs tuned", argv: func(cfg, alias, dir, mnt string) []string {
			return []string{"sshfs", "-F", cfg,
				"-o", "max_conns=4,kernel_cache,Ciphers=aes128-gcm@openssh.com,Compression=no",
				alias + ":" + dir, mnt}
		}},
		{key: sshfsmKey, name: "sshfsm", argv: func(cfg, alias, dir, mnt string) []string {
			return []string{sshfsmBin, "-F", cfg, "-o", "cache_dir=" + diskCacheDir, alias + ":" + dir, mnt}
		}},
		{key: localKey, name: "local disk", local: true},
		floorTool(""),
		cFloorTool(""),
		sftpFloorTool(),
	}, append(append(replicaTools(), unionTools()...), writeModeTools()...)...)
}

// mount is one live FUSE mount made by the benchmark.
type mount struct {
	tool *tool
	path string // where workloads run
	pid  int    // the filesystem daemon, 0 when unknown or local
}

// live holds every mount not yet unmounted, so that a failure or a signal
// still unmounts them.
var live = struct {
	sync.Mutex
	m map[string]bool
}{m: map[string]bool{}}

// doMount mounts dir of alias with t at mnt and returns once it serves,
// trying again when a mount attempt fails or hangs.
func doMount(ctx context.Context, t *tool, cfg, alias, dir, mnt string) (*mount, error) {
	if t.local {
		return &mount{tool: t, path: dir}, nil
	}
	var err error
	for attempt := 1; attempt <= 3; attempt++ {
		var m *mount
		if m, err = mountOnce(ctx, t, cfg, alias, dir, mnt); err == nil || ctx.Err() != nil {
			return m, err
		}
		logf("mount attempt %d by %s failed: %v", attempt, t.key, err)
	}
	return nil, err
}

func mountOnce(ctx context.Context, t *tool, cfg, alias, dir, mnt string) (*mount, error) {
	if err := os.MkdirAll(mnt, 0o755); err != nil {
		return nil, err
	}
	live.Lock()
	live.m[mnt] = true
	live.Unlock()
	argv := t.argv(cfg, alias, dir, mnt)
	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(cctx, argv[0], argv[1:]...)
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	// The daemon's children (ssh) may keep the output pipe open.
	cmd.WaitDelay = 2 * time.Second
	cmd.Cancel = func() error {
		logf("mount by %s hangs: %s; processes naming the mount point: %s; blocked processes: %s",
			t.key, procTree(cmd.Process.Pid), procsNaming(mnt), blockedProcs())
		return cmd.Process.Kill()
	}
	if err := cmd.Run(); err != nil && !errors.Is(err, exec.ErrWaitDelay) {
		unmount(&mount{tool: t, path: mnt})
		return nil, fmt.Errorf("%s: %v: %s", strings.Join(argv, " "), err, strings.TrimSpace(out.String()))
	}
	if err := testenv.WaitMounted(mnt, 10*time.Second); err != nil {
		unmount(&mount{tool: t, path: mnt})
		return nil, err
	}
	return &mount{tool: t, path: mnt, pid: daemonPID(mnt)}, nil
}

// diskCacheDir is where every sshfsm mount of the run keeps its disk cache
// (contents and persisted metadata): below the run's work directory, never
// the user's own. dropCaches empties it, so that a cold run finds nothing
// of earlier ones anywhere.
var diskCacheDir string

// setAside counts the disk caches clearDiskCache moved aside.
var setAside int

// clearDiskCache empties the disk cache by moving it aside, within the
// run's work directory (removed at the end of the run). Removing it at
// once would free the inodes of tens of thousands of cached files moments
// before the next run stores as many: ext4 skips inodes freed in the last
// minute when it allocates one, reading each one's inode table entry to
// tell (recently_deleted in perf). Storing the 11.5k files of the tree
// took 0.50 ms a file right after such a removal, 0.14 ms in a cache
// directory of its own: a cost a user's first run never meets.
func clearDiskCache() {
	if diskCacheDir == "" {
		return
	}
	setAside++
	aside := fmt.Sprintf("%s-aside-%d", diskCacheDir, setAside)
	if err := os.Rename(diskCacheDir, aside); err != nil && !errors.Is(err, fs.ErrNotExist) {
		logf("emptying the disk cache %s: %v", diskCacheDir, err)
	}
}

// transportOnly is sshfsm without its disk cache: what the transport alone
// does, for workloads that read the same data over and over (fio), which
// the disk cache would then serve locally after the first pass.
func transportOnly(t *tool) *tool { return sshfsmWith(t, "nodisk_cache") }

// sshfsmWith is t mounting with -o opts when t is sshfsm, t otherwise.
func sshfsmWith(t *tool, opts string) *tool {
	if t.key != sshfsmKey {
		return t
	}
	return &tool{key: t.key, name: t.name, argv: func(cfg, alias, dir, mnt string) []string {
		argv := t.argv(cfg, alias, dir, mnt)
		return append([]string{argv[0], "-o", opts}, argv[1:]...)
	}}
}

// unmount unmounts m and waits for its daemon to exit.
func unmount(m *mount) error {
	if m == nil || m.tool.local {
		return nil
	}
	err := testenv.Unmount(m.path)
	if m.pid > 0 {
		deadline := time.Now().Add(10 * time.Second)
		for processAlive(m.pid) && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
		if processAlive(m.pid) {
			_ = syscall.Kill(m.pid, syscall.SIGKILL)
		}
	}
	if err == nil {
		live.Lock()
		delete(live.m, m.path)
		live.Unlock()
	}
	return err
}

// unmountAll unmounts every mount still registered.
func unmountAll() {
	live.Lock()
	var pts []string
	for p := range live.m {
		pts = append(pts, p)
	}
	live.Unlock()
	for _, p := range pts {
		if err := testenv.Unmount(p); err != nil {
			logf("unmount %s: %v", p, err)
			continue
		}
		live.Lock()
		delete(live.m, p)
		live.Unlock()
	}
}

// daemonPID finds the process serving mnt: the one whose command line names
// the mount point and that is not ssh.
func daemonPID(mnt string) int {
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil {
			continue
		}
		args := strings.Split(strings.TrimRight(string(b), "\x00"), "\x00")
		if len(args) == 0 || filepath.Base(args[0]) == "ssh" {
			continue
		}
		for _, a := range args[1:] {
			if a == mnt {
				return pid
			}
		}
	}
	return 0
}

func processAlive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	// A zombie has exited; only its parent has not reaped it yet.
	if i := strings.LastIndexByte(string(b), ')'); i > 0 && i+2 < len(b) {
		return b[i+2] != 'Z'
	}
	return true
}

// rssKiB returns VmRSS and VmHWM of pid in KiB.
func rssKiB(pid int) (rss, hwm int64, err error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		v, _ := strconv.ParseInt(f[1], 10, 64)
		switch f[0] {
		case "VmRSS:":
			rss = v
		case "VmHWM:":
			hwm = v
		}
	}
	if rss == 0 {
		return 0, 0, fmt.Errorf("no VmRSS for pid %d", pid)
	}
	return rss, hwm, nil
}

// dropCaches empties sshfsm's disk cache and drops the page, dentry and
// inode caches when running as root; it reports whether it could.
func dropCaches() bool {
	clearDiskCache()
	return dropPageCache()
}

// dropPageCache drops the page, dentry and inode caches when running as
// root and reports whether it did; sshfsm's disk cache stays.
func dropPageCache() bool {
	if os.Geteuid() != 0 {
		return false
	}
	// Only the data's filesystem: a global sync can block on another
	// process's dead FUSE mount.
	if f, err := os.Open(os.TempDir()); err == nil {
		_ = unix.Syncfs(int(f.Fd()))
		f.Close()
	}
	return os.WriteFile("/proc/sys/vm/drop_caches", []byte("3\n"), 0o200) == nil
}

// procTree describes pid and its descendants: pid, state, kernel wait
// channel and command line, for diagnosing a hanging mount.
func procTree(pid int) string {
	var parts []string
	todo := []int{pid}
	for len(todo) > 0 {
		p := todo[0]
		todo = todo[1:]
		stat, _ := os.ReadFile(fmt.Sprintf("/proc/%d/stat", p))
		wchan, _ := os.ReadFile(fmt.Sprintf("/proc/%d/wchan", p))
		cmd, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", p))
		state := "?"
		if i := strings.LastIndexByte(string(stat), ')'); i > 0 && i+2 < len(stat) {
			state = string(stat[i+2])
		}
		parts = append(parts, fmt.Sprintf("[%d %s %s] %s", p, state, wchan,
			strings.ReplaceAll(strings.TrimRight(string(cmd), "\x00"), "\x00", " ")))
		kids, _ := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/children", p, p))
		for _, k := range strings.Fields(string(kids)) {
			if n, err := strconv.Atoi(k); err == nil {
				todo = append(todo, n)
			}
		}
	}
	return strings.Join(parts, "; ")
}

// procsNaming describes every process whose command line names mnt, such as
// a fusermount3 detached from the mounting process.
func procsNaming(mnt string) string {
	var parts []string
	for _, pid := range pids() {
		b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		if strings.Contains(string(b), mnt) {
			parts = append(parts, procTree(pid))
		}
	}
	return strings.Join(parts, "; ")
}

// blockedProcs describes processes in uninterruptible sleep, with the top of
// their kernel stack when readable.
func blockedProcs() string {
	var parts []string
	for _, pid := range pids() {
		stat, _ := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		i := strings.LastIndexByte(string(stat), ')')
		if i < 0 || i+2 >= len(stat) || stat[i+2] != 'D' {
			continue
		}
		stack, _ := os.ReadFile(fmt.Sprintf("/proc/%d/stack", pid))
		lines := strings.Split(strings.TrimSpace(string(stack)), "\n")
		parts = append(parts, procTree(pid)+" stack: "+strings.Join(lines[:min(len(lines), 6)], " < "))
	}
	return strings.Join(parts, "; ")
}

func pids() []int {
	ents, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range ents {
		if pid, err := strconv.Atoi(e.Name()); err == nil {
			out = append(out, pid)
		}
	}
	return out
}
