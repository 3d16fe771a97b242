package main

import (
	"log/slog"
	"path/filepath"

	"sshfsm/internal/cache"
	"sshfsm/internal/config"
	"sshfsm/internal/contentcache"
)

// cacheDir is the disk cache's directory: cache_dir= (made absolute: the
// daemon leaves the working directory), else cache.DefaultDir.
func cacheDir(cfg *config.Config) (string, error) {
	if cfg.Cache.Dir != "" {
		return filepath.Abs(cfg.Cache.Dir)
	}
	return cache.DefaultDir()
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
