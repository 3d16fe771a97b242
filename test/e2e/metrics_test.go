package e2e

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"sshfsm/internal/testenv"
	"sshfsm/test/exposition"
)

// scrape reads the metrics page served on the unix socket at sock and
// parses it strictly; histograms must be consistent.
func scrape(t *testing.T, sock string) map[string]*exposition.Family {
	t.Helper()
	c := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "unix", sock)
	}}, Timeout: testenv.Patience()}
	defer c.CloseIdleConnections()
	resp, err := c.Get("http://sshfsm/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/plain; version=0.0.4") {
		t.Fatalf("status %d, content type %q:\n%s", resp.StatusCode, resp.Header.Get("Content-Type"), body)
	}
	fams, _, err := exposition.Parse(strings.NewReader(string(body)))
	if err == nil {
		err = exposition.CheckHistograms(fams)
	}
	if err != nil {
		t.Fatalf("%v\n%s", err, body)
	}
	return fams
}

// value sums the samples called name with the labels of match; a missing
// family fails the test.
func value(t *testing.T, fams map[string]*exposition.Family, family, name string, match map[string]string) float64 {
	t.Helper()
	f := fams[family]
	if f == nil {
		t.Fatalf("no metric %s", family)
	}
	return f.Sum(name, match)
}

// TestMetricsMove: with metrics=unix:PATH, the mount serves the text
// format there; after writing, reading and listing through the mount the
// counters of SFTP requests by type, bytes, request durations, errors
// and the listing cache have moved; the socket goes with the mount.
func TestMetricsMove(t *testing.T) {
	h := testenv.StartHost(t, "127.0.0.2")
	const size = 300 << 10
	if err := os.WriteFile(filepath.Join(h.Dir, "server.bin"), make([]byte, size), 0o644); err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(t.TempDir(), "metrics.sock")
	m := mount(t, h, mountSpec{opts: []string{"metrics=unix:" + sock}})
	host := map[string]string{"host": h.Alias}

	before := scrape(t, sock)
	if up := value(t, before, "sshfsm_host_up", "sshfsm_host_up", host); up != 1 {
		t.Errorf("sshfsm_host_up %v, want 1", up)
	}
	if n := value(t, before, "sshfsm_info", "sshfsm_info", map[string]string{"mountpoint": m.Dir}); n != 1 {
		t.Errorf("sshfsm_info for mountpoint %s: %v", m.Dir, n)
	}

	data := make([]byte, size)
	for i := range data {
		data[i] = byte(i * 7)
	}
	if err := os.WriteFile(m.Path("written.bin"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(m.Path("server.bin"))
	if err != nil || len(got) != size {
		t.Fatalf("read server.bin: %d bytes, %v", len(got), err)
	}
	if err := os.Mkdir(m.Path("d"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(m.Path("d", "f"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Rmdir(m.Path("d")); !errors.Is(err, syscall.ENOTEMPTY) {
		t.Fatalf("rmdir of a directory with a file: %v", err)
	}
	for range 3 {
		if _, err := os.ReadDir(m.Path("d")); err != nil {
			t.Fatal(err)
		}
		if _, err := os.Lstat(m.Path("d", "missing")); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("lstat of a missing name: %v", err)
		}
	}
	after := scrape(t, sock)

	moved := func(family, name string, match map[string]string, atLeast float64) {
		t.Helper()
		b, a := value(t, before, family, name, match), value(t, after, family, name, match)
		if a-b < atLeast {
			t.Errorf("%s%v moved from %v to %v, want at least +%v", name, match, b, a, atLeast)
		}
	}
	with := func(k, v string) map[string]string { return map[string]string{"host": h.Alias, k: v} }
	moved("sshfsm_sftp_requests_total", "sshfsm_sftp_requests_total", with("type", "WRITE"), 1)
	moved("sshfsm_sftp_requests_total", "sshfsm_sftp_requests_total", with("type", "MKDIR"), 1)
	moved("sshfsm_sftp_requests_total", "sshfsm_sftp_requests_total", with("type", "OPEN"), 2)
	moved("sshfsm_written_bytes_total", "sshfsm_written_bytes_total", host, size)
	moved("sshfsm_read_bytes_total", "sshfsm_read_bytes_total", host, size)
	moved("sshfsm_wire_sent_bytes_total", "sshfsm_wire_sent_bytes_total", host, size)
	moved("sshfsm_sftp_request_duration_seconds", "sshfsm_sftp_request_duration_seconds_count", host, 3)
	moved("sshfsm_fuse_request_duration_seconds", "sshfsm_fuse_request_duration_seconds_count", map[string]string{"op": "WRITE"}, 1)
	moved("sshfsm_fuse_request_duration_seconds", "sshfsm_fuse_request_duration_seconds_count", map[string]string{"op": "MKDIR"}, 1)
	moved("sshfsm_cache_hits_total", "sshfsm_cache_hits_total", nil, 1)
	if n := value(t, after, "sshfsm_fuse_errors_total", "sshfsm_fuse_errors_total", map[string]string{"op": "RMDIR", "errno": "ENOTEMPTY"}); n != 1 {
		t.Errorf("RMDIR answered ENOTEMPTY %v times, want 1", n)
	}
	if n := value(t, after, "sshfsm_sftp_errors_total", "sshfsm_sftp_errors_total", host); n != 0 {
		t.Errorf("%v transport errors on a healthy link", n)
	}

	m.unmount(t)
	if _, err := os.Lstat(sock); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("metrics socket left after the mount ended: %v", err)
	}
}

// TestMetricsAddressInUse: an address that cannot be bound fails the
// mount with a message naming it, before anything is mounted.
func TestMetricsAddressInUse(t *testing.T) {
	testenv.RequireFUSE(t)
	h := testenv.StartHost(t, "127.0.0.2")
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	dir := filepath.Join(t.TempDir(), "mnt")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	testenv.UnmountAtCleanup(t, dir)
	args := append(h.SSHArgs(), "-o", "metrics="+busy.Addr().String(), h.Alias+":"+h.Dir, dir)
	out, err := exec.Command(binary(t), args...).CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 6 {
		t.Fatalf("mount with a busy metrics address: %v, want exit status 6\n%s", err, out)
	}
	want := "sshfsm: metrics=" + busy.Addr().String() + ": cannot listen there: bind: address already in use"
	if !strings.Contains(string(out), want) {
		t.Errorf("output %q, want %q", out, want)
	}
	if testenv.MountedAt(dir) {
		t.Errorf("mounted at %s all the same", dir)
	}
}
