package cache

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/crc32"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"sshfsm/internal/remote"
)

// Listings survive remounts: a mount keeps every listing it learned, fresh
// or expired, in memory, and writes them to a snapshot file at unmount and
// while they change; the next mount of the same tree loads the file before
// it serves, and its coherence mode decides what the loaded listings may
// answer (revalidate.go):
//
//   - Auto: a loaded listing answers at once; its first answer queues its
//     revalidation and starts its time to live, as if it had been listed
//     then. A revalidation that finds differences reports them (Change),
//     so that the kernel forgets what it was told.
//   - Immutable: loaded listings answer forever and are never listed again.
//   - Strict: loaded listings never answer (they are expired); they are
//     only written back if nothing replaced them.
//
// A snapshot is one file: "SSHFSMMD", a version (uint32), the body, the
// body's length (uint64) and a CRC-32C of everything before it; integers
// are little-endian. The body is the time it was written (varint), the
// root's attributes (flag byte, attr), then one record per directory
// (byte 1, path, last use and when it was listed as varints, count, then
// per entry its name, a
// flag byte (1: attributes unknown) and, if known, its attributes), then a
// byte 0. Strings are a uvarint length and the bytes; an attr is mode,
// size, uid and gid as uvarints, atime and mtime as seconds (varint) and
// nanoseconds (uvarint), then the server's inode number (uvarint, 0:
// unknown) and, if known, device and link count (uvarints) and ctime (a
// time). The identity is kept so that a remount shows the numbers the
// last mount showed (git compares them with its index). A file that fails
// any check, or of another version, is ignored whole.

