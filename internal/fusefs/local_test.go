package fusefs

import (
	"context"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"sshfsm/internal/remote"
)

// localRemote serves a local directory; it stands in for the transport
// until the in-process SFTP path is available.
type localRemote struct{ root string }

func (l localRemote) abs(p string) string { return filepath.Join(l.root, p) }

func attrOf(fi os.FileInfo) remote.Attr {
	st := fi.Sys().(*syscall.Stat_t)
	return remote.Attr{Mode: st.Mode, Size: uint64(st.Size), UID: st.Uid, GID: st.Gid,
		Atime: time.Unix(st.Atim.Unix()), Mtime: time.Unix(st.Mtim.Unix())}
}

func (l localRemote) Lstat(ctx context.Context, p string) (remote.Attr, error) {
	fi, err := os.Lstat(l.abs(p))
	if err != nil {
		return remote.Attr{}, err
	}
	return attrOf(fi), nil
}

func (l localRemote) Stat(ctx context.Context, p string) (remote.Attr, error) {
	fi, err := os.Stat(l.abs(p))
	if err != nil {
		return remote.Attr{}, err
	}
	return attrOf(fi), nil
}

func (l localRemote) ReadDir(ctx context.Context, p string) ([]remote.DirEntry, error) {
	ents, err := os.ReadDir(l.abs(p))
	if err != nil {
		return nil, err
	}
	var out []remote.DirEntry
	for _, e := range ents {
		fi, err := e.Info()
		if err != nil {
			continue
		}
		out = append(out, remote.DirEntry{Name: e.Name(), Attr: attrOf(fi)})
	}
	return out, nil
}

func (l localRemote) Readlink(ctx context.Context, p string) (string, error) {
	return os.Readlink(l.abs(p))
}

func (l localRemote) Open(ctx context.Context, p string, flags int, perm uint32) (remote.File, error) {
	f, err := os.OpenFile(l.abs(p), flags, os.FileMode(perm))
	if err != nil {
		return nil, err
	}
	return localFile{f}, nil
}

func (l localRemote) Mkdir(ctx context.Context, p string, perm uint32) error {
	return os.Mkdir(l.abs(p), os.FileMode(perm))
}
func (l localRemote) Remove(ctx context.Context, p string) error {
	return syscall.Unlink(l.abs(p))
}
func (l localRemote) Rmdir(ctx context.Context, p string) error {
	return syscall.Rmdir(l.abs(p))
}
func (l localRemote) Rename(ctx context.Context, o, n string, noReplace bool) error {
	if noReplace {
		if _, err := os.Lstat(l.abs(n)); err == nil {
			return syscall.EEXIST
		}
	}
	return syscall.Rename(l.abs(o), l.abs(n))
}
func (l localRemote) Symlink(ctx context.Context, target, p string) error {
	return os.Symlink(target, l.abs(p))
}
func (l localRemote) Link(ctx context.Context, o, n string) error {
	return os.Link(l.abs(o), l.abs(n))
}
func (l localRemote) SetAttr(ctx context.Context, p string, a remote.SetAttr) error {
	if a.Mode != nil {
		if err := os.Chmod(l.abs(p), os.FileMode(*a.Mode)); err != nil {
			return err
		}
	}
	if a.UID != nil {
		if err := os.Chown(l.abs(p), int(*a.UID), int(*a.GID)); err != nil {
			return err
		}
	}
	if a.Size != nil {
		if err := os.Truncate(l.abs(p), int64(*a.Size)); err != nil {
			return err
		}
	}
	if a.Mtime != nil {
		return os.Chtimes(l.abs(p), *a.Atime, *a.Mtime)
	}
	return nil
}
func (l localRemote) StatFS(ctx context.Context, p string) (remote.StatFS, error) {
	var s syscall.Statfs_t
	if err := syscall.Statfs(l.root, &s); err != nil {
		return remote.StatFS{}, err
	}
	return remote.StatFS{Bsize: uint64(s.Bsize), Frsize: uint64(s.Frsize), Blocks: s.Blocks,
		Bfree: s.Bfree, Bavail: s.Bavail, Files: s.Files, Ffree: s.Ffree, NameMax: 255}, nil
}
func (l localRemote) Close() error { return nil }

type localFile struct{ f *os.File }

func (f localFile) ReadAt(ctx context.Context, p []byte, off int64) (int, error) {
	return f.f.ReadAt(p, off)
}
func (f localFile) WriteAt(ctx context.Context, p []byte, off int64) (int, error) {
	return f.f.WriteAt(p, off)
}
func (f localFile) Stat(ctx context.Context) (remote.Attr, error) {
	fi, err := f.f.Stat()
	if err != nil {
		return remote.Attr{}, err
	}
	return attrOf(fi), nil
}
func (f localFile) Truncate(ctx context.Context, size int64) error { return f.f.Truncate(size) }
func (f localFile) Sync(ctx context.Context) error                 { return f.f.Sync() }
func (f localFile) Close(ctx context.Context) error                { return f.f.Close() }
