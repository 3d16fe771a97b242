package transport

import (
	"bytes"
	"encoding/hex"
	"testing"
)

// Whatever a server prints for sha256sum, parseSHA256 returns a digest
// only when the first word is exactly 64 hex digits, and that digest.
func FuzzParseSHA256(f *testing.F) {
	f.Add([]byte("9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08  -\n"))
	f.Add([]byte(""))
	f.Add([]byte("zz86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08  -\n"))
	f.Add([]byte("\\9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08  -\n"))
	f.Fuzz(func(t *testing.T, out []byte) {
		sum, err := parseSHA256(out)
		if err != nil {
			return
		}
		first := bytes.Fields(out)[0]
		if !bytes.EqualFold(first, []byte(hex.EncodeToString(sum[:]))) {
			t.Fatalf("%q parsed as %x", out, sum)
		}
	})
}
