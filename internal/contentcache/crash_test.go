package contentcache

const crashChildEnv = "CONTENTCACHE_CRASH_DIR"

func crashChild() int { return 0 }
