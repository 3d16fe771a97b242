package transport

import (
	"context"
	"errors"
	"os"
	"syscall"
)

// Changes by path lost with their channel. Host.do never sends a mutation
// twice: a request caught by a dropped link may or may not have been made,
// and it fails with ENOTCONN. Where a look at the server tells the outcome,
// the change is settled instead, as NFS clients do with a retransmitted
// request: an unlink whose name is found gone was made (ENOENT after a
// cut means it went through); a mkdir whose directory is found was made
// (its permissions are set again, in case the lost request had not come
// to that); a rename whose old name is gone and whose
// new name exists was made; a name still there means the change was not
// made, and it is sent again. The look cannot tell this change from the
// same change made by someone else meanwhile (both leave the name as the
// caller asked), nor a change not made from one made and undone by
// someone else at once (an unlinked name created again): the same races
// a local caller retrying after EINTR would run. Anything else (both names gone after a rename) stays
// ENOTCONN.

// maxResends bounds how often a change lost with its channel is sent again.
const maxResends = 3

// lostInFlight reports whether err is a mutation lost with its channel
// (Host.do's transportErr), not an answer or the end of the wait.
func lostInFlight(err error) bool {
	return err != nil && !isAnswer(err) && !gaveUp(err) && errors.Is(err, syscall.ENOTCONN)
}

// verdict is what a look at the server says of a change lost in flight.
type verdict int

const (
	untold verdict = iota
	wasMade
	notMade
)

// changeTold runs fn as a mutation; when it is lost in flight, look tells
// whether it was made: then it succeeded, or it is sent again.
func (r hostRemote) changeTold(ctx context.Context, fn func(c *channel) error, look func(ctx context.Context) verdict) error {
	// One call deadline for the change, its looks and its resends: in a
	// stall each of them would otherwise wait a timeout of its own, and
	// the caller several.
	ctx, cancel := context.WithDeadline(ctx, r.h.deadline(ctx))
	defer cancel()
	var err error
	for range maxResends + 1 {
		err = r.h.do(ctx, mutation, fn)
		if !lostInFlight(err) {
			return err
		}
		switch look(ctx) {
		case wasMade:
			r.h.log.Info("a change lost with its connection was found made", "host", r.h.o.Host)
			return nil
		case untold:
			return err
		}
	}
	return err
}

// nameState is what a look up of a name found.
type nameState int

const (
	nameUntold nameState = iota // the look up failed
	nameThere
	nameGone
)

// named looks up p without following a link.
func (r hostRemote) named(ctx context.Context, p string) nameState {
	_, err := r.stat(ctx, p, false)
	switch {
	case err == nil:
		return nameThere
	case statusCode(err) == fxNoSuchFile:
		return nameGone
	}
	return nameUntold
}

// removeOutcome: an unlink was made if the name is gone, not made if it
// is there.
func (r hostRemote) removeOutcome(p string) func(context.Context) verdict {
	return func(ctx context.Context) verdict {
		switch r.named(ctx, p) {
		case nameGone:
			return wasMade
		case nameThere:
			return notMade
		}
		return untold
	}
}

// renameOutcome: a rename was made if the old name is gone and the new
// one is there, and not made if the old name is still there.
func (r hostRemote) renameOutcome(oldp, newp string) func(context.Context) verdict {
	return func(ctx context.Context) verdict {
		switch r.named(ctx, oldp) {
		case nameThere:
			return notMade
		case nameGone:
			if r.named(ctx, newp) == nameThere {
				return wasMade
			}
		}
		return untold
	}
}

// mkdirOutcome: a mkdir was made if a directory has the name (its
// permissions are then set, as the lost request may not have), not made
// if nothing has it.
func (r hostRemote) mkdirOutcome(p string, perm uint32) func(context.Context) verdict {
	return func(ctx context.Context) verdict {
		a, err := r.stat(ctx, p, false)
		switch {
		case statusCode(err) == fxNoSuchFile:
			return notMade
		case err != nil || a.Mode&syscall.S_IFMT != syscall.S_IFDIR:
			return untold
		}
		abs := r.abs(p)
		err = r.h.do(ctx, idempotent, func(c *channel) error {
			return c.client.Chmod(abs, os.FileMode(perm&07777))
		})
		if err != nil {
			return untold
		}
		return wasMade
	}
}
