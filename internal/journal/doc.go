// Package journal keeps the changes a mount made and the server does not
// have yet (-o writeback) on local disk, so that a change acknowledged to
// an application survives kill -9, a power cut and a lost link, and is
// replayed by the next mount on the same cache directory.
//
// # Use
//
// fusefs Appends a change and answers the kernel once Append returned:
// the record is then on disk. A drainer puts the changes in an Order,
// sends what Order.Next hands out, and calls Journal.Done, then
// Order.Done, for each change the server has. Open returns the changes
// not done, in order, for the next mount to replay before it serves
// anything. MaxEntries and MaxBytes (writeback_max=) make Append wait
// for the drain; Stats tells what is queued and how old it is.
//
// # Layout
//
// Everything lives in Dir (0700):
//
//	lock                       flock'ed by the process that has the journal open
//	<16 hex digits>.wj         segments, numbered in order
//	spill/w-<16 hex digits>    the bytes of one large write
//
// A segment is a header block (magic, format, its number, the sequence
// number of its first record, a random salt, CRC-32C), then batches,
// each starting at a multiple of 4 KiB:
//
//	0   header  magic, body length, record count, flags (end, carry), salt, CRC-32C
//	32  records length u32, CRC-32C of length and payload u32, payload
//	    zeros to the next 4 KiB
//
// A payload (change.go) is a fixed part (sequence number, time, op,
// modes, flags, attributes, offset, length, CRC of a spilled write) and
// length-prefixed strings: host, branch, path, new path, symlink target,
// spill file name, inline data. Every record has a sequence number one
// above the one before, across segments, done records included. A done
// record lists the sequence numbers of changes the server has.
//
// # Why it is safe
//
//  1. One batch is written and synced (fdatasync) at a time, by one
//     goroutine, for every Append and Done waiting: group commit. Nothing
//     is acknowledged before the sync of its batch returned, so after a
//     crash at most the last batch of the last segment is torn.
//  2. Open reads batches up to the first that fails (header or any
//     record: length, CRC, field checks) and drops what follows, unless
//     a good batch follows at a later 4 KiB boundary: then an
//     acknowledged batch was damaged and Open fails with ErrCorrupt
//     rather than replay a hole. The salt in every batch header keeps
//     bytes a user wrote (a write's data in an older record) from passing
//     for a batch. Sequence numbers out of order, a segment missing, a
//     segment other than the last without its end batch, a spill file of
//     a pending change missing are corrupt too.
//  3. A segment ends with an end batch when it is rotated or closed;
//     Open truncates the torn tail of the segment a crash left open,
//     ends it, and starts a new segment: only the newest segment ever
//     has a tail to drop.
//  4. A write past SpillSize goes to its own file, written and synced by
//     the appender before its record is queued; the committer syncs the
//     spill directory before the batch that names it. Its CRC is in the
//     record and is checked when Data reads it.
//  5. Segments go oldest first, once no change in them is pending, each
//     removal made durable before the next: a done record may sit in a
//     later segment than its change, which must not come back once the
//     done record is gone. Spill files go once the done record of their
//     change is on disk; those a crash left without a record go at Open.
//     New names (segments, spill files, the directories) are synced in
//     their directory.
//  6. A change the drain cannot send (a server that refuses it, a link
//     down) must not keep every later segment on disk. When a new
//     segment begins and the changes pending in older ones take at most
//     a quarter of their bytes, their records are copied, unchanged, into
//     carry batches at the start of the new segment, synced one at a
//     time; the older segments then hold nothing pending and go. A crash
//     before they are gone leaves two copies of a record, read as one; a
//     done record always follows the copies of its changes. Older
//     segments thus take about four times the bytes of the records
//     pending at most, and copying adds at most a third to what is
//     written.
//  7. One process at a time: Open takes an exclusive flock.
//
// A change the server applied but whose Done did not reach the disk is
// sent again after a crash; the drainer must expect that (a rename
// already made, a file already there).
package journal
