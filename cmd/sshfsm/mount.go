package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/hanwen/go-fuse/v2/fuse"

	"sshfsm/internal/cache"
	"sshfsm/internal/config"
	"sshfsm/internal/contentcache"
	"sshfsm/internal/control"
	"sshfsm/internal/fusefs"
	"sshfsm/internal/idmap"
	"sshfsm/internal/inflight"
	"sshfsm/internal/metrics"
	"sshfsm/internal/mountinfo"
	"sshfsm/internal/transport"
)

// mounted is a live mount: the hosts behind it and the FUSE server.
type mounted struct {
	mountpoint     string
	tree           *tree
	server         *fuse.Server
	log            *slog.Logger
	dirs           *cache.Dirs            // the listing cache, for its counters
	content        *contentcache.Cache    // the disk cache of contents; nil without
	status         *control.Server        // answers sshfsm status; nil without
	autoUnmount    bool                   // mounted with auto_unmount: unmount with fusermount3
	requests       *inflight.Table        // the FUSE requests being answered
	requestMetrics *fusefs.RequestMetrics // their durations and errors; nil without metrics=
	metrics        *metrics.Server        // serves metrics=; nil without
	// ended is closed when the kernel ends the FUSE connection, which
	// may be long before server.Wait returns (fusefs.Options.Ended).
	ended chan struct{}
	// dev is the mount's device (major:minor) in /proc/self/mountinfo,
	// "" if not found: what is mounted at the mountpoint later is this
	// mount only if it has this device.
	dev string
	// logSink is where the log goes once serving, for sshfsm status.
	logSink atomic.Pointer[logSink]
	// early is a stop signal that arrived as the mount became ready: serve
	// stops at once, as for any later signal.
	early os.Signal
}

// mount checks the mountpoint, connects, mounts and verifies that the mount
// answers. Its errors are *config.Error with the matching exit code.
func mount(ctx context.Context, cfg *config.Config, log *slog.Logger) (*mounted, error) {
	mp, err := checkMountpoint(cfg.Mountpoint)
	if err != nil {
		return nil, err
	}
	if err := checkFUSE(fuseDevice); err != nil {
		return nil, err
	}
	if err := checkAllowOther(cfg, os.Geteuid(), fuseConf); err != nil {
		return nil, err
	}
	warnPermissions(cfg, log)
	warnNoEffect(cfg, os.Stderr)
	if err := absolutize(cfg); err != nil {
		return nil, err
	}
	if err := secureCacheDir(cfg, log); err != nil {
		return nil, err
	}
	ids, err := fileIDMap(cfg.IDMap)
	if err != nil {
		return nil, err
	}
	if err := checkBranches(cfg); err != nil {
		return nil, err
	}
	ms, err := listenMetrics(cfg, os.Stderr)
	if err != nil {
		return nil, err
	}
	ready := false
	defer func() {
		if !ready && ms != nil {
			ms.Close()
		}
	}()
	eps, err := connect(ctx, cfg, log)
	if err != nil {
		return nil, err
	}
	t, err := buildTree(cfg, eps, log)
	if err != nil {
		closeEndpoints(eps)
		return nil, err
	}
	first := t.firstHost()
	if cfg.IDMap.Mode == config.IDMapUser && first != nil {
		ids = userIDMap(first)
	}
	fo := fsOptions(cfg, ids, log)
	fo.Changes = t.changes()
	if len(eps) == 1 {
		if first != nil { // nil with delay_connect, which has no transform_symlinks
			fo.MountPrefix = first.Root()
		}
		fo.MountPrefixAt = cfg.Branches[eps[0].branch].Name
		// One host numbers its files once: its inode numbers can be
		// shown (those of several hosts would collide, and which file
		// got a number would depend on the order of lookups).
		fo.ServerInodes = true
	}
	fo.RemoteUID, fo.RemoteGID, fo.RemoteIDsKnown = t.remoteUser()
	fo.Cache = cache.New(cfg.Cache.DirCacheTimeout, nil)
	id := resolvedIdentity(cfg, sshDestinations(ctx, cfg, log))
	persistListings(cfg, &fo, id, log)
	fo.Content, fo.ContentID = openContentCache(cfg, log), id
	fo.Requests = &inflight.Table{}
	if ms != nil {
		fo.Metrics = &fusefs.RequestMetrics{}
	}
	fo.Ended = make(chan struct{})
	srv, err := fusefs.Mount(mp, t.ns, fo, mountOptions(cfg))
	if err != nil {
		t.Close()
		closeContent(fo.Content, log)
		return nil, config.Errorf(config.ExitMount, "mount %s: %v", mp, err)
	}
	m := &mounted{mountpoint: mp, tree: t, server: srv, log: log, dirs: fo.Cache, content: fo.Content,
		autoUnmount: cfg.FUSE.AutoUnmount, requests: fo.Requests, requestMetrics: fo.Metrics, metrics: ms,
		ended: fo.Ended}
	if mt, ok := mountinfo.At(mp); ok {
		m.dev = mt.Dev
	}
	if err := verify(ctx, mp, cfg); err != nil {
		m.unmount()
		m.close()
		return nil, err
	}
	m.startStatus(cfg)
	m.startMetrics(cfg)
	ready = true
	return m, nil
}