const (
	snapMagic   = "SSHFSMMD"
	snapVersion = 3
	snapHeader  = len(snapMagic) + 4
	snapTrailer = 8 + 4

	// DefaultMaxEntries and DefaultMaxBytes bound a snapshot, and the
	// listings a persisting cache keeps: past them the least recently
	// used directories are dropped.
	DefaultMaxEntries = 1 << 20
	DefaultMaxBytes   = 200 << 20
	// DefaultWriteInterval is how often a changed cache is written.
	DefaultWriteInterval = 30 * time.Second
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// DefaultDir is the disk cache's directory when cache_dir= is not given:
// $XDG_CACHE_HOME/sshfsm, or ~/.cache/sshfsm (a relative XDG_CACHE_HOME is
// ignored, as the XDG specification asks).
func DefaultDir() (string, error) {
	if x := os.Getenv("XDG_CACHE_HOME"); filepath.IsAbs(x) {
		return filepath.Join(x, "sshfsm"), nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("disk cache directory: %w", err)
	}
	return filepath.Join(home, ".cache", "sshfsm"), nil
}

// SnapshotPath is the snapshot file of the mount identity under the disk
// cache directory dir: dir/meta/ and a hash of the identity.
func SnapshotPath(dir, identity string) string {
	sum := sha256.Sum256([]byte(identity))
	return filepath.Join(dir, "meta", hex.EncodeToString(sum[:16]))
}

// PersistOptions configure Dirs.Persist.
type PersistOptions struct {
	Path   string // the snapshot file; its directory is created 0700
	Mode   Mode
	Logger *slog.Logger
	// WriteInterval: a changed cache is written this often; 0 is
	// DefaultWriteInterval.
	WriteInterval time.Duration
	// MaxEntries and MaxBytes bound the snapshot; 0 are the defaults.
	MaxEntries int
	MaxBytes   int
	// Root returns the attributes of the tree's root and when they were
	// learned (zero: not yet), written with the listings unless the mount
	// changed the root directory after. Without them the loaded ones are
	// written, unless the mount changed the root directory.
	Root func() (a remote.Attr, learned time.Time)
	// ReadDir lists one directory, and Tree (nil if the namespace cannot)
	// a subtree, to revalidate loaded listings in Auto mode; without
	// ReadDir nothing is revalidated and loaded listings expire one time
	// to live after their first answer.
	ReadDir Fetcher
	Tree    remote.TreeLister
	// Changes lists what changed on the server since the loaded listings
	// were learned (Auto mode, check.go); nil: each loaded listing is
	// listed again at its first use instead.
	Changes remote.ChangeLister
	// Checked, if set, receives the paths the check found changed before
	// any loaded listing answers (the disk cache of contents drops them:
	// a file rewritten keeping size and mtime is another version too).
	Checked func(changed []string)
	// Changed receives what a revalidation found different in a loaded
	// listing that had answered. It is called with the cache's lock held:
	// it must neither block nor call the cache.
	Changed func(Change)
}

// persistence is the state of a persisting cache. Fields are guarded by
// the cache's mu unless said otherwise.
type persistence struct {
	opts       PersistOptions
	maxEntries int
	log        *slog.Logger

	root        remote.Attr // loaded with the snapshot, if hasRoot
	hasRoot     bool
	rootTouched time.Time // when the mount last changed the root directory

	loadedDirs, loadedEntries int
	snapTime                  time.Time // when the loaded snapshot was written
	revalidated, changed      uint64

	// The check of loaded listings at mount (check.go). While checking,
	// loaded listings do not answer, and lookups and readers of them wait
	// for checked to close.
	checking     bool
	checked      chan struct{}
	oldest       int64  // when the oldest loaded listing was learned (unix ns)
	check        string // PersistStats.Check
	checkChanged int

	// Revalidation (revalidate.go).
	tree    bool                    // tree listings may be tried
	revals  map[*Bulk]*revalidation // tree revalidations running or queued
	queue   []*revalidation
	workers int
	running int             // revalidations under way
	working sync.WaitGroup  // the workers; not under mu
	ctx     context.Context // ends at Close
	cancel  context.CancelFunc

	saved     uint64 // Dirs.changes when the last snapshot was taken
	lastWrite time.Time
	writeErr  string

	writeMu   sync.Mutex    // serializes writes; not under mu
	stop      chan struct{} // closed by Close: the periodic writer ends
	loopDone  chan struct{}
	closeOnce sync.Once
	closed    chan struct{}
}

// Persist loads the snapshot at o.Path, if there is a sound one, and keeps
// every listing from now on for the snapshot, which it writes every
// WriteInterval while the cache changes and at Close. A missing file is
// the first mount; a damaged or foreign one is ignored with one log line.
// It does nothing on a disabled cache or when called again.
func (d *Dirs) Persist(o PersistOptions) {
	if !d.Enabled() || o.Path == "" {
		return
	}
	if o.WriteInterval <= 0 {
		o.WriteInterval = DefaultWriteInterval
	}
	if o.MaxEntries <= 0 {
		o.MaxEntries = DefaultMaxEntries
	}
	if o.MaxBytes <= 0 {
		o.MaxBytes = DefaultMaxBytes
	}
	p := &persistence{opts: o, maxEntries: o.MaxEntries, log: o.Logger, tree: o.Tree != nil,
		revals: map[*Bulk]*revalidation{}, stop: make(chan struct{}), loopDone: make(chan struct{}),
		closed: make(chan struct{})}
	if p.log == nil {
		p.log = slog.New(slog.DiscardHandler)
	}
	p.ctx, p.cancel = context.WithCancel(context.Background())
	snap := readSnapshot(o.Path, o.MaxBytes, p.log)
	d.mu.Lock()
	if d.p != nil {
		d.mu.Unlock()
		p.cancel()
		return
	}
	d.p = p
	if snap != nil {
		d.installLocked(snap)
	}
	p.saved = d.changes
	within, check := d.startCheckLocked()
	d.mu.Unlock()
	if check {
		go d.checkLoaded(p, within)
	}
	go d.writeLoop(p)
}

// snapshot is a decoded snapshot file.
type snapshot struct {
	written time.Time
	root    remote.Attr
	hasRoot bool
	dirs    []loadedDir
	entries int
}

type loadedDir struct {
	path string
	l    *listing
}

// readSnapshot reads and checks the snapshot at path; nil if there is
// none or it is unusable (logged once).
func readSnapshot(path string, maxBytes int, log *slog.Logger) *snapshot {
	start := time.Now()
	fi, err := os.Stat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil
	case err == nil && fi.Size() > int64(maxBytes)+int64(snapHeader+snapTrailer):
		err = fmt.Errorf("%d bytes, more than the bound of %d", fi.Size(), maxBytes)
	}
	var data []byte
	if err == nil {
		data, err = os.ReadFile(path)
	}
	var s *snapshot
	if err == nil {
		s, err = decodeSnapshot(data)
	}
	if err != nil {
		log.Warn("metadata snapshot ignored", "file", path, "err", err)
		return nil
	}
	log.Debug("metadata snapshot loaded", "file", path, "dirs", len(s.dirs), "entries", s.entries,
		"bytes", len(data), "took", time.Since(start))
	return s
}

