package fusefs

import (
	"hash/fnv"
	"testing"
)

// Inode numbers are FNV-1a of the path: every mount, and every version,
// must give a path the number it gave before (git compares them).
func TestHashInoIsFNV1a(t *testing.T) {
	for _, p := range []string{"a", "src/cmd/go", "non-utf8-\xff/\x00x", "sp ace/new\nline", "日本語"} {
		h := fnv.New64a()
		h.Write([]byte(p))
		if got, want := hashIno(p), fixIno(h.Sum64()); got != want {
			t.Errorf("hashIno(%q) = %d, want %d", p, got, want)
		}
	}
}
