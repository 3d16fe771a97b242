package watch

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"time"

	"sshfsm/internal/namespace"
)

// The watcher's standard output is one marker line (anything a login
// script prints comes before it) followed by records, one per event, in
// the format `%e %w%f%0` with --no-newline: the comma-separated event
// names (capitals and underscores, never a space), one space, the path,
// one NUL. A name may hold any byte but NUL and '/', newlines included,
// and a path holds no NUL, so a NUL ends a record and nothing else does.
// Every path must lie inside the watched directory; a record that does not
// parse loses an event, which the parser reports as "anything may have
// changed" at the root.

// maxRecord bounds one record; paths on Linux can exceed PATH_MAX when
// built a component at a time, as inotifywait does, so the bound is
// generous.
const maxRecord = 1 << 20

var (
	// errNoMarker: the command's output did not start with the marker.
	errNoMarker = errors.New("no marker from the watcher command")
	// errGone: the watched directory itself was removed, moved away or
	// unmounted. inotifywait goes on watching nothing.
	errGone = errors.New("the watched directory is gone")
)

// parser turns the watcher's output into changes of paths below root.
type parser struct {
	root string // watched absolute directory, without a trailing '/'
	// emit receives each change, Path relative to root ("" is root).
	emit func(namespace.Change)
	// marked: the marker line was seen; records follow.
	marked bool
	bad    int  // records that did not parse
	gone   bool // the watched directory is gone (errGone)
	buf    []byte
	limit  int  // the buffer's bound: maxRecord
	skip   bool // dropping the rest of an oversized record
	// pause is how long read waits after each read that brought records
	// before it reads again, so that a stream of events (every WRITE of a
	// large file is one) reaches it in batches rather than one wakeup each.
	pause time.Duration
}

func newParser(root string, emit func(namespace.Change)) *parser {
	return &parser{root: root, emit: emit, buf: make([]byte, 0, 64<<10), limit: maxRecord}
}

// read consumes r until it ends or fails.
func (p *parser) read(r io.Reader) error {
	for {
		if len(p.buf) == cap(p.buf) {
			p.grow()
		}
		n, err := r.Read(p.buf[len(p.buf):cap(p.buf)])
		p.feed(p.buf[: len(p.buf)+n : cap(p.buf)])
		switch {
		case p.gone:
			return errGone
		case err == io.EOF:
			if !p.marked {
				return errNoMarker
			}
			return nil
		case err != nil:
			return err
		}
		if n > 0 && p.marked {
			time.Sleep(p.pause)
		}
	}
}

// grow makes room for a longer record, or drops one beyond the limit
// (before the marker: a login script's endless line).
func (p *parser) grow() {
	if cap(p.buf) >= p.limit && !p.marked {
		p.buf = p.buf[:0]
		return
	}
	if cap(p.buf) >= p.limit {
		p.lost()
		p.skip = true
		p.buf = p.buf[:0]
		return
	}
	p.buf = append(make([]byte, 0, 2*cap(p.buf)), p.buf...)
}

// feed handles every complete record of data and keeps the rest in p.buf.
func (p *parser) feed(data []byte) {
	for !p.marked {
		i := bytes.IndexByte(data, '\n')
		if i < 0 {
			p.keep(data)
			return
		}
		p.marked = string(data[:i]) == marker
		data = data[i+1:]
	}
	for !p.gone {
		i := bytes.IndexByte(data, 0)
		if i < 0 {
			if p.skip {
				data = nil
			}
			p.keep(data)
			return
		}
		if p.skip {
			p.skip = false
		} else {
			p.record(data[:i])
		}
		data = data[i+1:]
	}
}

// keep moves an incomplete record to the start of p.buf.
func (p *parser) keep(rest []byte) {
	p.buf = p.buf[:copy(p.buf[:cap(p.buf)], rest)]
}

// lost reports events that could not be read: anything may have changed.
func (p *parser) lost() {
	p.bad++
	p.emit(namespace.Change{Kind: namespace.ChangeTree, Dir: true})
}

