package replica

// What a replica set does, guarantees and does not guarantee.
//
// Members are several remotes (usually SSH gateways) that reach the SAME
// storage, such as one Lustre or NFS tree; the set never copies data
// between them. Their order is the primary order.
//
// Routing.
//   - Reads and metadata (Lstat, Stat, ReadDir, Readlink, StatFS, and Open
//     for reading) go to the healthy member with the least work: calls in
//     flight plus open files, times its latency relative to the fastest
//     member's when that is more than latencyTolerance times larger and
//     more than latencyFloor (2 ms) longer. The
//     latency is a moving average of probe round trips (an Lstat of the
//     root every ProbeInterval on every member); it counts only after a
//     few probes, the first ones being noise while a mount starts.
//   - An open file reads from the member it was opened on while that
//     member stays healthy (readahead and server caches stay warm), so
//     parallel readers of different files spread over the members.
//   - Writes and namespace changes (Open for writing or with O_CREATE,
//     O_TRUNC, O_EXCL; Mkdir, Remove, Rmdir, Rename, Symlink, Link, SetAttr)
//     go to the primary: the first healthy member in order. A file opened
//     for writing stays on the member it was opened on (WriteAt, Truncate,
//     Sync, Close) until that member fails.
//
// Failure. A member is taken out when a call fails at connection level
// (see connLevel: connection lost, ENOTCONN, a timeout; never an answer
// such as ENOENT, EACCES or EIO), when its Health reports it down, or when
// a probe fails to connect. Its reads under way are cancelled and sent to
// another member; its open files move on their next call. It rejoins when
// its Health says up and a probe sent after it was taken out succeeds.
// Files that moved stay where they are; new opens use the rejoined member
// again.
//
// A moved file is re-opened by path on another member without O_CREATE,
// O_EXCL and O_TRUNC.
//   - A handle with no writes of its own checks that size and mtime are
//     those it learned after its first open; otherwise the file changed
//     underneath, reading on would mix two versions, and the handle fails
//     with EIO for good (ESTALE if the file is gone).
//   - A writable handle keeps every write and truncate acknowledged since
//     its last successful Sync (at most ReplayLimit bytes; past that it
//     syncs itself to release them) and makes them again, in order, on the
//     new member before going on; the write that failed is re-sent after
//     them. A write acknowledged by a member the handle has meanwhile left
//     is sent again. If the replay fails, the handle fails with that error.
//
// So no error reaches the application while one member is healthy, and
// no acknowledged write is lost when the gateway that acknowledged it dies
// before passing it to the storage: the handle still holds it and writes
// it again through the next gateway. What is NOT guaranteed:
//   - Data acknowledged and then released by a successful Sync is as
//     durable as that member's Sync made it. A gateway whose fsync returns
//     before the storage has the data (or one without fsync@openssh.com,
//     where Sync is a no-op) can still lose it, and nothing later sees it.
//   - After a successful Close without Sync the journal is gone: data the
//     gateway had not yet written to the storage is lost if it dies then,
//     as with any single server. Call Sync (fsync) before Close when that
//     matters; a Sync or Close that fails does report it.
//   - With no healthy member left, calls fail at once with ENOTCONN
//     (ErrNoMember); a writable handle with journaled writes then fails
//     Sync and Close, since the data may be lost.
//   - A gateway that was frozen rather than dead may, when it thaws, still
//     carry out writes it had received before the set gave up on it, over
//     newer data written through another member. Only a fence at the
//     storage can exclude that.
//   - A namespace change whose answer was lost is sent to the next member
//     (resent). Answers that mean "already done" then count as success:
//     EEXIST for Mkdir when a directory is there, ENOENT for Remove and
//     Rmdir, ENOENT for Rename when the new name exists, EEXIST for Symlink
//     pointing where asked, EEXIST for Link to the same attributes, and
//     EEXIST for an exclusive create of an empty regular file (then
//     opened). A change another client made at the same moment can be
//     mistaken for our own. A change that certainly never left
//     (transport.ErrNoChannel) keeps its real answer.
//   - Members must show the same tree: a member that serves another
//     directory or a stale cache is not detected, beyond the size and
//     mtime check of moved read handles.
//
// Members should be transport hosts dialled with Options.FailFast, so that
// a call to a host without a live channel fails at once instead of
// waiting for its reconnect.
