// Package contentcache keeps the contents of remote files on local disk,
// across mounts, daemon restarts and reboots, and never hands back bytes
// that are not the content it was given.
//
// # Layout
//
// Everything lives under Dir/content (0700):
//
//	e/<xx>/<P>/<V>/r, d   one entry per Key: P = 32 hex digits of a hash of
//	                      (host, path), xx its first two; V = 16 hex digits
//	                      of a hash of (P, size, mtime, block size,
//	                      branch)
//	o/<xx>/<S>-<b>/r, d   the stored copy of one host's content, S = 64 hex
//	                      digits of a hash of (host, SHA-256 of the
//	                      content), in blocks of 2^b bytes (dedup)
//	s/<xx>/<P>-<V>        a small entry: content of at most one block
//	o/<xx>/<S>.s          the stored copy of one host's small content
//	tmp/                  directories and small files being built
//	trash/                directories being removed
//
// No remote name appears in the layout; a Key always maps to the same
// directory. d is the data: a sparse file the size of the remote file
// holding the blocks fetched so far at their offsets, so that it can be
// handed to the kernel for FUSE passthrough. r is its record:
//
//	0    header  magic, format, content size, block size
//	64   digest  SHA-256 of the content, computed here or given by the remote
//	128  marker  the boot during which every block was checked good
//	256  slots   16 bytes per block: CRC-32C of the block, its length,
//	             present or dropped
//
// Every record and slot carries a CRC-32C of itself (a slot's also covers
// its block index); one that does not match reads as absent. An absent,
// zeroed or dropped slot is a missing block; a dropped one keeps the CRC
// the block had. The record describes only content, never a Key, so
// entries of the same content may share one r and one d.
//
// A small entry is one file: a 64-byte header (magic, format, content
// size, CRC-32C and SHA-256 of the content, its own CRC-32C) and the
// content after it. Fill writes it whole under tmp, with the digest it
// computes from the bytes in hand, and renames it into place; it is
// never written again. Small files thus cost one inode and their data's
// blocks, and no background hashing; an empty file stores nothing. Forget
// finds a path's small entries by their name's prefix. (Measured on 10 000 files of Go's
// source tree, 10 KiB on average, on ext4: 28.4 KiB of disk per entry
// before, 12.6 KiB after.) Entries of the earlier layout whose content
// fits in one block are never read: the scan removes them.
//
// # Rules that keep it safe
//
//  1. A block is returned by ReadAt only after the block, read whole from d,
//     matched the CRC-32C in its slot, once per process and data file.
//     Fill writes the data before the slot; a block never written, written
//     in part, lost in a power cut, or damaged fails the check and is
//     dropped (slot marked dropped, marker cleared): the caller fetches it
//     again. Its slot was itself written intact or it is absent. The
//     chance that wrong bytes match a CRC-32C is 2^-32 per damaged block.
//     A small file is checked the same way: its only block against the
//     CRC in its header, which itself matches its own CRC or the file
//     reads as absent, as does a file of another length. One that fails
//     is removed (by inode) instead of having its slot dropped.
//  2. An entry's r and d are opened through one descriptor of their
//     directory, and a directory is only ever created whole (built in tmp,
//     renamed into place) and removed whole (renamed into trash, then
//     deleted); its files are never replaced one at a time. So a record
//     always describes the data file next to it, in every directory that
//     names the pair.
//  3. Files are never truncated and no hole is punched: dropping a block
//     clears its slot only. A data file is written only where a block is
//     missing, and only with that block's content; the content is the
//     same for every process and every directory naming that file (same
//     Key, or same SHA-256). Concurrent writers of one block write the
//     same bytes; a reader that sees a mix fails the check. A data file
//     some process reads through passthrough thus never changes under it.
//     A refill that differs from the dropped block's CRC (the remote file
//     changed but kept its size and mtime), or that cannot be compared
//     while the files may be shared (digest computed, slot lost), is
//     never written there: the entry's directory is replaced by new files.
//  4. The marker lets Verified hand d to the kernel, which reads it
//     without our checks. It is written only once every block has been
//     checked good (or written) during the current boot, and counts only
//     while /proc/sys/kernel/random/boot_id is unchanged: within a boot
//     the page cache and the disk agree, so what was checked stays good;
//     after a reboot, data that had not reached the disk when power was
//     cut may be gone, so VerifyAll must read and check every block again.
//     Verified also requires every slot present and d exactly the content
//     size. A small entry keeps no marker: Verified checks its block and
//     hands out a copy of it in an unlinked file of its own.
//
// Nothing on the hot path calls fsync. A power cut can cost the blocks,
// slots and directories not yet on disk, which are fetched again; never
// wrong bytes, by rule 1. A kill -9 costs at most the block being written.
// Leftovers (tmp, trash, an entry directory missing a file) are removed by
// the next scan once old enough not to be another process's work.
//
// # Dedup
//
// Content is shared only among the files of one host and branch (a Key's
// Host and Branch): a server that reports, for a file of its own, the
// digest of another host's file must not be served that content as its
// file's, nor learn what this machine stores from the READs it does not
// get. Sizes are
// bounded before anything is computed from them (MaxFileSize), and an
// entry's memory follows the blocks it stores, not the size a server
// claims.
//
// A small entry is hashed at Fill. If the stored copy of that digest holds
// the same bytes (compared, not only hashed), the entry becomes another
// name of it; otherwise the new file is installed and published as the
// stored copy, replacing one that is damaged.
//
// When a larger entry becomes complete, a background job reads it (checking
// every block), computes its SHA-256 and records it. If no stored copy of
// that content exists, the entry's pair becomes it (hard links in o/). If
// one does and it is checked good during this boot, the entry's directory
// is replaced by another name of the stored copy's pair, and its own data
// is freed. ByDigest gives a Key the stored copy of a digest the remote
// reported. A digest given by SetDigest that differs from the one computed
// removes the entry: its content is not that file's. MayHold tells, by the
// sizes of the stored copies larger than a block of the same host and
// branch (from the last scan and this process's stores since), when
// asking the remote for a digest may find a file's content stored under
// another key; another host's sizes never count, since whether a digest
// is asked tells the server they are there.
//
// # Eviction
//
// A use of an entry sets the mtime of its data file, at most once a
// minute, so last-use times survive restarts without a write per read.
// Fill checks free space with statfs, and the bytes stored against
// MaxSize as last counted plus its own fills since. Past either, a scan
// reads the metadata of every entry (never data), groups directories by
// data file, and removes the least recently used groups until the store
// is under 90% of MaxSize and MinFree stays free. Data files this process
// uses are kept; a Fill that still does not fit fails with ENOSPC. Open
// does not wait for the first scan, which runs in the background and
// again every five minutes, because other processes fill and evict too.
// An entry another process evicts stays readable through the files this
// process holds open, and is made again by the next Fill.
//
// # Concurrency
//
// Entries of one Key in one process share a state. Readers take only the
// entry's mutex, never across I/O, and pread a descriptor kept open;
// Fill, SetDigest and replacing files serialise on a second per-entry
// mutex. Processes share nothing but the files: by rule 3 whatever they
// do concurrently can cost misses, never wrong data. The Key must identify
// the content: a file rewritten with the same size within the same mtime
// second is the caller's to Forget.
package contentcache
