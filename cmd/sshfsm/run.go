package main

import (
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"strings"

	"sshfsm/internal/config"
)

// version is the release of this build; -ldflags "-X main.version=..." sets it.
var version = "0.1.0-dev"

// run is the whole command; it returns the exit status.
func run(args []string) config.ExitCode {
	defaultPath()
	if isDaemonChild() {
		return runDaemonChild(args)
	}
	if len(args) > 0 && args[0] == "status" {
		return runStatus(args[1:])
	}
	if len(args) > 0 && args[0] == "warm" {
		return runWarm(args[1:])
	}
	if config.IsBareSubcommand(args, "help") {
		args = []string{"--help"}
	}
	if config.IsBareSubcommand(args, "version") {
		args = []string{"--version"}
	}
	cfg, err := config.Parse(args)
	if err != nil {
		return fail(os.Stderr, err)
	}
	switch cfg.Action {
	case config.ActionHelp:
		io.WriteString(os.Stdout, config.Help())
		return config.ExitOK
	case config.ActionVersion:
		io.WriteString(os.Stdout, versionText())
		return config.ExitOK
	case config.ActionMan:
		io.WriteString(os.Stdout, config.ManPage())
		return config.ExitOK
	}
	if cfg.Foreground {
		return runForeground(cfg)
	}
	return runDaemonParent(args)
}

// defaultPath gives the process a search path when it has none, as under
// mount.fuse3, so that ssh and fusermount3 are found the way execvp would.
func defaultPath() {
	if _, ok := os.LookupEnv("PATH"); !ok {
		os.Setenv("PATH", "/usr/local/bin:/usr/bin:/bin:/usr/local/sbin:/usr/sbin:/sbin")
	}
}

// fail prints err as the one line sshfsm reports and returns its exit code.
func fail(w io.Writer, err error) config.ExitCode {
	fmt.Fprintf(w, "sshfsm: %s\n", printable(oneLine(err.Error())))
	return config.CodeOf(err)
}

// oneLine folds a message onto a single line.
func oneLine(s string) string {
	return strings.Join(strings.Fields(strings.ReplaceAll(s, "\r", "")), " ")
}

// runForeground mounts and serves until unmounted or signalled.
func runForeground(cfg *config.Config) config.ExitCode {
	if err := readPassword(cfg, os.Stdin, os.Stderr); err != nil {
		return fail(os.Stderr, err)
	}
	log, sink, err := newLog(cfg, os.Stderr)
	if err != nil {
		return fail(os.Stderr, err)
	}
	sigs := notifySignals(true)
	m, err := mountUnlessSignalled(cfg, log, sigs)
	if err != nil {
		return fail(os.Stderr, err)
	}
	sink.serving(cfg, false)
	m.logSink.Store(sink)
	m.serve(sigs)
	return config.ExitOK
}

func versionText() string {
	var b strings.Builder
	fmt.Fprintf(&b, "sshfsm version %s\n", version)
	if info, ok := debug.ReadBuildInfo(); ok {
		fmt.Fprintf(&b, "built with %s\n", info.GoVersion)
		for _, d := range info.Deps {
			if d.Path == "github.com/hanwen/go-fuse/v2" || d.Path == "github.com/pkg/sftp" {
				fmt.Fprintf(&b, "%s %s\n", d.Path, d.Version)
			}
		}
	}
	return b.String()
}
