package main

import (
	"context"
	"io"
	"log/slog"
	"log/syslog"
	"os"
	"strings"
	"sync"

	"sshfsm/internal/config"
)

// logSink is where the daemon's log goes: stderr while the mount command
// runs (so its warnings reach the terminal), then, once it leaves the
// terminal, the file of log= or syslog, at the level of state changes.
// In the foreground, stderr or the file of log= all along.
type logSink struct {
	mu    sync.Mutex
	w     io.Writer      // stderr or the log file; nil when sys is set
	sys   *syslog.Writer // syslog, once in the background
	where string         // for sshfsm status
	level *slog.LevelVar
	debug bool
}

// newLog opens the log cfg asks for. While mounting, warnings are logged,
// with -v also state changes (hosts down and up, reconnections), with -d
// every request; once serving, state changes too (serving).
func newLog(cfg *config.Config, stderr io.Writer) (*slog.Logger, *logSink, error) {
	s := &logSink{w: stderr, where: "stderr", level: new(slog.LevelVar), debug: cfg.Debug}
	s.level.Set(logLevel(cfg))
	if cfg.LogFile != "" {
		f, err := os.OpenFile(cfg.LogFile, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
		if err != nil {
			return nil, nil, config.Errorf(config.ExitUsage, "log file: %v", err)
		}
		s.w, s.where = f, cfg.LogFile
	}
	return slog.New(s.handler()), s, nil
}

// serving logs state changes from now on (the mount command's own output
// stays quiet but for warnings); in the background, it moves the log off
// the terminal the mount command leaves: to the log file, kept, or to
// syslog (/dev/log), or nowhere without one.
func (s *logSink) serving(cfg *config.Config, background bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.debug {
		s.level.Set(slog.LevelInfo)
	}
	if !background || cfg.LogFile != "" {
		return
	}
	s.w, s.where = io.Discard, "nowhere (no syslog)"
	if w, err := syslog.New(syslog.LOG_DAEMON|syslog.LOG_INFO, "sshfsm"); err == nil {
		s.w, s.sys, s.where = nil, w, "syslog"
	}
}

// Where says where the log goes, for sshfsm status.
func (s *logSink) Where() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.where
}

// write sends one formatted record of the given level.
func (s *logSink) write(level slog.Level, p []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.sys == nil {
		s.w.Write(p)
		return
	}
	msg := strings.TrimSuffix(string(p), "\n")
	switch {
	case level >= slog.LevelError:
		s.sys.Err(msg)
	case level >= slog.LevelWarn:
		s.sys.Warning(msg)
	case level >= slog.LevelInfo:
		s.sys.Info(msg)
	default:
		s.sys.Debug(msg)
	}
}

func (s *logSink) handler() slog.Handler {
	byLevel := map[slog.Level]slog.Handler{}
	for _, l := range []slog.Level{slog.LevelDebug, slog.LevelInfo, slog.LevelWarn, slog.LevelError} {
		byLevel[l] = slog.NewTextHandler(levelWriter{s, l}, &slog.HandlerOptions{Level: s.level})
	}
	return splitHandler{byLevel}
}

// levelWriter writes the records of one level to the sink.
type levelWriter struct {
	s     *logSink
	level slog.Level
}

func (w levelWriter) Write(p []byte) (int, error) {
	w.s.write(w.level, p)
	return len(p), nil
}

// splitHandler formats each record with the handler of its level, whose
// writer knows the syslog severity to give it.
type splitHandler struct {
	byLevel map[slog.Level]slog.Handler
}

func (h splitHandler) of(l slog.Level) slog.Handler {
	switch {
	case l >= slog.LevelError:
		return h.byLevel[slog.LevelError]
	case l >= slog.LevelWarn:
		return h.byLevel[slog.LevelWarn]
	case l >= slog.LevelInfo:
		return h.byLevel[slog.LevelInfo]
	}
	return h.byLevel[slog.LevelDebug]
}

func (h splitHandler) Enabled(ctx context.Context, l slog.Level) bool {
	return h.of(l).Enabled(ctx, l)
}

func (h splitHandler) Handle(ctx context.Context, r slog.Record) error {
	return h.of(r.Level).Handle(ctx, r)
}

func (h splitHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return h.each(func(x slog.Handler) slog.Handler { return x.WithAttrs(as) })
}

func (h splitHandler) WithGroup(name string) slog.Handler {
	return h.each(func(x slog.Handler) slog.Handler { return x.WithGroup(name) })
}

func (h splitHandler) each(f func(slog.Handler) slog.Handler) slog.Handler {
	n := splitHandler{map[slog.Level]slog.Handler{}}
	for l, x := range h.byLevel {
		n.byLevel[l] = f(x)
	}
	return n
}

// logLevel is warnings, with -v also state changes (hosts down and up,
// reconnections), with -d every request.
func logLevel(cfg *config.Config) slog.Level {
	switch {
	case cfg.Debug:
		return slog.LevelDebug
	case cfg.Verbose:
		return slog.LevelInfo
	}
	return slog.LevelWarn
}
