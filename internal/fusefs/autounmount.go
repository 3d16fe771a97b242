package fusefs

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"

	"github.com/hanwen/go-fuse/v2/fuse"
)

// autoUnmount mounts through fusermount3 with auto_unmount, as libfuse
// does: fusermount3 mounts, hands over the /dev/fuse descriptor and stays
// behind, watching its socket; when the daemon's end closes, however the
// daemon ended (SIGKILL, the OOM killer), it unmounts, instead of leaving
// "Transport endpoint is not connected". go-fuse waits for fusermount3 to
// exit, which with auto_unmount it does only then, so the mount is made
// here and go-fuse serves the descriptor (its /dev/fd/N mountpoint).
//
// It returns that mountpoint; the socket stays open, close-on-exec (no ssh
// may keep it), until the process exits.
func autoUnmount(mountpoint string, mo *fuse.MountOptions) (string, error) {
	bin, err := exec.LookPath("fusermount3")
	if err != nil {
		return "", fmt.Errorf("auto_unmount needs fusermount3: %w", err)
	}
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return "", err
	}
	local, remote := os.NewFile(uintptr(fds[0]), "fusermount3 socket"), os.NewFile(uintptr(fds[1]), "fusermount3 socket")
	var stderr lockedBuffer
	cmd := exec.Command(bin, "-o", strings.Join(fusermountOptions(mo), ","), "--", mountpoint)
	cmd.Env = []string{"_FUSE_COMMFD=3"}
	cmd.ExtraFiles = []*os.File{remote}
	cmd.Stderr = &stderr
	err = cmd.Start()
	remote.Close()
	if err != nil {
		local.Close()
		return "", err
	}
	fd, err := receiveFD(local)
	if err != nil {
		local.Close()
		werr := cmd.Wait()
		msg := strings.TrimSpace(stderr.String())
		if msg == "" {
			msg = fmt.Sprint(werr)
		}
		return "", fmt.Errorf("fusermount3: %s", msg)
	}
	go cmd.Wait() // it exits once this process has ended and it has unmounted
	syscall.CloseOnExec(fd)
	keep = append(keep, local)
	return fmt.Sprintf("/dev/fd/%d", fd), nil
}

// keep holds the sockets to fusermount3 for the life of the process.
var keep []*os.File

// fusermountOptions are the -o of fusermount3 for mo, as go-fuse writes
// them, with auto_unmount.
func fusermountOptions(mo *fuse.MountOptions) []string {
	esc := func(s string) string { return strings.NewReplacer(`\`, `\\`, `,`, `\,`).Replace(s) }
	var r []string
	for _, o := range mo.Options {
		r = append(r, esc(o))
	}
	if mo.AllowOther {
		r = append(r, "allow_other")
	}
	if mo.FsName != "" {
		r = append(r, "fsname="+esc(mo.FsName))
	}
	if mo.Name != "" {
		r = append(r, "subtype="+esc(mo.Name))
	}
	return append(r, fmt.Sprintf("max_read=%d", mo.MaxWrite), "auto_unmount")
}

// receiveFD reads the descriptor fusermount3 sends over sock.
func receiveFD(sock *os.File) (int, error) {
	buf, oob := make([]byte, 4), make([]byte, syscall.CmsgSpace(4))
	_, oobn, _, _, err := syscall.Recvmsg(int(sock.Fd()), buf, oob, 0)
	if err != nil {
		return -1, err
	}
	msgs, err := syscall.ParseSocketControlMessage(oob[:oobn])
	if err != nil || len(msgs) != 1 {
		return -1, fmt.Errorf("no descriptor received (%v)", err)
	}
	fds, err := syscall.ParseUnixRights(&msgs[0])
	if err != nil || len(fds) != 1 {
		return -1, fmt.Errorf("no descriptor received (%v)", err)
	}
	return fds[0], nil
}

// lockedBuffer collects fusermount3's messages, written by exec's copier.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.buf.Len() > 4096 {
		return len(p), nil
	}
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// Unmount unmounts the mount at mountpoint that server serves; a mount
// made with AutoUnmount is served through a descriptor, which go-fuse
// cannot unmount itself.
func Unmount(server *fuse.Server, mountpoint string, auto bool) error {
	if !auto {
		return server.Unmount()
	}
	out, err := exec.Command("fusermount3", "-u", "--", mountpoint).CombinedOutput()
	if err != nil {
		return fmt.Errorf("fusermount3 -u: %v: %s", err, bytes.TrimSpace(out))
	}
	return nil
}
