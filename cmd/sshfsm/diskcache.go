package main

import (
	"errors"
	"log/slog"
	"path/filepath"

	"sshfsm/internal/cache"
	"sshfsm/internal/config"
	"sshfsm/internal/contentcache"
	"sshfsm/internal/privdir"
)

// cacheDir is the disk cache's directory: cache_dir= (made absolute: the
// daemon leaves the working directory), else cache.DefaultDir.
func cacheDir(cfg *config.Config) (string, error) {
	if cfg.Cache.Dir != "" {
		return filepath.Abs(cfg.Cache.Dir)
	}
	return cache.DefaultDir()
}

// secureCacheDir creates the disk cache's directory (0700) when it is
// missing and refuses one that another local user planted, may change, or
// may swap through a directory above it: the cache's contents are served
// as the servers' files, and its snapshots say what the servers hold.
// cfg.Cache.Dir becomes the directory with its links resolved, which every
// later use takes. A directory that cannot be made (no home, a read-only
// one) turns the disk cache off with a warning, as before there was a
// check: the mount works without it.
func secureCacheDir(cfg *config.Config, log *slog.Logger) error {
	if !cfg.Cache.Disk {
		return nil
	}
	dir, err := cacheDir(cfg)
	if err == nil {
		dir, err = privdir.Resolve(dir, privdir.NoOthersWrite)
	}
	switch {
	case errors.Is(err, privdir.ErrUnsafe):
		return config.Errorf(config.ExitUsage, "disk cache directory: %v (or mount with -o nodisk_cache)", err)
	case err != nil:
		log.Warn("disk cache off: file contents are read from the servers only", "err", err)
		cfg.Cache.Disk = false
		return nil
	}
	cfg.Cache.Dir = dir
	return nil
}

// openContentCache opens the disk cache of file contents, nil when it is
// off. A cache that cannot be opened does not stop the mount: files are
// then read from the servers only, as the warning says.
func openContentCache(cfg *config.Config, log *slog.Logger) *contentcache.Cache {
	if !cfg.Cache.Disk {
		return nil
	}
	dir, err := cacheDir(cfg)
	if err == nil {
		var c *contentcache.Cache
		if c, err = contentcache.Open(contentcache.Options{Dir: dir, MaxSize: cfg.Cache.MaxSize, Logger: log}); err == nil {
			return c
		}
	}
	log.Warn("disk cache off: file contents are read from the servers only", "err", err)
	return nil
}

func closeContent(c *contentcache.Cache, log *slog.Logger) {
	if c == nil {
		return
	}
	if err := c.Close(); err != nil {
		log.Warn("closing the disk cache", "err", err)
	}
}
