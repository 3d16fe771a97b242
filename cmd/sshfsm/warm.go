package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"sshfsm/internal/config"
	"sshfsm/internal/control"
	"sshfsm/internal/mountinfo"
)

// exitInterrupted is the exit status of a warm stopped by a signal, as a
// shell reports a command killed by SIGINT.
const exitInterrupted config.ExitCode = 130

// runWarm is sshfsm warm: fetch metadata, and contents with --content,
// ahead of use, through the mount itself, so that every cache of the
// daemon (listings, attributes, disk cache) and the kernel's fill as they
// would for any reader.
func runWarm(args []string) config.ExitCode {
	wa, err := config.ParseWarm(args)
	if err != nil {
		return fail(os.Stderr, err)
	}
	if wa.Help {
		io.WriteString(os.Stdout, config.SubcommandHelp("warm"))
		return config.ExitOK
	}
	for _, p := range wa.Paths {
		if err := insideMount(control.Client{}, p); err != nil {
			return fail(os.Stderr, err)
		}
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	w := &warmer{args: wa, out: os.Stderr, tty: isTerminal(os.Stderr)}
	return w.run(ctx)
}

// insideMount checks that p is inside a mount whose sshfsm answers: warm
// fills the caches of a mount, and walking anything else only costs.
func insideMount(c control.Client, p string) error {
	real, err := filepath.EvalSymlinks(p)
	if err != nil {
		return config.Errorf(config.ExitUsage, "%s: %v", p, err)
	}
	if real, err = filepath.Abs(real); err != nil {
		return config.Errorf(config.ExitUsage, "%s: %v", p, err)
	}
	ms, err := mountinfo.All()
	if err != nil {
		return config.Errorf(config.ExitMountpoint, "reading the mount table: %v", err)
	}
	var at *mountinfo.Mount
	for i := range ms {
		m := &ms[i]
		if m.Point == real || strings.HasPrefix(real, strings.TrimSuffix(m.Point, "/")+"/") {
			if at == nil || len(m.Point) >= len(at.Point) {
				at = m
			}
		}
	}
	if at == nil || !strings.HasPrefix(at.FSType, "fuse.") {
		return config.Errorf(config.ExitMountpoint, "%s is not inside an sshfsm mount", p)
	}
	if _, err := c.Query(at.Point); err != nil {
		return config.Errorf(config.ExitMountpoint, "%s is not inside an sshfsm mount of yours (%s is a %s mount: %v)", p, at.Point, at.FSType, err)
	}
	return nil
}

// warmer walks the paths, then reads the files it found.
type warmer struct {
	args config.WarmArgs
	out  io.Writer
	tty  bool

	dirs, files, size atomic.Int64 // seen by the walk
	wantFiles         atomic.Int64 // files to read, and their bytes
	wantBytes         atomic.Int64
	readFiles         atomic.Int64 // read so far
	readBytes         atomic.Int64
	reading           atomic.Bool // the walk is over

	mu     sync.Mutex // guards toRead, failed, nfailed
	toRead []string
	failed []string // the first maxFailed failures, as messages
	nfail  int
}

const maxFailed = 10

func (w *warmer) run(ctx context.Context) config.ExitCode {
	start := time.Now()
	done := make(chan struct{})
	var shown sync.WaitGroup
	shown.Add(1)
	go func() {
		defer shown.Done()
		w.progress(done, start)
	}()
	w.walk(ctx)
	if w.args.Content && ctx.Err() == nil {
		w.reading.Store(true)
		w.readAll(ctx)
	}
	close(done)
	shown.Wait()
	w.summary(ctx, time.Since(start))
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, f := range w.failed {
		fmt.Fprintln(w.out, "sshfsm: warm:", printable(f))
	}
	if w.nfail > len(w.failed) {
		fmt.Fprintf(w.out, "sshfsm: warm: and %d more failures\n", w.nfail-len(w.failed))
	}
	switch {
	case ctx.Err() != nil:
		return exitInterrupted
	case w.nfail > 0:
		return config.ExitUsage
	}
	return config.ExitOK
}

func (w *warmer) fail(p string, err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.nfail++
	if len(w.failed) < maxFailed {
		w.failed = append(w.failed, fmt.Sprintf("%s: %v", p, unwrapPath(err)))
	}
}

// walk lists every directory below the paths, args.Jobs at a time, and
// notes the files to read.
func (w *warmer) walk(ctx context.Context) {
	q := newDirQueue()
	for _, p := range w.args.Paths {
		fi, err := os.Lstat(p)
		switch {
		case err != nil:
			w.fail(p, err)
		case fi.IsDir():
			w.dirs.Add(1)
			q.push(p)
		default:
			w.file(p, fi)
		}
	}
	var workers sync.WaitGroup
	for range w.args.Jobs {
		workers.Add(1)
		go func() {
			defer workers.Done()
			for {
				dir, ok := q.pop()
				if !ok {
					return
				}
				if ctx.Err() == nil {
					w.list(dir, q.push)
				}
				q.done()
			}
		}()
	}
	workers.Wait()
}

// dirQueue holds the directories to list, last found first (depth first,
// as the daemon's prefetching expects of a walk), and ends when it is
// empty and nobody is listing one that may add more.
type dirQueue struct {
	mu     sync.Mutex // guards dirs and active
	more   *sync.Cond
	dirs   []string
	active int
}

func newDirQueue() *dirQueue {
	q := &dirQueue{}
	q.more = sync.NewCond(&q.mu)
	return q
}

func (q *dirQueue) push(dir string) {
	q.mu.Lock()
	q.dirs = append(q.dirs, dir)
	q.mu.Unlock()
	q.more.Signal()
}

// pop takes a directory to list; ok is false when the walk is over.
func (q *dirQueue) pop() (dir string, ok bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	for len(q.dirs) == 0 && q.active > 0 {
		q.more.Wait()
	}
	if len(q.dirs) == 0 {
		return "", false
	}
	dir = q.dirs[len(q.dirs)-1]
	q.dirs = q.dirs[:len(q.dirs)-1]
	q.active++
	return dir, true
}

// done ends the listing of a popped directory.
func (q *dirQueue) done() {
	q.mu.Lock()
	q.active--
	end := q.active == 0 && len(q.dirs) == 0
	q.mu.Unlock()
	if end {
		q.more.Broadcast()
	}
}

// list reads one directory: subdirectories are pushed, files noted.
func (w *warmer) list(dir string, push func(string)) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		w.fail(dir, err)
	}
	for _, e := range ents {
		p := filepath.Join(dir, e.Name())
		fi, err := e.Info()
		switch {
		case errors.Is(err, os.ErrNotExist):
			// Removed since the listing: nothing to fetch.
		case err != nil:
			w.fail(p, err)
		case fi.IsDir():
			w.dirs.Add(1)
			push(p)
		default:
			w.file(p, fi)
		}
	}
}

