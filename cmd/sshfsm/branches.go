package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"

	"sshfsm/internal/config"
	"sshfsm/internal/namespace"
	"sshfsm/internal/redial"
	"sshfsm/internal/remote"
	"sshfsm/internal/replica"
	"sshfsm/internal/transport"
	"sshfsm/internal/watch"
)

// endpoint is one host of one branch and how it is connected.
type endpoint struct {
	branch int // index in cfg.Branches
	conf   config.Endpoint
	host   *transport.Host // set when connected at mount time (maybe shared)
	tree   remote.Remote   // the branch's directory on host
	lazy   *redial.Remote  // set when unreachable at mount time, or with delay_connect
	err    error           // the dial error at mount time
	watch  watching        // how changes of its branch are pushed (watch.go)
}

// remote is the endpoint's tree, whichever way it is connected; nil if
// it is not.
func (e *endpoint) remote() remote.Remote {
	switch {
	case e.tree != nil:
		return e.tree
	case e.lazy != nil:
		return e.lazy
	}
	return nil
}

// currentHost is the connected host, nil while unreachable.
func (e *endpoint) currentHost() *transport.Host {
	if e.host != nil {
		return e.host
	}
	if e.lazy != nil {
		return e.lazy.Host()
	}
	return nil
}

// hostName names the endpoint in messages: [user@]host.
func (e *endpoint) hostName() string { return e.conf.Dest() }

// tree is the whole mounted namespace with the hosts behind it.
type tree struct {
	ns        namespace.Namespace
	endpoints []*endpoint
	// sets are the replica sets, by branch index (nil for a branch of
	// one host), for their counters; nil without any.
	sets    []*replica.Set
	closers []func() error // everything to close, in order
	watch   *watch.Watcher // pushes changes made on the servers; nil with watch=no
}

// Close closes the namespace's remotes.
func (t *tree) Close() error {
	for _, c := range t.closers {
		c()
	}
	return nil
}

// connect dials every host of every branch. A single host dials as sshfs
// does (it may prompt). With several, all are dialled at once without
// prompts; hosts that then want a password or passphrase are dialled
// again one after the other, free to prompt. Branches on the same host
// reached the same way share one connection, so it asks at most once. A
// host that cannot be reached is retried in the background unless
// require_all says otherwise; any other failure (authentication, missing
// directory) ends the mount. With delay_connect nothing is dialled here
// (see delayed).
func connect(ctx context.Context, cfg *config.Config, log *slog.Logger) ([]*endpoint, error) {
	var eps []*endpoint
	for i, b := range cfg.Branches {
		for _, h := range b.Hosts {
			eps = append(eps, &endpoint{branch: i, conf: h})
		}
	}
	if cfg.SSH.DelayConnect {
		delayed(cfg, eps, log)
		return eps, nil
	}
	if len(eps) == 1 {
		e := eps[0]
		e.host, e.err = transport.Dial(ctx, transportOptions(cfg, cfg.Branches[0], e.conf, log))
		if e.err != nil {
			return nil, dialError(cfg.Branches[0], e.conf, e.err)
		}
		e.tree = e.host.Remote()
		return eps, nil
	}
	groups := map[string][]*endpoint{} // by how the host is reached
	var firsts []*endpoint
	for _, e := range eps {
		k := connKey(transportOptions(cfg, cfg.Branches[e.branch], e.conf, nil))
		if groups[k] == nil {
			firsts = append(firsts, e)
		}
		groups[k] = append(groups[k], e)
	}
	var wg sync.WaitGroup
	for _, e := range firsts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			o := transportOptions(cfg, cfg.Branches[e.branch], e.conf, log)
			o.NoPrompt = true
			e.host, e.err = transport.Dial(ctx, o)
		}()
	}
	wg.Wait()
	for _, e := range firsts {
		// Wants a password or passphrase: now it may ask, one host at a time.
		if errors.Is(e.err, transport.ErrAuth) && ctx.Err() == nil && !hostKeyFailure(e.err) {
			e.host, e.err = transport.Dial(ctx, transportOptions(cfg, cfg.Branches[e.branch], e.conf, log))
		}
	}
	for _, first := range firsts {
		shareHost(ctx, cfg, first, groups[connKey(transportOptions(cfg, cfg.Branches[first.branch], first.conf, nil))])
	}
	if err := settle(ctx, cfg, eps, log); err != nil {
		closeEndpoints(eps)
		return nil, err
	}
	return eps, nil
}