// persistListings sets the coherence mode and, unless nodisk_cache, the
// snapshot file that keeps the listings of the tree of identity id across
// mounts.
func persistListings(cfg *config.Config, fo *fusefs.Options, id string, log *slog.Logger) {
	if m, err := cache.ParseMode(cfg.Cache.Mode); err == nil {
		fo.Mode = m
	}
	if !cfg.Cache.Disk || cfg.Cache.DirCacheTimeout <= 0 {
		return
	}
	dir, err := cacheDir(cfg)
	if err != nil {
		log.Warn("listings are not kept across mounts", "err", err)
		return
	}
	fo.MetaFile = cache.SnapshotPath(dir, id)
}

// checkBranches refuses settings that need one host: transform_symlinks
// rewrites links against one remote root. A lone read-only branch is a
// read-only mount.
func checkBranches(cfg *config.Config) error {
	if len(cfg.Branches) == 1 && cfg.Branches[0].Name == "" && cfg.Branches[0].ReadOnly {
		cfg.FUSE.ReadOnly = true
	}
	if cfg.Symlinks.Transform && (len(cfg.Branches) > 1 || len(cfg.Branches[0].Hosts) > 1) {
		return config.Errorf(config.ExitUsage, "transform_symlinks works with one host only; this mount has %d branches", len(cfg.Branches))
	}
	if cfg.SSH.DelayConnect {
		// Both need what the server says at mount, which delay_connect
		// does not ask.
		switch {
		case cfg.Symlinks.Transform:
			return config.Errorf(config.ExitUsage, "transform_symlinks needs the remote directory's path at mount; it does not go with delay_connect")
		case cfg.IDMap.Mode == config.IDMapUser:
			return config.Errorf(config.ExitUsage, "idmap=user needs the remote user's ids at mount; it does not go with delay_connect (idmap=file does)")
		}
	}
	return nil
}

// absolutize makes the paths that ssh and the metrics socket use later
// independent of the working directory, which a background sshfsm leaves.
func absolutize(cfg *config.Config) error {
	if cfg.Metrics.Network == "unix" {
		abs, err := filepath.Abs(cfg.Metrics.Address)
		if err != nil {
			return config.Errorf(config.ExitUsage, "metrics socket %s: %v", cfg.Metrics.Address, err)
		}
		cfg.Metrics.Address = abs
	}
	if cfg.SSH.ConfigFile == "" {
		return nil
	}
	abs, err := filepath.Abs(cfg.SSH.ConfigFile)
	if err != nil {
		return config.Errorf(config.ExitUsage, "ssh config file %s: %v", cfg.SSH.ConfigFile, err)
	}
	cfg.SSH.ConfigFile = abs
	return nil
}

