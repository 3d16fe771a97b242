package fusefs

import (
	"sort"
	"testing"

	"github.com/hanwen/go-fuse/v2/posixtest"
)

// posixSkip lists the posixtest cases that cannot pass over SFTP, and why.
var posixSkip = map[string]string{
	"XAttr":               "SFTP has no extended attributes; setxattr answers ENOTSUP",
	"SetattrSymlink":      "SFTP setstat follows symlinks; a link's own times take a command on the server, which the in-process server cannot run",
	"FcntlFlockLocksFile": "SFTP has no locks; the kernel keeps POSIX locks per process, and the test expects a conflict within one process",
	"OpenSymlinkRace": "SFTP v3 open has no O_NOFOLLOW: a symlink swapped in between lookup and open is followed " +
		"on the server, within the remote user's rights (here the server is local, so the test calls it an attack)",
	"RenameOpenDir": "pkg/sftp's in-process server renames with Go's os.Rename, which refuses to replace a directory " +
		"(OpenSSH's posix-rename uses rename(2))",
}

// posixNoContain lists the cases that follow absolute symlinks, which
// contain_symlinks (tested on its own) denies.
var posixNoContain = map[string]bool{"SymlinkReadlink": true}

func TestPosix(t *testing.T) {
	names := make([]string, 0, len(posixtest.All))
	for n := range posixtest.All {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, name := range names {
		t.Run(name, func(t *testing.T) {
			if why, ok := posixSkip[name]; ok {
				t.Skip(why)
			}
			o := defaultOpts()
			o.ContainSymlinks = !posixNoContain[name]
			tm := mountWith(t, o, nil)
			posixtest.All[name](t, tm.mnt)
		})
	}
}
