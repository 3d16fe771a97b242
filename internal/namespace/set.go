package namespace

import (
	"iter"
	"math/bits"
)

// maxBranches bounds a union's branches: a set of them is one machine word.
const maxBranches = 64

// set is a set of branch indices. Ascending order is priority order: the
// lowest index is the highest branch.
type set uint64

func (s set) has(i int) bool    { return s&(1<<uint(i)) != 0 }
func (s set) with(i int) set    { return s | 1<<uint(i) }
func (s set) without(i int) set { return s &^ (1 << uint(i)) }
func (s set) len() int          { return bits.OnesCount64(uint64(s)) }

// first returns the highest branch of s, or -1 when s is empty.
func (s set) first() int {
	if s == 0 {
		return -1
	}
	return bits.TrailingZeros64(uint64(s))
}

// all yields the members of s in priority order.
func (s set) all() iter.Seq[int] {
	return func(yield func(int) bool) {
		for r := s; r != 0; r &= r - 1 {
			if !yield(bits.TrailingZeros64(uint64(r))) {
				return
			}
		}
	}
}

// below returns the members of s after branch i.
func (s set) below(i int) set { return s &^ (2<<uint(i) - 1) }