// installLocked makes the snapshot's listings the cache's, as the mode
// says they may answer.
func (d *Dirs) installLocked(s *snapshot) {
	p := d.p
	p.root, p.hasRoot = s.root, s.hasRoot
	p.snapTime = s.written
	var expires time.Time // Strict: expired, never answers
	if p.opts.Mode != Strict {
		// Auto: until the first answer starts the time to live.
		expires = forever
	}
	for _, ld := range s.dirs {
		if d.dirs[ld.path] != nil {
			continue
		}
		ld.l.expires, ld.l.persisted = expires, true
		d.dirs[ld.path] = ld.l
		d.entries += len(ld.l.order)
		p.loadedDirs++
		p.loadedEntries += len(ld.l.order)
	}
	if p.opts.Mode == Immutable {
		d.bulks = append(d.bulks, d.knownTreesLocked())
	}
}

// forever is the expiry of listings that never expire.
var forever = time.Date(9999, 1, 1, 0, 0, 0, 0, time.UTC)

// knownTreesLocked returns an ended bulk listing, remembered forever, that
// claims to have listed every loaded directory whose subdirectories are
// loaded too: a walk there starts no bulk listing (StartBulk), since
// nothing below it would be stored anyway. Used in Immutable mode.
func (d *Dirs) knownTreesLocked() *Bulk {
	b := &Bulk{d: d, depth: 1 << 30, ended: true, remember: true, expires: forever,
		published: map[string]bool{}}
	for dir, l := range d.dirs {
		if !l.persisted {
			continue
		}
		all := true
		for _, name := range l.order {
			if e := l.names[name]; !e.gone && !e.stale && e.attr.Mode&typeMask == typeDir {
				if sub := d.dirs[joinPath(dir, name)]; sub == nil || !sub.persisted {
					all = false
					break
				}
			}
		}
		if all {
			b.published[dir] = true
		}
	}
	return b
}

const (
	typeMask = 0o170000
	typeDir  = 0o040000
)

func joinPath(dir, name string) string {
	if dir == "" {
		return name
	}
	return dir + "/" + name
}

// writeLoop writes the snapshot every WriteInterval while the cache
// changes, until Close.
func (d *Dirs) writeLoop(p *persistence) {
	defer close(p.loopDone)
	t := time.NewTicker(p.opts.WriteInterval)
	defer t.Stop()
	for {
		select {
		case <-p.stop:
			return
		case <-t.C:
			d.mu.Lock()
			dirty := d.changes != p.saved
			d.mu.Unlock()
			if dirty {
				d.writeSnapshot(p)
			}
		}
	}
}

// Close ends persistence: it cancels the revalidations under way and
// waits for them, stops the periodic writer and writes the snapshot if the
// cache changed since the last one. It returns once written, also when called again (or
// concurrently). The cache goes on answering.
func (d *Dirs) Close() {
	if d == nil {
		return
	}
	d.mu.Lock()
	p := d.p
	d.mu.Unlock()
	if p == nil {
		return
	}
	p.closeOnce.Do(func() {
		defer close(p.closed)
		close(p.stop)
		<-p.loopDone
		p.cancel()
		p.waitWorkers(closeWait)
		d.mu.Lock()
		dirty := d.changes != p.saved
		d.mu.Unlock()
		if dirty {
			d.writeSnapshot(p)
		}
	})
	<-p.closed
}

// closeWait bounds how long Close waits for revalidations to end once
// cancelled; they end at once unless a remote ignores the cancellation.
const closeWait = 5 * time.Second

// waitWorkers waits up to limit for the revalidation workers to end.
func (p *persistence) waitWorkers(limit time.Duration) {
	done := make(chan struct{})
	go func() {
		p.working.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(limit):
		p.log.Warn("revalidations still under way; writing the metadata snapshot without them")
	}
}

