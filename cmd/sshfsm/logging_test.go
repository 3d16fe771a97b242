package main

import (
	"bytes"
	"log/syslog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sshfsm/internal/config"
)

// TestLogLevels: while mounting, only warnings reach the log (the mount
// command stays quiet), with -v state changes too; once serving, state
// changes are logged whatever the flags; -d logs everything all along.
func TestLogLevels(t *testing.T) {
	for _, tc := range []struct {
		name                 string
		cfg                  config.Config
		mountInfo, serveInfo bool
	}{
		{"plain", config.Config{}, false, true},
		{"-v", config.Config{Verbose: true}, true, true},
		{"-d", config.Config{Debug: true}, true, true},
	} {
		var buf bytes.Buffer
		log, sink, err := newLog(&tc.cfg, &buf)
		if err != nil {
			t.Fatal(err)
		}
		log.With("host", "h").Info("while mounting")
		log.Warn("a warning")
		sink.serving(&tc.cfg, false)
		log.Info("while serving")
		got := buf.String()
		if strings.Contains(got, "while mounting") != tc.mountInfo || strings.Contains(got, "while serving") != tc.serveInfo ||
			!strings.Contains(got, "a warning") {
			t.Errorf("%s: log %q; want state changes while mounting %v, while serving %v, and the warning", tc.name, got, tc.mountInfo, tc.serveInfo)
		}
		if sink.Where() != "stderr" {
			t.Errorf("%s: log goes to %q, want stderr", tc.name, sink.Where())
		}
	}
}

// TestLogFileKept: log=FILE receives the log from the start, and stays
// its destination in the background; a file that cannot be opened fails
// the mount.
func TestLogFileKept(t *testing.T) {
	p := filepath.Join(t.TempDir(), "log")
	cfg := &config.Config{LogFile: p}
	var stderr bytes.Buffer
	log, sink, err := newLog(cfg, &stderr)
	if err != nil {
		t.Fatal(err)
	}
	log.Warn("first")
	sink.serving(cfg, true)
	log.Info("host down", "host", "h")
	b, _ := os.ReadFile(p)
	if !strings.Contains(string(b), "msg=first") || !strings.Contains(string(b), `msg="host down" host=h`) || stderr.Len() != 0 {
		t.Errorf("log file %q, stderr %q; want both records in the file", b, stderr.String())
	}
	if sink.Where() != p {
		t.Errorf("log goes to %q, want %s", sink.Where(), p)
	}
	if _, _, err := newLog(&config.Config{LogFile: filepath.Join(p, "sub")}, &stderr); err == nil {
		t.Error("a log file below a file: no error")
	}
}

// TestLogBackground: without log=, the background daemon logs to syslog,
// or nowhere when there is none, never to the terminal it left.
func TestLogBackground(t *testing.T) {
	var stderr bytes.Buffer
	cfg := &config.Config{}
	log, sink, err := newLog(cfg, &stderr)
	if err != nil {
		t.Fatal(err)
	}
	sink.serving(cfg, true)
	log.Warn("after detach")
	want := "nowhere (no syslog)"
	if w, err := syslog.New(syslog.LOG_DAEMON, "sshfsm-test"); err == nil {
		w.Close()
		want = "syslog"
	}
	if sink.Where() != want || stderr.Len() != 0 {
		t.Errorf("log goes to %q (stderr %q), want %s", sink.Where(), stderr.String(), want)
	}
}
