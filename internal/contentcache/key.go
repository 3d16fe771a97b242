package contentcache

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"math/bits"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// Key names one version of one remote file.
type Key struct {
	Host string // stable identity of the host (the caller passes e.g. "user@host:port")
	// Branch names, when the host's paths may be served by several
	// branches (a union), the one that served this file: its content is
	// another file's than a same-named one of another branch.
	Branch string
	Path   string    // absolute remote path
	Size   int64     //
	Mtime  time.Time // as the server reports it (SFTP: seconds)
}

// owner is whose content the Key's is: its host and branch. Stored
// content is shared only among files of the same owner.
func (k Key) owner() string { return k.Host + "\x00" + k.Branch }

// Range is a byte range of a file.
type Range struct{ Off, Len int64 }

// hostPathID names every version of host:path: the first half of an
// entry's directory name, so that Forget finds them all by prefix. It is a
// hash because paths may hold any byte, and names must not leak into the
// layout.
func hostPathID(host, path string) string {
	h := sha256.New()
	h.Write([]byte("sshfsm content v1\x00"))
	var n [8]byte
	for _, s := range [2]string{host, path} {
		binary.LittleEndian.PutUint64(n[:], uint64(len(s)))
		h.Write(n[:])
		h.Write([]byte(s))
	}
	return hex.EncodeToString(h.Sum(nil)[:16])
}

// entryID names one version (size, mtime, branch) of host:path cut in blocks of
// bs: "<hostPathID>-<16 hex digits>". Block size is part of the name
// because the records describe blocks.
func entryID(k Key, bs int64) string {
	hp := hostPathID(k.Host, k.Path)
	b := make([]byte, 0, len(hp)+36+len(k.Branch))
	b = append(b, hp...)
	b = binary.LittleEndian.AppendUint64(b, uint64(k.Size))
	b = binary.LittleEndian.AppendUint64(b, uint64(k.Mtime.Unix()))
	b = binary.LittleEndian.AppendUint32(b, uint32(k.Mtime.Nanosecond()))
	b = binary.LittleEndian.AppendUint64(b, uint64(bs))
	if k.Branch != "" {
		b = binary.LittleEndian.AppendUint64(b, uint64(len(k.Branch)))
		b = append(b, k.Branch...)
	}
	v := sha256.Sum256(b)
	return hp + "-" + hex.EncodeToString(v[:8])
}

// entryDir is where entry id lives: content/e/<2 hex>/<hostPathID>/<16
// hex>. Every version of a path shares one directory, which Forget removes
// with one rename.
func (c *Cache) entryDir(id string) string {
	hp, ver, _ := strings.Cut(id, "-")
	return filepath.Join(c.pathDir(hp), ver)
}

func (c *Cache) pathDir(hp string) string {
	return filepath.Join(c.root, entriesDir, hp[:2], hp)
}

// objectID names the stored copy of the content whose SHA-256 is sum
// within one host (a Key's Host): content is shared only between files of
// the same host. A server that reports another host's digest for a file
// of its own would otherwise be served that host's content as its file's,
// and learn, from the READs it does not get, what this machine stores.
func objectID(host string, sum [32]byte) string {
	h := sha256.New()
	h.Write([]byte("sshfsm object v1\x00"))
	var n [8]byte
	binary.LittleEndian.PutUint64(n[:], uint64(len(host)))
	h.Write(n[:])
	h.Write([]byte(host))
	h.Write(sum[:])
	return hex.EncodeToString(h.Sum(nil))
}

// objectDir is the shared copy, among host's files, of the content whose
// SHA-256 is sum, cut in blocks of the cache's size:
// content/o/<2 hex>/<64 hex>-<log2 bs>-<owner tag>. The owner tag lets a
// scan count the sizes stored per owner (MayHold).
func (c *Cache) objectDir(host string, sum [32]byte) string {
	h := objectID(host, sum)
	name := h + "-" + strconv.Itoa(bits.TrailingZeros64(uint64(c.bs))) + "-" + ownerTag(host)
	return filepath.Join(c.root, objectsDir, h[:2], name)
}

// ownerTag names an owner (a Key's host and branch) in the names of its
// stored copies, without showing it.
func ownerTag(owner string) string {
	h := sha256.New()
	h.Write([]byte("sshfsm owner v1\x00"))
	h.Write([]byte(owner))
	return hex.EncodeToString(h.Sum(nil)[:8])
}

// tagOfObject is the owner tag in the name of a stored copy's directory
// ("" if it has none).
func tagOfObject(name string) string {
	i := strings.LastIndexByte(name, '-')
	if i < 0 || len(name)-i-1 != 16 {
		return ""
	}
	return name[i+1:]
}

// storedSize is content of size bytes stored for the owner of a tag.
type storedSize struct {
	tag  string
	size int64
}