// record handles one record (without its NUL).
func (p *parser) record(rec []byte) {
	sp := bytes.IndexByte(rec, ' ')
	if sp <= 0 {
		p.lost()
		return
	}
	ev, ok := parseEvents(rec[:sp])
	if !ok {
		p.lost()
		return
	}
	if ev&evOverflow != 0 {
		p.emit(namespace.Change{Kind: namespace.ChangeTree, Dir: true})
		return
	}
	rel, ok := p.relative(string(rec[sp+1:]))
	if !ok {
		p.lost()
		return
	}
	if c, ok := changeOf(ev, rel); ok {
		p.gone = p.gone || (rel == "" && c.Kind == namespace.ChangeTree)
		p.emit(c)
	}
}

// relative returns path relative to the watched directory, checking that
// it lies inside: root itself (as "root/"), or root/ followed by valid
// names. A directory's own events end in '/'.
func (p *parser) relative(path string) (string, bool) {
	rest, ok := strings.CutPrefix(path, p.root+"/")
	if !ok {
		return "", false
	}
	rest = strings.TrimSuffix(rest, "/")
	if namespace.ValidPath(rest) != nil {
		return "", false
	}
	return rest, true
}

// Events, as bits.
const (
	evCreate = 1 << iota
	evDelete
	evModify
	evCloseWrite
	evAttrib
	evMovedFrom
	evMovedTo
	evDeleteSelf
	evMoveSelf
	evIsDir
	evOverflow
	evUnmount
	evUnknown // a name this parser does not know
)

var eventNames = map[string]int{
	"CREATE": evCreate, "DELETE": evDelete, "MODIFY": evModify, "CLOSE_WRITE": evCloseWrite,
	"ATTRIB": evAttrib, "MOVED_FROM": evMovedFrom, "MOVED_TO": evMovedTo,
	"DELETE_SELF": evDeleteSelf, "MOVE_SELF": evMoveSelf, "ISDIR": evIsDir,
	"Q_OVERFLOW": evOverflow, "UNMOUNT": evUnmount,
	// Carried along with the events asked for, or the end of a watch:
	// nothing to do.
	"CLOSE": 0, "IGNORED": 0, "OPEN": 0, "ACCESS": 0, "CLOSE_NOWRITE": 0,
}

// parseEvents reads inotifywait's comma-separated event names.
func parseEvents(b []byte) (ev int, ok bool) {
	for _, name := range bytes.Split(b, []byte{','}) {
		if len(name) == 0 {
			return 0, false
		}
		for _, c := range name {
			if (c < 'A' || c > 'Z') && c != '_' {
				return 0, false
			}
		}
		bit, known := eventNames[string(name)]
		if !known {
			bit = evUnknown
		}
		ev |= bit
	}
	return ev, true
}

// changeOf says what events ev of the path rel mean; ok is false when
// they change nothing.
func changeOf(ev int, rel string) (namespace.Change, bool) {
	c := namespace.Change{Path: rel, Dir: ev&evIsDir != 0}
	switch {
	case ev&(evUnmount|evUnknown) != 0,
		rel == "" && ev&(evDeleteSelf|evMoveSelf|evCreate|evDelete|evMovedFrom|evMovedTo) != 0:
		// A filesystem unmounted below, or the watched directory
		// itself gone (the watcher ends).
		c.Kind, c.Dir = namespace.ChangeTree, true
	case ev&(evDeleteSelf|evMoveSelf) != 0:
		c.Kind, c.Dir = namespace.ChangeRemoved, true
	case ev&(evCreate|evMovedTo) != 0:
		c.Kind = namespace.ChangeCreated
	case ev&(evDelete|evMovedFrom) != 0:
		c.Kind = namespace.ChangeRemoved
	case ev&(evModify|evCloseWrite) != 0:
		c.Kind = namespace.ChangeData
	case ev&evAttrib != 0:
		c.Kind = namespace.ChangeAttr
	default:
		return c, false
	}
	return c, true
}
