package transport

import (
	"bytes"
	"context"
	"io"
	"os"
	"path"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/pkg/sftp"

	"sshfsm/internal/namespace"
)

// hostileServer is an SFTP server whose every directory lists the names
// it is given, and whose every path stats as a directory.
type hostileServer struct {
	mu    sync.Mutex // guards names
	names []string
}

func (s *hostileServer) set(names []string) {
	s.mu.Lock()
	s.names = names
	s.mu.Unlock()
}

func (s *hostileServer) Filelist(r *sftp.Request) (sftp.ListerAt, error) {
	if r.Method != "List" {
		return infoList{fakeInfo{name: path.Base(r.Filepath), mode: os.ModeDir | 0o755}}, nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	l := make(infoList, len(s.names))
	for i, n := range s.names {
		l[i] = fakeInfo{name: n, size: int64(i), mode: 0o644}
	}
	return l, nil
}

func (s *hostileServer) dial(ctx context.Context) (io.ReadCloser, io.WriteCloser, error) {
	cr, sw := io.Pipe()
	sr, cw := io.Pipe()
	srv := sftp.NewRequestServer(struct {
		io.Reader
		io.Writer
		io.Closer
	}{sr, sw, sw}, sftp.Handlers{FileList: s})
	go func() {
		srv.Serve()
		srv.Close()
		sr.Close()
	}()
	return cr, cw, nil
}

type infoList []os.FileInfo

func (l infoList) ListAt(ls []os.FileInfo, off int64) (int, error) {
	if off >= int64(len(l)) {
		return 0, io.EOF
	}
	n := copy(ls, l[off:])
	if n < len(ls) {
		return n, io.EOF
	}
	return n, nil
}

type fakeInfo struct {
	name string
	size int64
	mode os.FileMode
}

func (i fakeInfo) Name() string       { return i.name }
func (i fakeInfo) Size() int64        { return i.size }
func (i fakeInfo) Mode() os.FileMode  { return i.mode }
func (i fakeInfo) ModTime() time.Time { return time.Unix(1_700_000_000, 0) }
func (i fakeInfo) IsDir() bool        { return i.mode.IsDir() }
func (i fakeInfo) Sys() any           { return nil }

// FuzzReadDirNames lists a directory of a server that sends any names:
// the listing holds exactly the names that are one valid file name each
// once pkg/sftp has decoded them, in the server's order; never ".", "..",
// "/", a name with NUL or one longer than NAME_MAX.
func FuzzReadDirNames(f *testing.F) {
	srv := &hostileServer{}
	h, err := Dial(context.Background(), Options{Host: "hostile", Dir: "/", Conns: 1, Timeout: 5 * time.Second,
		Dialer: srv.dial})
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { h.Close() })
	r := h.Remote()

	f.Add([]byte("\x00plain\x00with space\x00new\nline\x00non-utf8-\xff"))
	f.Add([]byte("|a/b|..|.|/|c\x00d||" + string(bytes.Repeat([]byte{'n'}, 256))))
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) == 0 {
			return
		}
		var names, want []string
		for i, n := range bytes.Split(data[1:], data[:1]) {
			if i == 64 {
				break
			}
			names = append(names, string(n))
			// pkg/sftp's client leaves "." and ".." out and keeps the
			// last element of a name with '/'.
			if b := path.Base(string(n)); string(n) != "." && string(n) != ".." && namespace.ValidName(b) == nil {
				want = append(want, b)
			}
		}
		srv.set(names)
		ents, err := r.ReadDir(context.Background(), "d")
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, e := range ents {
			got = append(got, e.Name)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("listed %q, want %q", got, want)
		}
	})
}
