package e2e

import (
	"bytes"
	"fmt"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"sshfsm/internal/netproxy"
	"sshfsm/internal/testenv"
)

// crashTree writes files of varied sizes, a few of several blocks, dated
// an hour ago (files modified within the last seconds are not cached);
// it returns their names and the bytes they hold.
func crashTree(t *testing.T, root string, seed int64) ([]string, int64) {
	t.Helper()
	r := rand.New(rand.NewSource(seed))
	old := time.Now().Add(-time.Hour)
	var names []string
	var total int64
	for i := range 120 {
		size := r.Intn(300 << 10)
		if i%20 == 0 {
			size = 6<<20 + r.Intn(1<<20)
		}
		data := make([]byte, size)
		r.Read(data)
		name := filepath.Join(fmt.Sprintf("d%d", i%6), fmt.Sprintf("f%03d", i))
		p := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(p, old, old); err != nil {
			t.Fatal(err)
		}
		names = append(names, name)
		total += int64(size)
	}
	return names, total
}

// The daemon killed with SIGKILL while it fills the disk cache, again and
// again: the next mount reads every file exactly as the server has it,
// and once everything was read through it, serves it all from disk.
//
// Each kill must land mid-fill: the daemon has fetched some of the tree
// and warm has not read all of it. The link to the server is capped while
// the fills run (each round keeps what it fetched, and four rounds of up
// to half a second at loopback speed fetch the whole tree on a fast
// machine), and lifted for the checks.
func TestDiskCacheSurvivesKill(t *testing.T) {
	h := testenv.StartHost(t, "127.0.0.2")
	names, total := crashTree(t, filepath.Join(h.Dir, "tree"), 7)
	// Four channels of at most 4 MiB/s: four rounds fetch no more than
	// 4 × (450ms + the wait for a status) × 16 MiB/s, well below total.
	const perConn = 4 << 20
	p, sshArgs, dest := proxied(t, h, netproxy.Symmetric(0, perConn))
	cacheDir := filepath.Join(t.TempDir(), "cache")
	spec := mountSpec{sshArgs: sshArgs, dest: dest,
		opts: []string{"cache_dir=" + cacheDir, "max_conns=4"}}
	m := mount(t, h, spec)
	r := rand.New(rand.NewSource(11))
	for round := range 4 {
		reader := exec.Command(binary(t), "warm", "--content", "--jobs", "8", m.Path("tree"))
		var out bytes.Buffer
		reader.Stdout, reader.Stderr = &out, &out
		if err := reader.Start(); err != nil {
			t.Fatal(err)
		}
		exited := make(chan error, 1)
		go func() { exited <- reader.Wait() }()
		time.Sleep(time.Duration(50+r.Intn(400)) * time.Millisecond)
		// Mid-fill: this daemon has fetched something (from where the
		// previous rounds stopped), and not everything was read yet.
		deadline := time.Now().Add(10 * time.Second)
		for {
			st := status(t, m.Dir)
			fetched := st.Branches[0].Hosts[0].BytesRead
			if st.Disk == nil {
				t.Fatalf("round %d: no disk cache in the status", round)
			}
			if fetched > 0 && st.Disk.HitBytes+st.Disk.MissBytes < total {
				t.Logf("round %d: killing the daemon after it fetched %d bytes; %d of %d read from the disk cache or missing in it, %d stored",
					round, fetched, st.Disk.HitBytes+st.Disk.MissBytes, total, st.Disk.Bytes)
				break
			}
			select {
			case err := <-exited:
				t.Fatalf("round %d: the fill finished (warm: %v) before the daemon could be killed mid-fill: fetched %d, disk cache %+v\n%s",
					round, err, fetched, *st.Disk, out.String())
			default:
			}
			if time.Now().After(deadline) {
				reader.Process.Kill()
				t.Fatalf("round %d: no fill under way after 10s: fetched %d, disk cache %+v", round, fetched, *st.Disk)
			}
			time.Sleep(10 * time.Millisecond)
		}
		pid := m.daemonPID()
		if pid == 0 {
			<-exited
			t.Fatalf("round %d: no daemon serving %s", round, m.Dir)
		}
		if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		if !waitExit(pid, testenv.Patience()) {
			t.Fatalf("daemon %d still runs long after SIGKILL", pid)
		}
		// warm reads every file: had it read them all before the kill, it
		// would succeed.
		if err := <-exited; err == nil {
			t.Fatalf("round %d: warm read everything before the daemon was killed: %s", round, out.String())
		}
		if out, err := exec.Command("fusermount3", "-u", m.Dir).CombinedOutput(); err != nil {
			t.Fatalf("fusermount3 -u: %v: %s", err, out)
		}
		m.start(t)
	}
	p.SetOptions(netproxy.Options{})
	for pass, wantServed := range []bool{true, false} {
		before := hostBytesRead(t, m.Dir)
		for _, n := range names {
			want, err := os.ReadFile(filepath.Join(h.Dir, "tree", n))
			if err != nil {
				t.Fatal(err)
			}
			got, err := os.ReadFile(m.Path("tree", n))
			if err != nil || !bytes.Equal(got, want) {
				t.Fatalf("pass %d: %s: %d bytes, %v; want the server's %d bytes", pass, n, len(got), err, len(want))
			}
		}
		served := hostBytesRead(t, m.Dir) - before
		if !wantServed && served != 0 {
			t.Errorf("after every file was read once, a new mount read %d of %d bytes from the server", served, total)
		}
		m.unmount(t)
		m.start(t)
	}
}
