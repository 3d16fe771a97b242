package transport

import (
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"sshfsm/internal/termtext"
)

// holdLine is how long a line of ssh's stderr waits before it is shown.
const holdLine = 300 * time.Millisecond

// heldPrinter shows what ssh writes to stderr while it may be prompting
// (a changed host key, the instructions of a one-time-code prompt), a
// moment late: when ssh then fails to connect, the line it ended with,
// which the dial error repeats, is dropped instead of printed twice.
// Lines are shown escaped (termtext): ssh passes on what the server's
// session writes to its standard error as it is.
type heldPrinter struct {
	w io.Writer

	mu    sync.Mutex // guards the fields below
	line  string
	held  bool
	timer *time.Timer
}

// print shows the line held so far and holds line.
func (p *heldPrinter) print(line string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.flushLocked()
	p.line, p.held = line, true
	if p.timer == nil {
		p.timer = time.AfterFunc(holdLine, p.flush)
	} else {
		p.timer.Reset(holdLine)
	}
}

// flush shows the held line now.
func (p *heldPrinter) flush() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.flushLocked()
}

func (p *heldPrinter) flushLocked() {
	if p.held {
		fmt.Fprintln(p.w, termtext.Printable(p.line))
		p.held = false
	}
}

// settle ends a failed dial whose error says detail: the held line is
// dropped when detail says it, and shown otherwise.
func (p *heldPrinter) settle(detail string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.held && detail != "" && strings.Contains(strings.ToLower(p.line), strings.ToLower(detail)) {
		p.held = false
	}
	p.flushLocked()
}
