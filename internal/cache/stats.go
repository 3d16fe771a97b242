package cache

import "sync/atomic"

// Stats counts how often kept listings spared a round trip to the remote,
// since the cache was made. Zero everywhere when the cache is disabled.
type Stats struct {
	Enabled bool
	// ListingHits counts lookups and directory reads that found a fresh
	// listing of their directory; ListingMisses those that had to list it
	// (or wait for a listing under way).
	ListingHits, ListingMisses uint64
	// AttrHits counts questions about one name (lookups, and stats of a
	// known path) answered with attributes from a listing; AttrMisses those
	// the listing could not answer, which went to the remote.
	AttrHits, AttrMisses uint64
	// NegativeHits counts lookups answered "no such file" by a listing.
	NegativeHits uint64
}

// counters are the live values behind Stats; atomic so that reading them
// never takes the cache's lock.
type counters struct {
	listingHits, listingMisses atomic.Uint64
	attrHits, attrMisses       atomic.Uint64
	negativeHits               atomic.Uint64
}

// kept counts an answer about one name from a fresh listing: st is what
// the listing said (Unknown: the entry's attributes are stale).
func (c *counters) kept(st State) {
	c.listingHits.Add(1)
	c.answered(st, true)
}

// answered counts an answer about one name given without a round trip;
// absentIsHit says whether an Absent answer ends the question (a lookup)
// or sends the caller to the remote anyway (a stat of a known path).
func (c *counters) answered(st State, absentIsHit bool) {
	switch {
	case st == Hit:
		c.attrHits.Add(1)
	case st == Absent && absentIsHit:
		c.negativeHits.Add(1)
	default:
		c.attrMisses.Add(1)
	}
}

// fetched counts a lookup that needed a listing it did not have.
func (c *counters) fetched() {
	c.listingMisses.Add(1)
	c.attrMisses.Add(1)
}

// Stats returns the counters.
func (d *Dirs) Stats() Stats {
	if d == nil {
		return Stats{}
	}
	c := &d.count
	return Stats{
		Enabled:       d.Enabled(),
		ListingHits:   c.listingHits.Load(),
		ListingMisses: c.listingMisses.Load(),
		AttrHits:      c.attrHits.Load(),
		AttrMisses:    c.attrMisses.Load(),
		NegativeHits:  c.negativeHits.Load(),
	}
}