// connKey tells apart the ways of reaching a host: endpoints with the same
// key can share one connection.
func connKey(o transport.Options) string {
	return fmt.Sprintf("%q", []any{o.Host, o.User, o.Port, o.SSHCommand, o.SSHArgs,
		o.SFTPServer, o.DirectPort, o.Conns, o.FailFast})
}

// shareHost gives the endpoints of one group the outcome of the first's
// dial: the connected host, rooted at each one's directory, or the error.
func shareHost(ctx context.Context, cfg *config.Config, first *endpoint, group []*endpoint) {
	if first.err == nil {
		first.tree = first.host.Remote()
	}
	for _, e := range group[1:] {
		if first.err != nil {
			e.err = first.err
			continue
		}
		e.host = first.host
		e.tree, e.err = first.host.RemoteAt(ctx, cfg.Branches[e.branch].Dir)
	}
}

// settle decides what the dial results mean for the mount: fatal errors
// first, then unreachable hosts (background redial, or fatal with
// require_all, or when none at all answered).
func settle(ctx context.Context, cfg *config.Config, eps []*endpoint, log *slog.Logger) error {
	reached := 0
	for _, e := range eps {
		switch {
		case e.err == nil:
			reached++
		case ctx.Err() != nil:
			return config.Errorf(config.ExitConnect, "interrupted while connecting: %v", ctx.Err())
		case !errors.Is(e.err, transport.ErrUnreachable):
			return dialError(cfg.Branches[e.branch], e.conf, e.err)
		}
	}
	for _, e := range eps {
		if e.err == nil {
			continue
		}
		if cfg.RequireAll || reached == 0 {
			return dialError(cfg.Branches[e.branch], e.conf, e.err)
		}
	}
	for _, e := range eps {
		if e.err == nil {
			continue
		}
		b := cfg.Branches[e.branch]
		fmt.Fprintf(os.Stderr, "sshfsm: warning: %s is unreachable (%s); mounting without it and retrying in the background\n",
			printable(e.hostName()), printable(detailOf(e.err)))
		log.Info("host unreachable at mount; retrying in the background", "host", e.hostName(), "branch", b.Spec, "err", e.err)
		o := transportOptions(cfg, b, e.conf, log)
		o.NoPrompt = true
		e.lazy = redial.New(e.hostName(), func(ctx context.Context) (*transport.Host, error) {
			return transport.Dial(ctx, o)
		}, e.err, log)
	}
	return nil
}

// delayed makes every endpoint connect at its first use (delay_connect),
// each with its own connection. By then the mount has left the terminal,
// so ssh cannot prompt: it runs in BatchMode.
func delayed(cfg *config.Config, eps []*endpoint, log *slog.Logger) {
	for _, e := range eps {
		o := transportOptions(cfg, cfg.Branches[e.branch], e.conf, log)
		o.NoPrompt = true
		e.lazy = redial.OnFirstUse(e.hostName(), func(ctx context.Context) (*transport.Host, error) {
			return transport.Dial(ctx, o)
		}, cfg.SSH.Timeout, log)
	}
}

// hostKeyFailure reports a dial refused for the host's key, which a prompt
// cannot fix.
func hostKeyFailure(err error) bool { return detailOf(err) == "host key verification failed" }

// detailOf is ssh's own words about a failed dial.
func detailOf(err error) string {
	if err == nil {
		return ""
	}
	var de *transport.DialError
	if errors.As(err, &de) && de.Detail != "" {
		return de.Detail
	}
	return err.Error()
}

// buildTree puts the connected endpoints together: replica sets for
// branches with several hosts, a union of the union branches, grafts.
// One branch of one host is served directly.
func buildTree(cfg *config.Config, eps []*endpoint, log *slog.Logger) (*tree, error) {
	t := &tree{endpoints: eps}
	perBranch := make([][]*endpoint, len(cfg.Branches))
	for _, e := range eps {
		perBranch[e.branch] = append(perBranch[e.branch], e)
	}
	remotes := make([]remote.Remote, len(cfg.Branches))
	for i, list := range perBranch {
		if len(list) == 1 {
			remotes[i] = list[0].remote()
			t.closers = append(t.closers, remotes[i].Close)
			continue
		}
		var members []replica.Member
		for _, e := range list {
			members = append(members, replica.Member{Name: e.hostName(), Remote: e.remote()})
			t.closers = append(t.closers, e.remote().Close)
		}
		set, err := replica.New(members, replica.Options{Logger: log})
		if err != nil {
			t.Close()
			return nil, config.Errorf(config.ExitUsage, "branch %s: %v", cfg.Branches[i].Spec, err)
		}
		t.closers = append([]func() error{set.Close}, t.closers...)
		remotes[i] = set
		if t.sets == nil {
			t.sets = make([]*replica.Set, len(cfg.Branches))
		}
		t.sets[i] = set
	}
	ns, err := namespaceOf(cfg, remotes, log)
	if err != nil {
		t.Close()
		return nil, err
	}
	t.ns = ns
	if t.watch = newWatcher(cfg, t, remotes, log); t.watch != nil {
		t.closers = append([]func() error{t.watch.Close}, t.closers...)
	}
	return t, nil
}

