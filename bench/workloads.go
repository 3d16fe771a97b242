package main

// workload is one measured quantity.
type workload struct {
	id     string
	title  string
	unit   string // MiB/s, IOPS, s, MB
	higher bool   // higher values are better
	target *target
}

// target is the goal for sshfsm on a workload, judged on medians of the
// same run.
type target struct {
	ref   string  // tool key the ratio is taken against; bestSSHFS; "" = absolute
	limit float64 // ratio (or absolute value) to reach
	// worst, when set, also requires sshfsm's worst sample to be at least
	// worst × its own median.
	worst float64
}

// bestSSHFS compares against the better of sshfs default and tuned.
const bestSSHFS = "best-sshfs"

var (
	wSeqWrite  = &workload{id: "seq-write", title: "fio seq write 128k qd4", unit: "MiB/s", higher: true, target: &target{ref: sshfsTuned, limit: 1.0}}
	wSeqRead   = &workload{id: "seq-read", title: "fio seq read 128k qd4", unit: "MiB/s", higher: true, target: &target{ref: sshfsTuned, limit: 1.0}}
	wRandWrite = &workload{id: "rand-write", title: "fio rand write 4k qd32", unit: "IOPS", higher: true, target: &target{ref: bestSSHFS, limit: 1.0, worst: 0.5}}
	// What a first read costs with the default options, the disk cache
	// storing what it fetches; sshfs, which has none, shows its seq-read
	// figures.
	wSeqReadFill = &workload{id: "seq-read-fill", title: "fio seq read 128k qd4, first read with the disk cache on (sshfsm default options, cache emptied before each run; sshfs: its seq read)", unit: "MiB/s", higher: true}
	// The seq write job with the change watcher off as well: every WRITE
	// the server executes is an inotify event that the watcher sends back
	// (and the mount drops, being its own write). Shown, not a target.
	wSeqWriteNoWatch = &workload{id: "seq-write-nowatch", title: "fio seq write 128k qd4, sshfsm with watch=no as well (the change watcher off)", unit: "MiB/s", higher: true}
	wRandRead        = &workload{id: "rand-read", title: "fio rand read 4k qd32", unit: "IOPS", higher: true, target: &target{ref: sshfsTuned, limit: 1.0}}

	wFindCold = &workload{id: "find-cold", title: "find ., cold", unit: "s", target: &target{ref: sshfsDefault, limit: 0.5}}
	wFindWarm = &workload{id: "find-warm", title: "find ., warm", unit: "s"}
	wLsCold   = &workload{id: "ls-lR-cold", title: "ls -lR, cold", unit: "s"}
	wLsWarm   = &workload{id: "ls-lR-warm", title: "ls -lR, warm", unit: "s"}
	wGitCold  = &workload{id: "git-status-cold", title: "git status, cold", unit: "s", target: &target{ref: sshfsDefault, limit: 0.5}}
	wGitWarm  = &workload{id: "git-status-warm", title: "git status, warm", unit: "s"}
	wGrepCold = &workload{id: "grep-cold", title: "grep -r, cold", unit: "s"}
	wGrepWarm = &workload{id: "grep-warm", title: "grep -r, warm", unit: "s", target: &target{ref: sshfsDefault, limit: 0.3}}

	// O_DIRECT at queue depth 4 keeps at most four 128 KiB requests per
	// round trip in flight for any tool (125 MiB/s at 4 ms): shown, not
	// a target. The buffered read is what cp and cat do.
	wRTTSeqRead    = &workload{id: "rtt-seq-read", title: "high RTT: fio seq read 128k qd4 O_DIRECT", unit: "MiB/s", higher: true}
	wRTTSeqReadBuf = &workload{id: "rtt-seq-read-buffered", title: "high RTT: fio seq read 1M buffered", unit: "MiB/s", higher: true, target: &target{ref: sshfsDefault, limit: 2.0}}
	wRTTFind       = &workload{id: "rtt-find-cold", title: "high RTT: find ., cold", unit: "s", target: &target{ref: sshfsDefault, limit: 0.3}}
	wRTTGit        = &workload{id: "rtt-git-status-cold", title: "high RTT: git status, cold", unit: "s", target: &target{ref: sshfsDefault, limit: 0.1}}
	wRTTGrep       = &workload{id: "rtt-grep-cold", title: "high RTT: grep -r, cold", unit: "s"}

	wWalk = &workload{id: "walk-wide", title: "find over the wide tree, cold", unit: "s"}
	wRSS  = &workload{id: "rss-wide", title: "daemon VmRSS after the walk", unit: "MB", target: &target{limit: 150}}
	wHWM  = &workload{id: "hwm-wide", title: "daemon VmHWM (peak RSS) after the walk", unit: "MB"}
)

// workloads lists every workload in report order.
var workloads = []*workload{
	wSeqWrite, wSeqWriteNoWatch, wSeqRead, wSeqReadFill, wRandWrite, wRandRead,
	wFindCold, wFindWarm, wLsCold, wLsWarm, wGitCold, wGitWarm, wGrepCold, wGrepWarm,
	wRTTSeqRead, wRTTSeqReadBuf, wRTTFind, wRTTGit, wRTTGrep,
	wCacheGitFirst, wCacheGitRemount, wCacheFindRemnt, wCacheGrepSecond,
	wBuildFirst, wBuildSecond, wCachedReadPT, wCachedReadAuto,
	wWalk, wRSS, wHWM,
	wReplicaRead, wUnionList, wUnionOverlap, wUnionRTT, wUnionFind, wGraftFind,
}
