package fusefs

import (
	"testing"
	"time"

	"sshfsm/internal/namespace"
)

// A change the watcher reports is the echo of the mount's own only when
// a change the mount made to the same path, of a kind that explains it,
// is recent; the mount's latest change to a path decides.
func TestOwnChangesExplain(t *testing.T) {
	now := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	var o ownChanges
	o.enable(func() time.Time { return now })
	created := func(p string, dir bool) namespace.Change {
		return namespace.Change{Path: p, Kind: namespace.ChangeCreated, Dir: dir}
	}
	removed := func(p string, dir bool) namespace.Change {
		return namespace.Change{Path: p, Kind: namespace.ChangeRemoved, Dir: dir}
	}
	data := namespace.Change{Path: "d/f", Kind: namespace.ChangeData}
	attr := namespace.Change{Path: "d", Kind: namespace.ChangeAttr, Dir: true}

	o.created("d", true)
	o.created("d/f", false)
	o.changed("d/f")
	o.changed("d")
	for _, c := range []struct {
		c    namespace.Change
		echo bool
	}{
		{created("d", true), true},
		{created("d", false), false}, // a file where the mount made a directory
		{removed("d", true), false},
		{attr, true},
		{created("d/f", false), true}, // still explained after the write
		{data, true},
		{created("d/g", false), false}, // someone else's name in the new directory
		{namespace.Change{Path: "d", Kind: namespace.ChangeTree, Dir: true}, false},
		{namespace.Change{Kind: namespace.ChangeCreated, Dir: true}, false},
	} {
		if got := o.echo(c.c); got != c.echo {
			t.Errorf("%+v: echo %v, want %v", c.c, got, c.echo)
		}
	}

	o.removed("d/f", false)
	if o.echo(created("d/f", false)) || !o.echo(removed("d/f", false)) || o.echo(data) {
		t.Error("after the mount removed d/f, only its removal is explained")
	}
	o.created("d/f", false)
	if o.echo(removed("d/f", false)) || !o.echo(created("d/f", false)) {
		t.Error("after the mount made d/f again, only its creation is explained")
	}

	// Once the echo of a change came, the rest of it follows closely; a
	// later report of the name is someone else's change.
	o.created("e", false)
	now = now.Add(echoHorizon / 2)
	if !o.echo(created("e", false)) {
		t.Error("the first report of a change made through the mount is not its echo")
	}
	now = now.Add(echoTail / 2)
	if !o.echo(namespace.Change{Path: "e", Kind: namespace.ChangeData}) {
		t.Error("the rest of an echo, a batch later, is not taken for it")
	}
	now = now.Add(echoTail)
	if o.echo(namespace.Change{Path: "e", Kind: namespace.ChangeData}) {
		t.Error("a report of the name long after the echo came is taken for it")
	}

	now = now.Add(echoHorizon)
	if o.echo(created("d", true)) || o.echo(created("d/f", false)) {
		t.Error("a change older than the horizon explains nothing")
	}

	var off ownChanges // no watcher: nothing is remembered
	off.created("x", false)
	if off.echo(created("x", false)) {
		t.Error("a mount without a watcher remembered its change")
	}
}
