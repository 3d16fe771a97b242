package fusefs

import (
	"sync"
	"time"

	"sshfsm/internal/namespace"
)

// The change watcher (watch.go) reports every change on the server, the
// mount's own included: an unpacked archive comes back as a creation of
// every directory and file, each followed by attribute and data events.
// Taken for changes by someone else, these echoes would throw away what
// the mount just learned by making the change — the empty listing of a
// directory it made, the entries of files it created — and the next
// lookup in such a directory would list it again, once per file.
//
// So the mount remembers the changes it made itself for a short while,
// by path and kind, and a change the watcher reports that one of them
// explains is taken for its echo and ignored:
//
//   - a creation of a name the mount created, with the same type (file or
//     directory), or whose attributes or contents it then changed;
//   - a removal of a name the mount removed, of the same type;
//   - a change of attributes or contents of a name the mount created, or
//     whose attributes or contents it changed.
//
// The last change made through the mount decides: after a removal, a
// creation of the name is no longer explained, and after a creation, a
// removal is not. Once a report the mount's change explains has come, the
// rest of its echo follows within echoTail (the watcher may split one
// change's events over consecutive batches), and a later report of the
// name is someone else's. Events carry no author, so a change someone
// else makes to the same name, of a kind the mount's own explains, before
// that (within echoHorizon of the mount's change, or echoTail of its
// echo) is taken for the echo too: it shows when the listing expires or
// the name is next changed, and an open still checks the file
// (closetoopen.go). Changes of other names — a file someone else creates
// in a directory the mount made — and kinds the mount's change does not
// explain are never echoes. An echo that arrives later than echoHorizon
// costs what any change costs: the names concerned are asked again.

// echoHorizon is how long a change the mount made explains the watcher's
// reports: the watcher gathers events for watch.DefaultWindow, and the
// way back from the server adds a round trip and what a busy server and
// client add to it.
const echoHorizon = 2 * time.Second

// echoTail is how long the rest of an echo may follow its first report:
// the watcher passes batches on back to back, watch.DefaultWindow apart.
const echoTail = 250 * time.Millisecond

// What a change made through the mount explains, as bits.
const (
	explainsFileCreated uint8 = 1 << iota
	explainsDirCreated
	explainsFileRemoved
	explainsDirRemoved
	explainsChanged // attributes or contents
)

// ownChanges remembers the changes the mount made, by namespace path.
// Its zero value is ready and remembers nothing until enabled.
type ownChanges struct {
	on  bool // changes are pushed: remember them (set before serving)
	now func() time.Time

	// mu guards the fields below.
	mu    sync.Mutex
	paths map[string]ownChange
	adds  int // changes remembered since the last sweep
}

type ownChange struct {
	explains uint8
	at       time.Time // when the mount made the change
	heard    time.Time // when its echo first came; zero before
}

func (o *ownChanges) enable(now func() time.Time) {
	if now == nil {
		now = time.Now
	}
	o.on, o.now, o.paths = true, now, map[string]ownChange{}
}

// created records that the mount created p (a directory if dir).
func (o *ownChanges) created(p string, dir bool) {
	e := explainsFileCreated
	if dir {
		e = explainsDirCreated
	}
	o.record(p, e|explainsChanged, false)
}

// removed records that the mount removed p (a directory if dir).
func (o *ownChanges) removed(p string, dir bool) {
	e := explainsFileRemoved
	if dir {
		e = explainsDirRemoved
	}
	o.record(p, e, false)
}

// changed records that the mount changed the attributes or contents of p.
// A creation recorded before still explains its own echo.
func (o *ownChanges) changed(p string) { o.record(p, explainsChanged, true) }

func (o *ownChanges) record(p string, explains uint8, keep bool) {
	if !o.on {
		return
	}
	now := o.now()
	o.mu.Lock()
	defer o.mu.Unlock()
	if old, ok := o.paths[p]; keep && ok && now.Sub(old.at) < echoHorizon {
		explains |= old.explains &^ (explainsFileRemoved | explainsDirRemoved)
	}
	o.paths[p] = ownChange{explains: explains, at: now}
	if o.adds++; o.adds >= 1024 {
		o.adds = 0
		for k, c := range o.paths {
			if now.Sub(c.at) >= echoHorizon {
				delete(o.paths, k)
			}
		}
	}
}

// echo reports whether c, reported by the watcher, is explained by a
// change the mount made to the same path within echoHorizon.
func (o *ownChanges) echo(c namespace.Change) bool {
	if !o.on || c.Path == "" {
		return false
	}
	var need uint8
	switch c.Kind {
	case namespace.ChangeAttr, namespace.ChangeData:
		need = explainsChanged
	case namespace.ChangeCreated:
		need = explainsFileCreated
		if c.Dir {
			need = explainsDirCreated
		}
	case namespace.ChangeRemoved:
		need = explainsFileRemoved
		if c.Dir {
			need = explainsDirRemoved
		}
	default:
		return false
	}
	now := o.now()
	o.mu.Lock()
	defer o.mu.Unlock()
	own, ok := o.paths[c.Path]
	switch {
	case !ok || own.explains&need == 0 || now.Sub(own.at) >= echoHorizon:
		return false
	case own.heard.IsZero():
		own.heard = now
		o.paths[c.Path] = own
		return true
	}
	return now.Sub(own.heard) < echoTail
}