// writeSnapshot writes the cache's listings to the snapshot file, most
// recently used first, within the bounds.
func (d *Dirs) writeSnapshot(p *persistence) {
	p.writeMu.Lock()
	defer p.writeMu.Unlock()
	start := time.Now()
	data, changes, dirs, entries := d.encodeSnapshot(p)
	err := writeAtomic(p.opts.Path, data)
	d.mu.Lock()
	prev := p.writeErr
	p.writeErr = ""
	if err != nil {
		p.writeErr = err.Error()
	} else {
		p.saved, p.lastWrite = changes, time.Now()
	}
	d.mu.Unlock()
	switch {
	case err != nil && err.Error() != prev:
		p.log.Warn("metadata snapshot not written", "file", p.opts.Path, "err", err)
	case err == nil:
		p.log.Debug("metadata snapshot written", "file", p.opts.Path, "dirs", dirs, "entries", entries,
			"bytes", len(data), "took", time.Since(start))
	}
}

// writeAtomic replaces path with data: a temporary file in the same
// directory, synced, then renamed over it.
func writeAtomic(path string, data []byte) (err error) {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(f.Name())
		}
	}()
	if _, err = f.Write(data); err != nil {
		return err
	}
	if err = f.Sync(); err != nil {
		return err
	}
	if err = f.Close(); err != nil {
		return err
	}
	if err = os.Rename(f.Name(), path); err != nil {
		return err
	}
	// The rename itself is durable once the directory is synced.
	if df, err := os.Open(dir); err == nil {
		df.Sync()
		df.Close()
	}
	return nil
}

// snapChunk is how many directories are encoded per hold of the cache's
// lock: lookups wait for at most one chunk.
const snapChunk = 256

// encodeSnapshot encodes the listings, most recently used first, until a
// bound is reached. changes is the cache's change count it reflects.
func (d *Dirs) encodeSnapshot(p *persistence) (data []byte, changes uint64, dirs, entries int) {
	var root remote.Attr
	var learned time.Time
	if p.opts.Root != nil {
		root, learned = p.opts.Root()
	}
	type ref struct {
		path string
		used int64
	}
	d.mu.Lock()
	changes = d.changes
	hasRoot := !learned.IsZero() && learned.After(p.rootTouched)
	if !hasRoot && p.hasRoot && p.rootTouched.IsZero() {
		root, hasRoot = p.root, true
	}
	refs := make([]ref, 0, len(d.dirs))
	for path, l := range d.dirs {
		refs = append(refs, ref{path, l.used})
	}
	size := d.entries
	d.mu.Unlock()
	slices.SortFunc(refs, func(a, b ref) int {
		if c := cmp.Compare(b.used, a.used); c != 0 {
			return c
		}
		return strings.Compare(a.path, b.path)
	})

	buf := make([]byte, 0, snapHeader+64+min(size, p.maxEntries)*48)
	buf = append(buf, snapMagic...)
	buf = binary.LittleEndian.AppendUint32(buf, snapVersion)
	buf = binary.AppendVarint(buf, time.Now().Unix())
	if hasRoot {
		buf = append(buf, 1)
		buf = appendAttr(buf, root)
	} else {
		buf = append(buf, 0)
	}
	full := false
	for i := 0; i < len(refs) && !full; i += snapChunk {
		d.mu.Lock()
		for _, r := range refs[i:min(i+snapChunk, len(refs))] {
			l := d.dirs[r.path]
			if l == nil {
				continue
			}
			mark := len(buf)
			var n int
			buf, n = appendListing(buf, r.path, l)
			if entries+n > p.maxEntries || len(buf)+1+snapTrailer > p.opts.MaxBytes {
				buf, full = buf[:mark], true
				break
			}
			dirs++
			entries += n
		}
		d.mu.Unlock()
	}
	buf = append(buf, 0)
	buf = binary.LittleEndian.AppendUint64(buf, uint64(len(buf)-snapHeader))
	buf = binary.LittleEndian.AppendUint32(buf, crc32.Checksum(buf, castagnoli))
	return buf, changes, dirs, entries
}

// appendListing appends the record of l and returns how many entries it
// holds.
func appendListing(buf []byte, path string, l *listing) ([]byte, int) {
	n := 0
	for _, name := range l.order {
		if !l.names[name].gone && name != "" {
			n++
		}
	}
	buf = append(buf, 1)
	buf = appendString(buf, path)
	buf = binary.AppendVarint(buf, l.used)
	buf = binary.AppendVarint(buf, l.learned)
	buf = binary.AppendUvarint(buf, uint64(n))
	for _, name := range l.order {
		e := l.names[name]
		if e.gone || name == "" {
			continue
		}
		buf = appendString(buf, name)
		if e.stale || e.changed {
			buf = append(buf, 1)
			continue
		}
		buf = append(buf, 0)
		buf = appendAttr(buf, e.attr)
	}
	return buf, n
}

