package main

import (
	"log/slog"
	"reflect"

	"sshfsm/internal/config"
	"sshfsm/internal/control"
	"sshfsm/internal/namespace"
	"sshfsm/internal/remote"
	"sshfsm/internal/transport"
	"sshfsm/internal/watch"
)

// Changes made on the servers are pushed to the mount (internal/watch):
// one watcher per branch, on the first of its hosts that is connected,
// watching the branch's directory there; the namespace says where that
// directory appears (namespace.Trees).

// watching is how an endpoint's branch is watched.
type watching struct {
	w      *watch.Watcher // nil: not watched
	target int            // the branch's target in w
	why    string         // when w is nil: why not
}

// newWatcher prepares the watcher of the tree's branches, whose remotes
// are remotes (by branch), and tells each endpoint how its branch is
// watched. It returns nil with watch=no.
func newWatcher(cfg *config.Config, t *tree, remotes []remote.Remote, log *slog.Logger) *watch.Watcher {
	if !cfg.Watch {
		for _, e := range t.endpoints {
			e.watch = watching{why: "watch=no"}
		}
		return nil
	}
	var targets []watch.Target
	index := make([]int, len(remotes))
	for i := range index {
		index[i] = -1
	}
	for _, tr := range namespace.Trees(t.ns) {
		i := branchOf(remotes, index, tr.Remote)
		if i < 0 {
			continue
		}
		index[i] = len(targets)
		var cs []watch.Candidate
		for _, e := range t.endpoints {
			if e.branch == i {
				cs = append(cs, e.candidate())
			}
		}
		targets = append(targets, watch.Target{Prefix: tr.Prefix, Candidates: cs})
	}
	w := watch.New(targets, watch.Options{Logger: log, Writes: cfg.WatchWrites, Network: cfg.WatchNetwork})
	for _, e := range t.endpoints {
		e.watch = watching{w: w, target: index[e.branch], why: "the branch is not in the mount's namespace"}
		if index[e.branch] < 0 {
			e.watch.w = nil
		}
	}
	return w
}

// branchOf returns the branch whose remote r is, among those not yet
// found (index -1); -1 if none.
func branchOf(remotes []remote.Remote, index []int, r remote.Remote) int {
	for i, x := range remotes {
		if index[i] < 0 && sameRemote(x, r) {
			return i
		}
	}
	return -1
}

// sameRemote compares two remotes by identity; a type that cannot be
// compared is never the same.
func sameRemote(a, b remote.Remote) bool {
	ta := reflect.TypeOf(a)
	return ta == reflect.TypeOf(b) && ta != nil && ta.Comparable() && a == b
}

// candidate is the endpoint as a host that can watch its branch.
func (e *endpoint) candidate() watch.Candidate {
	return watch.Candidate{
		Name: e.hostName(),
		Connected: func() (watch.Host, string) {
			h := e.currentHost()
			if h == nil || !h.Up() {
				return nil, ""
			}
			if root := transport.RootOf(e.tree); root != "" {
				return h, root // a branch sharing another's connection
			}
			return h, h.Root()
		},
		Changed: func() <-chan struct{} {
			if h := e.currentHost(); h != nil {
				return h.Changed()
			}
			return e.lazy.Changed()
		},
	}
}

// watchStatus says whether changes of the endpoint's branch are pushed
// through this host: the watcher's state when it runs here, standby when
// it runs on another host of the branch.
func (e *endpoint) watchStatus() (state, detail string) {
	if e.watch.w == nil {
		return string(watch.Off), e.watch.why
	}
	st := e.watch.w.Status()[e.watch.target]
	up := st.State == watch.Active || st.State == watch.Partial
	if st.Host != e.hostName() && up {
		return control.WatchStandby, "changes are watched through " + st.Host
	}
	return string(st.State), st.Detail
}

// changes is the channel of changes for the mount; nil without a watcher.
func (t *tree) changes() <-chan []namespace.Change {
	if t.watch == nil {
		return nil
	}
	return t.watch.Changes()
}

// startWatch starts the watcher, once the mount answers.
func (t *tree) startWatch() {
	if t.watch != nil {
		t.watch.Start()
	}
}