// transportOptions reaches host e of branch b. The hosts of a replica set
// fail fast, so that the set turns to another one at once.
func transportOptions(cfg *config.Config, b config.Branch, e config.Endpoint, log *slog.Logger) transport.Options {
	return transport.Options{
		Host:        e.Host,
		User:        e.User,
		Port:        cfg.PortOf(e),
		Dir:         b.Dir,
		SSHCommand:  cfg.SSH.Command,
		SSHArgs:     cfg.SSHArgs(e),
		Password:    cfg.SSH.Password,
		SFTPServer:  cfg.SSH.SFTPServer,
		DirectPort:  cfg.SSH.DirectPort,
		Conns:       cfg.MaxConnsOf(e),
		Timeout:     cfg.SSH.Timeout,
		Reconnect:   cfg.SSH.Reconnect,
		NoCheckRoot: cfg.SSH.NoCheckRoot,
		Logger:      log,
		Dialer:      directDialer(e.Host, cfg.SSH.DirectPort),
		FailFast:    len(b.Hosts) > 1,
		OnDemand:    true,
	}
}

// directDialer connects with plain TCP to an sftp-server at host:port
// (directport=); nil when port is 0.
func directDialer(host string, port int) func(context.Context) (io.ReadCloser, io.WriteCloser, error) {
	if port == 0 {
		return nil
	}
	addr := net.JoinHostPort(host, strconv.Itoa(port))
	return func(ctx context.Context) (io.ReadCloser, io.WriteCloser, error) {
		var d net.Dialer
		conn, err := d.DialContext(ctx, "tcp", addr)
		if err != nil {
			return nil, nil, err
		}
		return conn, conn, nil
	}
}

func fsOptions(cfg *config.Config, ids fusefs.IDMapper, log *slog.Logger) fusefs.Options {
	return fusefs.Options{
		AttrTimeout:       cfg.Cache.AttrTimeout,
		EntryTimeout:      cfg.Cache.EntryTimeout,
		NegativeTimeout:   cfg.Cache.NegativeTimeout,
		DirCacheTimeout:   cfg.Cache.DirCacheTimeout,
		PrefetchDepth:     cfg.Cache.PrefetchDepth,
		KernelCache:       cfg.FUSE.KernelCache,
		DirectIO:          cfg.FUSE.DirectIO,
		Xattr:             cfg.FUSE.Xattr,
		DisableHardlink:   cfg.FUSE.DisableHardlink,
		RequestTimeout:    cfg.SSH.Timeout,
		OwnNewFiles:       cfg.FUSE.AllowOther,
		ReadOnly:          cfg.FUSE.ReadOnly,
		UID:               cfg.FUSE.UID,
		GID:               cfg.FUSE.GID,
		Umask:             cfg.FUSE.Umask,
		IDMap:             ids,
		FollowSymlinks:    cfg.Symlinks.Follow,
		TransformSymlinks: cfg.Symlinks.Transform,
		ContainSymlinks:   cfg.Symlinks.Contain,
		Logger:            log,
	}
}

func mountOptions(cfg *config.Config) fusefs.MountOptions {
	return fusefs.MountOptions{
		FsName:             fsName(cfg),
		Subtype:            cfg.FUSE.Subtype,
		AllowOther:         cfg.FUSE.AllowOther,
		AllowRoot:          cfg.FUSE.AllowRoot,
		DefaultPermissions: cfg.FUSE.DefaultPermissions,
		Debug:              cfg.Debug,
		MaxWrite:           cfg.FUSE.MaxWrite,
		Flags:              cfg.FUSE.MountFlags,
		AutoUnmount:        cfg.FUSE.AutoUnmount,
	}
}

// fileIDMap builds the idmap=file translation; nil for the other modes.
func fileIDMap(o config.IDMap) (fusefs.IDMapper, error) {
	if o.Mode != config.IDMapFile {
		return nil, nil
	}
	m, err := idmap.Files(idmap.FileOptions{UIDFile: o.UIDFile, GIDFile: o.GIDFile,
		Ignore: o.NoMapOK, Names: idmap.SystemNames()})
	if err != nil {
		return nil, config.Errorf(config.ExitUsage, "idmap: %v", err)
	}
	return m, nil
}