func appendString(buf []byte, s string) []byte {
	buf = binary.AppendUvarint(buf, uint64(len(s)))
	return append(buf, s...)
}

func appendAttr(buf []byte, a remote.Attr) []byte {
	buf = binary.AppendUvarint(buf, uint64(a.Mode))
	buf = binary.AppendUvarint(buf, a.Size)
	buf = binary.AppendUvarint(buf, uint64(a.UID))
	buf = binary.AppendUvarint(buf, uint64(a.GID))
	buf = appendTime(buf, a.Atime)
	buf = appendTime(buf, a.Mtime)
	buf = binary.AppendUvarint(buf, a.Ino)
	if !a.HasIdentity() {
		return buf
	}
	buf = binary.AppendUvarint(buf, a.Dev)
	buf = binary.AppendUvarint(buf, a.Nlink)
	return appendTime(buf, a.Ctime)
}

func appendTime(buf []byte, t time.Time) []byte {
	if t.IsZero() {
		// The zero time's seconds since 1970 round-trip to an instant
		// that is not IsZero in every location; keep it apart.
		return binary.AppendUvarint(binary.AppendVarint(buf, 0), 1<<31)
	}
	buf = binary.AppendVarint(buf, t.Unix())
	return binary.AppendUvarint(buf, uint64(t.Nanosecond()))
}

// decodeSnapshot checks and decodes a snapshot file.
func decodeSnapshot(data []byte) (*snapshot, error) {
	if len(data) < snapHeader+snapTrailer {
		return nil, fmt.Errorf("truncated (%d bytes)", len(data))
	}
	if string(data[:len(snapMagic)]) != snapMagic {
		return nil, errors.New("not a metadata snapshot")
	}
	if v := binary.LittleEndian.Uint32(data[len(snapMagic):]); v != snapVersion {
		return nil, fmt.Errorf("format version %d; this sshfsm reads version %d", v, snapVersion)
	}
	end := len(data) - snapTrailer
	if n := binary.LittleEndian.Uint64(data[end:]); n != uint64(end-snapHeader) {
		return nil, fmt.Errorf("truncated or damaged: body of %d bytes, %d expected", end-snapHeader, n)
	}
	if sum := binary.LittleEndian.Uint32(data[end+8:]); sum != crc32.Checksum(data[:end+8], castagnoli) {
		return nil, errors.New("damaged: checksum mismatch")
	}
	r := &reader{s: string(data[snapHeader:end])}
	s := &snapshot{written: time.Unix(r.varint(), 0)}
	if r.byte() == 1 {
		s.root, s.hasRoot = r.attr(), true
	}
	seen := map[string]bool{}
	for r.err == nil && r.byte() == 1 {
		path := r.string()
		if !validDirPath(path) || seen[path] {
			// A mount writes each directory once, at its clean path.
			return nil, fmt.Errorf("damaged: directory %q", path)
		}
		seen[path] = true
		l := &listing{used: r.varint()}
		l.learned = r.varint()
		n := r.count()
		l.names = make(map[string]entry, n)
		l.order = make([]string, 0, n)
		for range n {
			name := r.string()
			var e entry
			if e.stale = r.byte() == 1; !e.stale {
				e.attr = r.attr()
			}
			if _, dup := l.names[name]; dup || !validName(name) {
				continue
			}
			l.names[name] = e
			l.order = append(l.order, name)
		}
		s.dirs = append(s.dirs, loadedDir{path, l})
		s.entries += len(l.order)
	}
	if r.err == nil && r.i != len(r.s) {
		r.err = errors.New("data after the last record")
	}
	if r.err != nil {
		return nil, fmt.Errorf("damaged: %w", r.err)
	}
	return s, nil
}

// validDirPath reports whether p is the root ("") or a relative path of
// valid names.
func validDirPath(p string) bool {
	if p == "" {
		return true
	}
	for {
		name, rest, more := strings.Cut(p, "/")
		if !validName(name) {
			return false
		}
		if !more {
			return true
		}
		p = rest
	}
}

