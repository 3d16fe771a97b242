package testenv

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/pkg/sftp"
)

func TestSFTPDialer(t *testing.T) {
	dir := t.TempDir()
	dial := SFTPDialer(dir)
	r, w, err := dial(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	c, err := sftp.NewClientPipe(r, w)
	if err != nil {
		t.Fatal(err)
	}
	wd, err := c.Getwd()
	if err != nil || wd != dir {
		t.Fatalf("working directory %q (%v), want %q", wd, err, dir)
	}
	f, err := c.Create("a.txt")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write([]byte("hello")); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "a.txt")); err != nil || string(b) != "hello" {
		t.Fatalf("server wrote %q, %v", b, err)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	// The session is over: the server side no longer answers.
	if _, err := w.Write([]byte{0, 0, 0, 1, 1}); err == nil {
		t.Fatal("write after close succeeded")
	}
}

func TestSFTPDialerReadOnlyAndCancel(t *testing.T) {
	dir := t.TempDir()
	r, w, err := SFTPDialer(dir, sftp.ReadOnly())(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	c, err := sftp.NewClientPipe(r, w)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Create("x"); err == nil {
		t.Fatal("create on a read-only server succeeded")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, _, err := SFTPDialer(dir)(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("dial with a cancelled context: %v", err)
	}
}

func TestSFTPDialerServerEndsOnClientClose(t *testing.T) {
	r, w, err := SFTPDialer(t.TempDir())(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := io.ReadAll(r); err != nil && !errors.Is(err, io.ErrClosedPipe) {
		t.Fatalf("read after the client closed: %v", err)
	}
	r.Close()
}
