package main

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"testing"

	"sshfsm/internal/config"
)

// Mounts showing the same tree share an identity; any change to what is
// shown or how gives another.
func TestMountIdentity(t *testing.T) {
	parse := func(args ...string) *config.Config {
		t.Helper()
		cfg, err := config.Parse(append(args, "/mnt"))
		if err != nil {
			t.Fatal(err)
		}
		return cfg
	}
	base := mountIdentity(parse("h1:/a", "h2:/b"))
	if again := mountIdentity(parse("h1:/a", "h2:/b")); again != base {
		t.Fatal("the same command line gave two identities")
	}
	if mountIdentity(parse("-o", "reconnect,max_conns=2", "h1:/a", "h2:/b")) != base {
		t.Error("options that change nothing shown changed the identity")
	}
	for _, args := range [][]string{
		{"h2:/b", "h1:/a"},
		{"h1:/a", "h2:/c"},
		{"h1:/a", "u@h2:/b"},
		{"-p", "2222", "h1:/a", "h2:/b"},
		{"h1:/a", "h2:/b:ro"},
		{"X=h1:/a", "h2:/b"},
		{"h1,h3:/a", "h2:/b"},
		{"-F", "/other/config", "h1:/a", "h2:/b"},
		{"-o", "uid=5", "h1:/a", "h2:/b"},
		{"-o", "follow_symlinks", "h1:/a", "h2:/b"},
	} {
		if mountIdentity(parse(args...)) == base {
			t.Errorf("%q has the identity of h1:/a h2:/b", args)
		}
	}
}

// A host alias that ssh_config points at another machine gives another
// identity: content cached from the first machine is not the second's.
// The same configuration gives the same identity.
func TestMountIdentityFollowsWhereAnAliasLeads(t *testing.T) {
	sshConfig := filepath.Join(t.TempDir(), "ssh_config")
	identity := func(hostName string) string {
		t.Helper()
		if err := os.WriteFile(sshConfig, []byte("Host work\n\tHostName "+hostName+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		cfg, err := config.Parse([]string{"-F", sshConfig, "work:/a", "/mnt"})
		if err != nil {
			t.Fatal(err)
		}
		return resolvedIdentity(cfg, sshDestinations(context.Background(), cfg, slog.New(slog.DiscardHandler)))
	}
	first := identity("127.0.0.2")
	if again := identity("127.0.0.2"); again != first {
		t.Fatal("the same configuration gave two identities")
	}
	if identity("127.0.0.3") == first {
		t.Error("an alias pointed at another machine kept the identity")
	}
}