// validName reports whether name is one file name Linux allows.
func validName(name string) bool {
	return name != "" && name != "." && name != ".." && len(name) <= 255 && !strings.ContainsAny(name, "/\x00")
}

// reader decodes a snapshot's body. Names are substrings of s: the whole
// body is one allocation, not one per name.
type reader struct {
	s   string
	i   int
	err error
}

var errShort = errors.New("record ends early")

func (r *reader) byte() byte {
	if r.err != nil || r.i >= len(r.s) {
		r.fail()
		return 0
	}
	r.i++
	return r.s[r.i-1]
}

func (r *reader) fail() {
	if r.err == nil {
		r.err = errShort
	}
	r.i = len(r.s)
}

func (r *reader) uvarint() uint64 {
	var v uint64
	for shift := uint(0); shift < 64; shift += 7 {
		b := r.byte()
		if r.err != nil {
			return 0
		}
		v |= uint64(b&0x7f) << shift
		if b < 0x80 {
			return v
		}
	}
	r.fail()
	return 0
}

func (r *reader) varint() int64 {
	u := r.uvarint()
	v := int64(u >> 1)
	if u&1 != 0 {
		v = ^v
	}
	return v
}

// count reads a number of items, each taking at least one byte.
func (r *reader) count() int {
	n := r.uvarint()
	if n > uint64(len(r.s)-r.i) {
		r.fail()
		return 0
	}
	return int(n)
}

func (r *reader) string() string {
	n := r.count()
	if r.err != nil {
		return ""
	}
	r.i += n
	return r.s[r.i-n : r.i]
}

func (r *reader) attr() remote.Attr {
	a := remote.Attr{Mode: uint32(r.uvarint()), Size: r.uvarint(), UID: uint32(r.uvarint()),
		GID: uint32(r.uvarint()), Atime: r.time(), Mtime: r.time()}
	if a.Ino = r.uvarint(); a.HasIdentity() {
		a.Dev, a.Nlink, a.Ctime = r.uvarint(), r.uvarint(), r.time()
	}
	return a
}

func (r *reader) time() time.Time {
	sec, nsec := r.varint(), r.uvarint()
	switch {
	case nsec == 1<<31:
		return time.Time{}
	case nsec >= 1e9:
		r.fail()
		return time.Time{}
	}
	return time.Unix(sec, int64(nsec))
}

// PersistStats describes the persistence of listings; Enabled is false
// without it.
type PersistStats struct {
	Enabled bool
	Mode    Mode
	Path    string
	// LoadedDirs and LoadedEntries were loaded at mount from a snapshot
	// written at SnapshotTime (zero: none was loaded).
	LoadedDirs, LoadedEntries int
	SnapshotTime              time.Time
	// Revalidated counts loaded listings replaced by a fresh listing;
	// Changed those among them that had answered and differed.
	Revalidated, Changed uint64
	// Pending counts revalidations queued or under way.
	Pending int
	// Check is the state of the check of loaded listings (check.go):
	// "", "under way", "done" or "failed"; CheckChanged counts the names
	// it found changed.
	Check        string
	CheckChanged int
	// Dirs and Entries are kept now, for the next snapshot.
	Dirs, Entries int
	LastWrite     time.Time // zero: none written yet
	WriteError    string    // of the last write, if it failed
}

// PersistStats reports on persistence.
func (d *Dirs) PersistStats() PersistStats {
	if d == nil {
		return PersistStats{}
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	p := d.p
	if p == nil {
		return PersistStats{}
	}
	return PersistStats{Enabled: true, Mode: p.opts.Mode, Path: p.opts.Path,
		LoadedDirs: p.loadedDirs, LoadedEntries: p.loadedEntries, SnapshotTime: p.snapTime,
		Revalidated: p.revalidated, Changed: p.changed, Pending: len(p.queue) + p.running,
		Check: p.check, CheckChanged: p.checkChanged,
		Dirs: len(d.dirs), Entries: d.entries, LastWrite: p.lastWrite, WriteError: p.writeErr}
}

// PersistedRoot returns the root's attributes loaded with the snapshot,
// unless the mount changed the root directory since.
func (d *Dirs) PersistedRoot() (remote.Attr, bool) {
	if d == nil {
		return remote.Attr{}, false
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if p := d.p; p != nil && p.hasRoot && p.rootTouched.IsZero() {
		return p.root, true
	}
	return remote.Attr{}, false
}