// namespaceOf arranges the branches' remotes into the mount's namespace.
func namespaceOf(cfg *config.Config, remotes []remote.Remote, log *slog.Logger) (namespace.Namespace, error) {
	var union []namespace.Branch
	var grafts []namespace.Graft
	for i, b := range cfg.Branches {
		if b.Name == "" {
			union = append(union, namespace.Branch{Name: b.Dest(), Remote: remotes[i], ReadOnly: b.ReadOnly})
		}
	}
	if len(union) == 1 && len(cfg.Branches) == 1 && !union[0].ReadOnly {
		return namespace.Single(remotes[0]), nil
	}
	var base namespace.Namespace
	if len(union) > 0 {
		policy, err := namespace.ParsePolicy(cfg.Union.Create)
		if err != nil {
			return nil, config.Errorf(config.ExitUsage, "create=%s: %v", cfg.Union.Create, err)
		}
		if base, err = namespace.NewUnion(union, namespace.UnionOptions{Create: policy, Logger: log}); err != nil {
			return nil, config.Errorf(config.ExitUsage, "%v", err)
		}
	}
	for i, b := range cfg.Branches {
		if b.Name == "" {
			continue
		}
		// The remote itself, not a wrapper: the graft asks its Health.
		var ns namespace.Namespace = remotes[i]
		if b.ReadOnly {
			u, err := namespace.NewUnion([]namespace.Branch{{Name: b.Dest(), Remote: remotes[i], ReadOnly: true}}, namespace.UnionOptions{Logger: log})
			if err != nil {
				return nil, config.Errorf(config.ExitUsage, "%v", err)
			}
			ns = u
		}
		grafts = append(grafts, namespace.Graft{Name: b.Name, NS: ns})
	}
	if len(grafts) == 0 {
		return base, nil
	}
	g, err := namespace.NewGraft(base, grafts)
	if err != nil {
		return nil, config.Errorf(config.ExitUsage, "%v", err)
	}
	return g, nil
}

// fsName is the mount's source as mount(8) shows it: the branches as given,
// joined by '+' (a blank would split df's columns).
func fsName(cfg *config.Config) string {
	if cfg.FUSE.FsName != "" {
		return cfg.FUSE.FsName
	}
	var specs []string
	for _, b := range cfg.Branches {
		specs = append(specs, b.Dest())
	}
	return strings.Join(specs, "+")
}

// closeEndpoints closes what connect opened, when no tree was built.
func closeEndpoints(eps []*endpoint) {
	for _, e := range eps {
		if e.host != nil {
			e.host.Close() // once per host; later calls do nothing
		}
		if e.lazy != nil {
			e.lazy.Close()
		}
	}
}

// leaveTerminal sends what the hosts connected at mount time hear from ssh
// from now on to the log (transport.Host.LeaveTerminal).
func (t *tree) leaveTerminal() {
	for _, e := range t.endpoints {
		if e.host != nil {
			e.host.LeaveTerminal() // once per host; later calls do nothing
		}
	}
}

// firstHost is the first host connected at mount time.
func (t *tree) firstHost() *transport.Host {
	for _, e := range t.endpoints {
		if e.host != nil {
			return e.host
		}
	}
	return nil
}

// remoteUser is the remote user's ids when every host agrees on them (read
// only opens are deferred to the first read when the remote user may read
// the file; with hosts not yet reached, that cannot be known).
func (t *tree) remoteUser() (uid, gid uint32, ok bool) {
	for i, e := range t.endpoints {
		if e.host == nil {
			return 0, 0, false
		}
		u, g, known := e.host.RemoteUser()
		if !known || (i > 0 && (u != uid || g != gid)) {
			return 0, 0, false
		}
		uid, gid, ok = u, g, true
	}
	return uid, gid, ok
}
