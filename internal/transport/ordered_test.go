package transport

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"sshfsm/internal/remote"
	"sshfsm/internal/testenv"
)

// writeAsync sends data at off past pkg/sftp without waiting, as the
// FUSE layer's writer does, and returns the channel of its outcome.
func writeAsync(f remote.File, data []byte, off int64) <-chan error {
	done := make(chan error, 1)
	f.(remote.AsyncWriter).WriteAtAsync(data, off, func() {}, func(err error) { done <- err })
	return done
}

// On OpenSSH's sftp-server, which handles a session's requests in order,
// a mode and mtime sent behind writes still in flight, without waiting for
// their answers, are applied after them: the file ends with every byte,
// the mode and the mtime set, not the mtime of its writes. A second
// change waits for nothing either, and so does a chown followed by a
// set-user-ID mode (two requests, in order).
func TestAttrsBehindWritesInOrder(t *testing.T) {
	th := testenv.StartHost(t, "127.0.0.2")
	h, err := Dial(context.Background(), sshOptions(th))
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	f, err := h.Remote().Open(bg, "f", os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	want := bytes.Repeat([]byte("0123456789abcdef"), 16<<10) // 256 KiB: several requests
	var writes []<-chan error
	const piece = 32 << 10
	for off := 0; off < len(want); off += piece {
		writes = append(writes, writeAsync(f, want[off:off+piece], int64(off)))
	}
	mtime := time.Date(2020, 2, 3, 4, 5, 6, 0, time.UTC)
	mode, uid, gid := uint32(0o4750), uint32(os.Getuid()), uint32(os.Getgid())
	attrs := make(chan error, 1)
	if !f.(remote.OrderedAttrSetter).SetAttrsBehind(remote.SetAttr{Mode: &mode, UID: &uid, GID: &gid, Atime: &mtime, Mtime: &mtime},
		func(err error, retry bool) {
			if retry {
				err = errRetry
			}
			attrs <- err
		}) {
		t.Fatal("an in-order server refused attributes behind the writes")
	}
	for _, w := range writes {
		if err := <-w; err != nil {
			t.Fatal(err)
		}
	}
	if err := <-attrs; err != nil {
		t.Fatal(err)
	}
	if err := f.Close(bg); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(th.Dir, "f")
	got, err := os.ReadFile(p)
	fi, serr := os.Stat(p)
	if err != nil || serr != nil || !bytes.Equal(got, want) {
		t.Fatalf("server has %d bytes (%v, %v), want %d", len(got), err, serr, len(want))
	}
	if fi.Mode() != 0o750|os.ModeSetuid || !fi.ModTime().Equal(mtime) {
		t.Fatalf("server has mode %v mtime %v; want %v %v", fi.Mode(), fi.ModTime(), os.FileMode(0o750)|os.ModeSetuid, mtime)
	}
}

// errRetry stands for a change lost with its connection.
var errRetry = errors.New("lost with its connection")

// A server not known to handle requests in order (pkg/sftp's handles
// writes on several workers) is sent nothing: the caller waits for the
// writes first.
func TestAttrsBehindWritesRefused(t *testing.T) {
	h, _, _ := dialTest(t, 1, nil)
	f, err := h.Remote().Open(bg, "f", os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close(bg)
	w := writeAsync(f, []byte("data"), 0)
	mode := uint32(0o644)
	before := h.Stats().Requests["FSETSTAT"]
	if f.(remote.OrderedAttrSetter).SetAttrsBehind(remote.SetAttr{Mode: &mode}, func(error, bool) {
		t.Error("a refused change reported an outcome")
	}) {
		t.Fatal("attributes sent behind writes to a server that may reorder them")
	}
	if err := <-w; err != nil {
		t.Fatal(err)
	}
	if n := h.Stats().Requests["FSETSTAT"] - before; n != 0 {
		t.Fatalf("a refused change sent %d FSETSTAT", n)
	}
}