func (w *warmer) file(p string, fi os.FileInfo) {
	w.files.Add(1)
	w.size.Add(fi.Size())
	if !w.args.Content || !fi.Mode().IsRegular() || (w.args.MaxSize > 0 && fi.Size() > w.args.MaxSize) {
		return
	}
	w.wantFiles.Add(1)
	w.wantBytes.Add(fi.Size())
	w.mu.Lock()
	w.toRead = append(w.toRead, p)
	w.mu.Unlock()
}

// readAll reads the noted files, args.Jobs at a time.
func (w *warmer) readAll(ctx context.Context) {
	next := make(chan string)
	var workers sync.WaitGroup
	for range w.args.Jobs {
		workers.Add(1)
		go func() {
			defer workers.Done()
			buf := make([]byte, 1<<20)
			for p := range next {
				if err := w.read(ctx, p, buf); err != nil && ctx.Err() == nil {
					w.fail(p, err)
				}
			}
		}()
	}
	for _, p := range w.toRead {
		select {
		case next <- p:
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			break
		}
	}
	close(next)
	workers.Wait()
}

func (w *warmer) read(ctx context.Context, p string, buf []byte) error {
	f, err := os.Open(p)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil
		}
		return err
	}
	defer f.Close()
	for ctx.Err() == nil {
		n, err := f.Read(buf)
		w.readBytes.Add(int64(n))
		if err == io.EOF {
			w.readFiles.Add(1)
			return nil
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// progress shows the counters until done: one line rewritten in place on
// a terminal, a line every 5 seconds otherwise.
func (w *warmer) progress(done <-chan struct{}, start time.Time) {
	every := 5 * time.Second
	if w.tty {
		every = 200 * time.Millisecond
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-done:
			if w.tty {
				fmt.Fprint(w.out, "\r\033[K")
			}
			return
		case <-t.C:
			io.WriteString(w.out, w.show(time.Since(start)))
		}
	}
}

// show is what progress writes after elapsed: on a terminal the line,
// replacing the previous one; otherwise the line and a newline.
func (w *warmer) show(elapsed time.Duration) string {
	line := w.line(elapsed)
	switch {
	case !w.tty:
		return line + "\n"
	case w.reading.Load():
		// A bar in place of the prefix keeps the line within 80 columns.
		line = bar(w.readBytes.Load(), w.wantBytes.Load()) + " " + strings.TrimPrefix(line, readingPrefix)
	}
	return "\r\033[K" + line
}

const readingPrefix = "sshfsm warm: reading: "

// bar draws done of total bytes as 20 cells and a percentage.
func bar(done, total int64) string {
	const cells = 20
	frac := 1.0
	if total > 0 {
		frac = min(float64(done)/float64(total), 1)
	}
	n := int(frac * cells)
	return "[" + strings.Repeat("#", n) + strings.Repeat(".", cells-n) + fmt.Sprintf("] %3d%%", int(frac*100))
}

// line is the progress so far, after elapsed.
func (w *warmer) line(elapsed time.Duration) string {
	if !w.reading.Load() {
		return fmt.Sprintf("sshfsm warm: listing: %d directories, %d files (%s)",
			w.dirs.Load(), w.files.Load(), humanBytes(uint64(w.size.Load())))
	}
	got, want := w.readBytes.Load(), w.wantBytes.Load()
	rate := float64(got) / elapsed.Seconds()
	eta := "-"
	if rate > 0 && want >= got {
		eta = duration(time.Duration(float64(want-got) / rate * float64(time.Second)))
	}
	return fmt.Sprintf(readingPrefix+"%d/%d files, %s of %s, %s/s, %s left",
		w.readFiles.Load(), w.wantFiles.Load(), humanBytes(uint64(got)), humanBytes(uint64(want)),
		humanBytes(uint64(rate)), eta)
}

// summary says what was fetched, and whether the walk was stopped.
func (w *warmer) summary(ctx context.Context, took time.Duration) {
	what := "done"
	if ctx.Err() != nil {
		what = "stopped; what was fetched stays cached"
	}
	s := fmt.Sprintf("sshfsm warm: %s: %d directories, %d files (%s)", what, w.dirs.Load(), w.files.Load(), humanBytes(uint64(w.size.Load())))
	if w.args.Content {
		s += fmt.Sprintf("; read %d of %d files, %s", w.readFiles.Load(), w.wantFiles.Load(), humanBytes(uint64(w.readBytes.Load())))
	}
	fmt.Fprintf(w.out, "%s in %s\n", s, took.Round(time.Millisecond))
}

// isTerminal reports whether f is a terminal.
func isTerminal(f *os.File) bool {
	_, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS)
	return err == nil
}
