package transport

import (
	"bytes"
	"context"
	"encoding/hex"
	"fmt"
	"io"
)

// SHA256 computes the SHA-256 of the file at p on the host with
// sha256sum, in one remote command: the file's bytes never cross the
// link. The file is read from standard input, so that its name never
// appears (escaped) in the output. ErrNoExec without ssh; an *ExecError
// when sha256sum is missing or cannot read the file.
func (r hostRemote) SHA256(ctx context.Context, p string) (sum [32]byte, err error) {
	var out []byte
	err = r.h.Exec(ctx, "sha256sum < "+shellQuote(r.abs(p)), func(rd io.Reader) error {
		var err error
		out, err = io.ReadAll(io.LimitReader(rd, 4096))
		return err
	})
	if err != nil {
		return sum, fmt.Errorf("sha256sum %s:%s: %w", r.h.o.Host, r.abs(p), err)
	}
	return parseSHA256(out)
}

// parseSHA256 reads sha256sum's "HEX  -" line. On an error the sum is
// zero, never the digits decoded before the bad one.
func parseSHA256(out []byte) ([32]byte, error) {
	var sum [32]byte
	f := bytes.Fields(out)
	if len(f) == 0 || len(f[0]) != 2*len(sum) {
		return [32]byte{}, fmt.Errorf("sha256sum printed %q", out)
	}
	if _, err := hex.Decode(sum[:], f[0]); err != nil {
		return [32]byte{}, fmt.Errorf("sha256sum printed %q: %w", out, err)
	}
	return sum, nil
}

// HostName is the ssh destination serving the tree, as given.
func (r hostRemote) HostName() string { return r.h.o.Host }
