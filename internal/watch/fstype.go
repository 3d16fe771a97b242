package watch

import (
	"bufio"
	"strconv"
	"strings"
)

// A tree on a network or cluster file system of the server is not watched
// unless asked (Options.Network). inotify there reports only what that
// server itself changes, never what other clients of the file system do
// (the compute nodes writing into a Lustre project, the desktop editing an
// NFS home), while inotifywait -r walks every directory of the tree to
// watch it: on a parallel file system, a metadata load on servers shared
// by everyone, at every mount, for the changes of one machine.

// networkFS names, by their statfs(2) magic numbers, the file systems
// whose trees are not watched by default. FUSE is among them: on servers
// it is mostly network storage (sshfs, s3fs, rclone, GlusterFS).
var networkFS = map[uint64]string{
	0x6969:     "NFS",
	0x517b:     "SMB",
	0xff534d42: "CIFS",
	0xfe534d42: "SMB2",
	0x0bd00bd0: "Lustre",
	0x47504653: "GPFS",
	0x00c36400: "CephFS",
	0x19830326: "BeeGFS",
	0xaad7aaea: "PanFS",
	0x20030528: "OrangeFS",
	0xbeefdead: "StorNext",
	0x01161970: "GFS2",
	0x7461636f: "OCFS2",
	0x5346414f: "AFS",
	0x6b414653: "AFS",
	0x73757245: "Coda",
	0x01021997: "9P",
	0x564c:     "NCP",
	0x65735546: "FUSE",
	0x786f4256: "VirtualBox shared folder",
	0xbacbacbc: "VMware shared folder",
}

// fsTag starts the probe's line that gives the tree's file system.
const fsTag = "sshfsm-fs "

// fsCommand prints the file system type of dir as fsTag and the statfs
// magic in hex (GNU and BusyBox stat); it prints nothing where stat cannot
// tell, and never fails.
func fsCommand(dir string) string {
	return "{ stat -f -c '" + fsTag + "%t' " + quote(dir) + " 2>/dev/null; true; }"
}

// networkFSOf returns the name of the network file system the probe's
// output reports, "" for any other or none.
func networkFSOf(out string) string {
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		hex, ok := strings.CutPrefix(strings.TrimSpace(sc.Text()), fsTag)
		if !ok {
			continue
		}
		magic, err := strconv.ParseUint(strings.TrimPrefix(hex, "0x"), 16, 64)
		if err != nil {
			return ""
		}
		return networkFS[magic]
	}
	return ""
}
