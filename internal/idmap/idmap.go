// Package idmap translates user and group ids between the local machine and
// a remote host: idmap=none, idmap=user and idmap=file (sshfs's uidfile and
// gidfile format).
package idmap

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
)

// Map is a set of uid and gid translations. Its zero value maps nothing; it
// is safe for concurrent use once built.
type Map struct {
	uidToLocal, uidToRemote map[uint32]uint32
	gidToLocal, gidToRemote map[uint32]uint32
	// strict shows remote ids without a translation as Nobody
	// (nomap=error) instead of passing them through (nomap=ignore).
	strict bool
}

// Nobody is the overflow id that remote ids without a translation are shown
// as under nomap=error.
const Nobody = 65534

// User maps the remote user's uid and gid (the owner of the remote home) to
// the local ones and back; every other id passes through unchanged.
func User(remoteUID, remoteGID, localUID, localGID uint32) *Map {
	m := &Map{}
	m.addUID(localUID, remoteUID)
	m.addGID(localGID, remoteGID)
	return m
}

// Resolver finds local ids by name.
type Resolver struct {
	LookupUser  func(name string) (uint32, error)
	LookupGroup func(name string) (uint32, error)
}

// FileOptions describe idmap=file.
type FileOptions struct {
	UIDFile, GIDFile string // "" = no file
	// Ignore passes ids without a translation through unchanged
	// (nomap=ignore); otherwise remote ones are shown as Nobody.
	Ignore bool
	Names  Resolver
}

// Files reads the uidfile and gidfile: lines of name:remote_id, name being
// a local user or group name; blank lines and lines starting with # are
// skipped.
func Files(o FileOptions) (*Map, error) {
	m := &Map{strict: !o.Ignore}
	if o.UIDFile != "" {
		if err := readFile(o.UIDFile, "user", o.Names.LookupUser, m.addUID); err != nil {
			return nil, err
		}
	}
	if o.GIDFile != "" {
		if err := readFile(o.GIDFile, "group", o.Names.LookupGroup, m.addGID); err != nil {
			return nil, err
		}
	}
	return m, nil
}

func readFile(path, kind string, lookup func(string) (uint32, error), add func(local, remote uint32)) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := parse(f, kind, lookup, add); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}

// parse reads name:id lines from r.
func parse(r io.Reader, kind string, lookup func(string) (uint32, error), add func(local, remote uint32)) error {
	sc := bufio.NewScanner(r)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		name, idText, ok := strings.Cut(line, ":")
		if !ok || name == "" {
			return fmt.Errorf("line %d: expected %s-name:remote-id", n, kind)
		}
		remote, err := strconv.ParseUint(strings.TrimSpace(idText), 10, 32)
		if err != nil {
			return fmt.Errorf("line %d: bad id %q", n, idText)
		}
		local, err := lookup(strings.TrimSpace(name))
		if err != nil {
			return fmt.Errorf("line %d: unknown local %s %q", n, kind, name)
		}
		add(local, uint32(remote))
	}
	return sc.Err()
}

func (m *Map) addUID(local, remote uint32) {
	m.uidToLocal = put(m.uidToLocal, remote, local)
	m.uidToRemote = put(m.uidToRemote, local, remote)
}

func (m *Map) addGID(local, remote uint32) {
	m.gidToLocal = put(m.gidToLocal, remote, local)
	m.gidToRemote = put(m.gidToRemote, local, remote)
}

func put(m map[uint32]uint32, k, v uint32) map[uint32]uint32 {
	if m == nil {
		m = map[uint32]uint32{}
	}
	m[k] = v
	return m
}

func (m *Map) toLocal(t map[uint32]uint32, id uint32) (uint32, bool) {
	if v, ok := t[id]; ok {
		return v, true
	}
	if m.strict {
		return Nobody, true
	}
	return id, false
}

func toRemote(t map[uint32]uint32, id uint32) (uint32, bool) {
	v, ok := t[id]
	return v, ok
}

// LocalUID translates a uid the server reported; ok=false leaves it as it is.
func (m *Map) LocalUID(remote uint32) (uint32, bool) { return m.toLocal(m.uidToLocal, remote) }

// LocalGID translates a gid the server reported.
func (m *Map) LocalGID(remote uint32) (uint32, bool) { return m.toLocal(m.gidToLocal, remote) }

// RemoteUID translates a local uid to send to the server (chown); ok=false
// sends it as it is.
func (m *Map) RemoteUID(local uint32) (uint32, bool) { return toRemote(m.uidToRemote, local) }

// RemoteGID translates a local gid to send to the server.
func (m *Map) RemoteGID(local uint32) (uint32, bool) { return toRemote(m.gidToRemote, local) }
