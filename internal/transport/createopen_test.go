package transport

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"

	"sshfsm/internal/remote"
	"sshfsm/internal/testenv"
)

// A file created exclusively costs one OPEN, carrying its permissions,
// and one LSTAT sent behind it without waiting; an FSETSTAT follows only
// when the server's umask took bits of them away. Either way the file
// has the permissions asked for, and the open knows its attributes.
func TestCreateOneRoundTrip(t *testing.T) {
	old := syscall.Umask(0o022) // the in-process server's umask
	defer syscall.Umask(old)
	h, _, dir := dialTest(t, 1, nil)
	for _, c := range []struct {
		perm  uint32
		chmod uint64 // FSETSTAT sent
	}{{0o640, 0}, {0o600, 0}, {0o755, 0}, {0o666, 1},
		{0o4755, 1}, // pkg/sftp's server creates files without the set-user-ID bit
	} {
		name := "f" + strconv.FormatUint(uint64(c.perm), 8)
		before := h.Stats().Requests
		f, err := h.Remote().Open(bg, name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, c.perm)
		if err != nil {
			t.Fatal(err)
		}
		after := h.Stats().Requests
		a, ok := f.(remote.CreatedFile).CreatedAttr()
		if err := f.Close(bg); err != nil {
			t.Fatal(err)
		}
		sent := func(typ string) uint64 { return after[typ] - before[typ] }
		if sent("OPEN") != 1 || sent("LSTAT") != 1 || sent("FSETSTAT") != c.chmod || sent("FSTAT") != 0 {
			t.Errorf("%s: OPEN %d, LSTAT %d, FSETSTAT %d, FSTAT %d; want 1, 1, %d, 0", name,
				sent("OPEN"), sent("LSTAT"), sent("FSETSTAT"), sent("FSTAT"), c.chmod)
		}
		fi, err := os.Stat(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		st := fi.Sys().(*syscall.Stat_t)
		if st.Mode&07777 != c.perm || !ok || a.Mode != st.Mode || a.Size != 0 {
			t.Errorf("%s: server has mode %o, open knows %+v (%v)", name, st.Mode, a, ok)
		}
	}

	// A create of a name that exists fails, and leaves the file alone.
	p := filepath.Join(dir, "there")
	if err := os.WriteFile(p, []byte("old"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := h.Remote().Open(bg, "there", os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644); !errors.Is(err, fs.ErrExist) {
		t.Fatalf("exclusive create of an existing file: %v", err)
	}
	if fi, _ := os.Stat(p); fi.Mode().Perm() != 0o600 || fi.Size() != 3 {
		t.Fatalf("existing file changed: %v %d", fi.Mode(), fi.Size())
	}
}

// A directory is made in one round trip too: MKDIR carrying the
// permissions, an LSTAT behind it; a SETSTAT follows only when the
// server did not give the directory the permissions asked for (pkg/sftp's
// server ignores them and makes 0755 less its umask; OpenSSH's applies
// them).
func TestMkdirOneRoundTrip(t *testing.T) {
	old := syscall.Umask(0o022)
	defer syscall.Umask(old)
	h, _, dir := dialTest(t, 1, nil)
	th := testenv.StartHost(t, "127.0.0.2")
	hs, err := Dial(bg, sshOptions(th))
	if err != nil {
		t.Fatal(err)
	}
	defer hs.Close()
	for _, c := range []struct {
		h       *Host
		dir     string
		perm    uint32
		setstat uint64
	}{{h, dir, 0o755, 0}, {h, dir, 0o700, 1}, {hs, th.Dir, 0o700, 0},
		{hs, th.Dir, 0o2750, 1}, // Linux's mkdir(2) leaves the set-group-ID bit to the parent
	} {
		name := "d" + strconv.FormatUint(uint64(c.perm), 8)
		before := c.h.Stats().Requests
		a, err := c.h.Remote().(remote.DirMaker).MkdirAttr(bg, name, c.perm)
		if err != nil {
			t.Fatal(err)
		}
		after := c.h.Stats().Requests
		sent := func(typ string) uint64 { return after[typ] - before[typ] }
		if sent("MKDIR") != 1 || sent("LSTAT") != 1 || sent("SETSTAT") != c.setstat {
			t.Errorf("%s on %s: MKDIR %d, LSTAT %d, SETSTAT %d; want 1, 1, %d", name, c.h.o.Host,
				sent("MKDIR"), sent("LSTAT"), sent("SETSTAT"), c.setstat)
		}
		fi, err := os.Stat(filepath.Join(c.dir, name))
		if err != nil {
			t.Fatal(err)
		}
		st := fi.Sys().(*syscall.Stat_t)
		if st.Mode&07777 != c.perm || a.Mode != st.Mode {
			t.Errorf("%s on %s: server has mode %o, mkdir says %o", name, c.h.o.Host, st.Mode, a.Mode)
		}
	}
	if _, err := h.Remote().(remote.DirMaker).MkdirAttr(bg, "d755", 0o700); !errors.Is(err, fs.ErrExist) {
		t.Fatalf("mkdir of an existing name: %v", err)
	}
	if fi, _ := os.Stat(filepath.Join(dir, "d755")); fi.Mode().Perm() != 0o755 {
		t.Fatalf("existing directory changed: %v", fi.Mode())
	}
}