// userIDMap swaps the remote user's ids with ours (idmap=user).
func userIDMap(host *transport.Host) fusefs.IDMapper {
	uid, gid, ok := host.RemoteUser()
	if !ok {
		return nil
	}
	return idmap.User(uid, gid, uint32(os.Getuid()), uint32(os.Getgid()))
}

// dialError turns a failed connection into the message and exit code of its
// kind.
func dialError(b config.Branch, e config.Endpoint, err error) error {
	detail := err.Error()
	var de *transport.DialError
	if errors.As(err, &de) && de.Detail != "" {
		detail = de.Detail
	}
	dest, host := e.Dest()+":"+b.Dir, e.Host
	switch {
	case errors.Is(err, transport.ErrUnreachable):
		return config.Errorf(config.ExitConnect, "cannot connect to %s: %s", host, detail)
	case errors.Is(err, transport.ErrAuth) && detail == "host key verification failed":
		return config.Errorf(config.ExitAuth, "host key verification failed for %s; check and accept its key once with ssh %s", host, host)
	case errors.Is(err, transport.ErrAuth):
		return config.Errorf(config.ExitAuth, "authentication to %s failed: %s", host, detail)
	case errors.Is(err, transport.ErrNoDir):
		return config.Errorf(config.ExitRemoteDir, "remote directory %s does not exist", dest)
	case errors.Is(err, transport.ErrNotDir):
		return config.Errorf(config.ExitRemoteDir, "remote path %s is not a directory", dest)
	}
	return config.Errorf(config.ExitConnect, "ssh to %s failed: %s", host, detail)
}

// verify checks that the mount answers a stat of its root within the
// timeout. With delay_connect it asks nothing: the stat would connect.
// With no_check_root the root may be missing: any answer will do.
func verify(ctx context.Context, mp string, cfg *config.Config) error {
	if cfg.SSH.DelayConnect {
		return nil
	}
	timeout := cfg.SSH.Timeout
	done := make(chan error, 1)
	go func() {
		fi, err := os.Stat(mp)
		if err == nil && !fi.IsDir() {
			err = fmt.Errorf("root is not a directory")
		}
		done <- err
	}()
	select {
	case err := <-done:
		var errno syscall.Errno
		if err != nil && !(cfg.SSH.NoCheckRoot && errors.As(err, &errno) && errno != syscall.ETIMEDOUT) {
			return config.Errorf(config.ExitMount, "mount at %s does not answer: %v", mp, err)
		}
		return nil
	case <-time.After(timeout):
		return config.Errorf(config.ExitMount, "mount at %s did not answer within %v", mp, timeout)
	case <-ctx.Done():
		return config.Errorf(config.ExitMount, "mount at %s: %v", mp, ctx.Err())
	}
}

// mountUnlessSignalled mounts, abandoning the attempt (and undoing any
// mount) when one of sigs arrives first; later signals stay in sigs.
func mountUnlessSignalled(cfg *config.Config, log *slog.Logger, sigs <-chan os.Signal) (*mounted, error) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var sig os.Signal
	stop, watched := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(watched)
		select {
		case sig = <-sigs:
			cancel()
		case <-stop:
		}
	}()
	m, err := mount(ctx, cfg, log)
	close(stop)
	<-watched
	switch {
	case sig == nil:
		return m, err
	case err == nil:
		// Ready all the same (nothing noticed the cancellation): the
		// signal stops the mount like one arriving a moment later.
		m.early = sig
		return m, nil
	}
	return nil, config.Errorf(config.ExitMount, "interrupted by %v before the mount was ready", sig)
}

// warnNoEffect says on w which options given are accepted but ignored,
// each once, with the reason their help gives.
func warnNoEffect(cfg *config.Config, w io.Writer) {
	seen := map[string]bool{}
	for _, n := range cfg.NoEffect {
		if seen[n.Name] {
			continue
		}
		seen[n.Name] = true
		why := strings.TrimSuffix(strings.TrimPrefix(n.Why, "Ignored"), ".")
		fmt.Fprintf(w, "sshfsm: warning: option %s is ignored%s\n", printable(n.Name), why)
	}
}
