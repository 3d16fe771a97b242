// Package namespace decides which branch serves which path of the mount:
// one branch (Single), a union of branches (NewUnion), and namespaces
// grafted at the root (NewGraft). Paths are relative to the mountpoint.
//
// # Unions
//
// A union layers up to 64 branches in priority order, the first the
// highest.
//
// Lookup: the highest branch that holds a name wins; the union shows its
// copy and its attributes. Directories of the same name merge,
// recursively: a directory's contributing branches are those of its parent
// that hold it as a directory, from the winner down to the first branch
// that holds the name as a non-directory, which shadows every copy below
// it. So a higher branch's file shadows a lower branch's directory and a
// higher branch's directory a lower branch's file. What a lookup learns
// about a directory's branches is kept for LayoutTTL (the union's own
// changes keep it current; changes made on a host by others show after
// LayoutTTL). A branch whose lookup fails with anything but "no such
// file" where its answer could decide fails the call: its copy might win.
//
// Stat and Readlink ask the branch of the winning copy; Stat follows a
// symlink inside that branch, so a target only another branch holds is not
// found there (the kernel, resolving the link through the mount, finds it).
//
// ReadDir lists every contributing branch in parallel and returns each
// name once with the attributes of its winning copy; a branch that fails
// to list fails the call rather than hiding its names.
//
// Creating a name (Open with O_CREATE of a name the union does not show,
// Mkdir, Symlink) goes to the branch the create policy picks, with
// mergerfs' meanings: epff (the default) the highest writable branch that
// already holds the parent directory, EROFS if only read-only branches
// do; ff the highest writable branch; mfs and lfs the writable branch with
// the most or least space available (statfs, kept for StatFSTTL); rand any
// writable branch. Read-only branches and branches that are down are never
// picked, nor branches where a new copy would be shadowed. A branch that
// lacks the parent directory gets it first, each missing component with
// the mode of the union's directory. Link goes to the branch of the link's
// target, the only one where a hard link can be made (EXDEV if that branch
// cannot hold the new name's directory).
//
// Remove removes the name from every branch that holds it as a
// non-directory, lower copies first, so that no copy reappears; Rmdir
// removes the directory from every contributing branch, and it must be
// empty in the union (ENOTEMPTY). If a read-only branch holds a copy, both
// fail with EROFS before anything is removed. A copy of the other kind (a
// directory below a removed file) is another file: it stays and shows.
//
// Rename is done inside the one branch that holds the name, atomically
// there; the new name's directory is created in that branch if needed.
// It fails with EXDEV, which makes mv copy and then unlink, when it
// cannot be: a name several branches hold (a merged directory, or a file
// whose lower copy would reappear), a target that a higher branch holds
// (it would keep shadowing the result), or a branch that cannot hold the
// target's directory. Copies of the target on writable branches below are
// removed after the rename; copies on read-only branches stay hidden below
// it (and removing the name then fails with EROFS).
//
// Opening for writing or truncating, and SetAttr, act on the winning copy.
// A copy on a read-only branch is never touched: EROFS, with no copy-up to
// a writable branch. SetAttr of a merged directory changes the winning
// copy, whose attributes the union shows.
//
// ListTree (remote.TreeLister) lists a subtree with one tree listing per
// contributing branch, in parallel, and merges them as ReadDir would,
// reporting nothing until every branch has answered.
//
// StatFS adds up the branches that are up, each distinct filesystem once:
// branches reporting the same non-zero Fsid share one; branches without a
// usable Fsid count separately.
//
// # Branches that are down
//
// A branch whose Remote implements remote.Health and is not Up is treated
// as absent: its names vanish, the other branches answer, and no call
// waits for its timeout; creates avoid it. Remove, Rmdir and Rename do
// not reach it either: a copy it holds of a name removed meanwhile
// reappears when it comes back. A branch whose lookup or listing fails
// and that is down by then (a host lost during the call, or one that
// failed its first dial) counts as absent for that call too; only when no
// branch answers does the call fail, with that error. The union
// implements remote.Health: Up while any branch is up, and Changed fires
// when the set of branches that are up changes (not on every reconnect of
// a host's channels), after the union has dropped what it learned under
// the old set, so that the layer above can drop its caches too. With no
// branch up, calls fail with EIO.
//
// # Grafts
//
// NewGraft shows each graft's namespace as the directory NAME at the root
// of a base namespace (or of an otherwise empty, read-only root). A graft
// name shadows a name of the base's root: the base's entry of that name,
// and everything below it, cannot be reached. Paths below NAME go to the
// graft with the prefix removed. A graft whose namespace is down
// (remote.Health) still shows in the root listing, with the root's
// synthetic attributes, and answers EIO inside. A graft itself cannot be
// removed, renamed or replaced (EBUSY) and its name cannot be created
// again (EEXIST); renames and links between a graft and anything else fail
// with EXDEV. Without a base, the root holds only the grafts: creating a
// name there fails with EACCES. ListTree of the root lists the base and
// every graft in parallel; below a graft's name it is the graft's own. The graft namespace implements
// remote.Health over the base and the grafts, and passes on every change a
// union or graft among them reports.
package namespace
