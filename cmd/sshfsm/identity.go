package main

import (
	"context"
	"fmt"
	"log/slog"
	"strings"

	"sshfsm/internal/config"
	"sshfsm/internal/transport"
)

// mountIdentity names what a mount shows, for the caches it keeps on disk
// across mounts: the branches in order, each with its graft name,
// read-only flag, remote directory and hosts (user, address, port, ssh
// configuration), and the settings that change the attributes reported.
// Two mounts with the same identity show the same tree.
func mountIdentity(cfg *config.Config) string { return resolvedIdentity(cfg, nil) }

// resolvedIdentity is mountIdentity with, for each host, where resolve
// says it leads (transport.Destination): the configuration names hosts by
// aliases, and an alias that ssh_config now points at another machine
// must not find what the first one's files left in the caches.
func resolvedIdentity(cfg *config.Config, resolve func(config.Branch, config.Endpoint) string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "sshfsm mount v1\nssh_config %q\n", cfg.SSH.ConfigFile)
	for _, br := range cfg.Branches {
		fmt.Fprintf(&b, "branch %q ro=%t dir=%q\n", br.Name, br.ReadOnly, br.Dir)
		for _, e := range br.Hosts {
			fmt.Fprintf(&b, "  host %q user=%q port=%d ssh_config=%q ssh=%q\n",
				e.Host, e.User, cfg.PortOf(e), e.SSHConfig, strings.Join(e.SSHOptions, " "))
			if resolve != nil {
				if d := resolve(br, e); d != "" {
					fmt.Fprintf(&b, "    reaches %q\n", d)
				}
			}
		}
	}
	fmt.Fprintf(&b, "idmap %v uidfile=%q gidfile=%q\n", cfg.IDMap.Mode, cfg.IDMap.UIDFile, cfg.IDMap.GIDFile)
	if cfg.FUSE.UID != nil {
		fmt.Fprintf(&b, "uid %d\n", *cfg.FUSE.UID)
	}
	if cfg.FUSE.GID != nil {
		fmt.Fprintf(&b, "gid %d\n", *cfg.FUSE.GID)
	}
	if cfg.FUSE.Umask != nil {
		fmt.Fprintf(&b, "umask %o\n", *cfg.FUSE.Umask)
	}
	fmt.Fprintf(&b, "symlinks follow=%t transform=%t contain=%t\n", cfg.Symlinks.Follow, cfg.Symlinks.Transform, cfg.Symlinks.Contain)
	return b.String()
}

// sshDestinations resolves hosts as mounts reach them (ssh -G).
func sshDestinations(ctx context.Context, cfg *config.Config, log *slog.Logger) func(config.Branch, config.Endpoint) string {
	return func(b config.Branch, e config.Endpoint) string {
		return transport.Destination(ctx, transportOptions(cfg, b, e, log))
	}
}
