package collective

import (
	"context"
	"fmt"

	"github.com/boltmesh/boltmesh/engine"
)

// Alloc is the transport's Alloc called by every rank together: each
// rank allocates size bytes aligned to align (0: heap.DefaultAlign) in
// its symmetric heap, then the ranks compare what they got, all of it,
// with an AllGather. If any rank's allocation failed or differs from this
// rank's, every rank frees its own and fails: with its own allocation's
// error, or with an *AllocMismatchError naming the first rank whose
// allocation differs (ranks that made different sequences of Alloc and
// Free calls). Like every collective, all ranks must call it in the same
// order. It fails with ErrNoSymmetricHeap over a transport without a
// symmetric heap.
func (c *Comm) Alloc(ctx context.Context, size, align uint64) (engine.SymmetricBuffer, error) {
	if c.sym == nil {
		return engine.SymmetricBuffer{}, fmt.Errorf("boltmesh: collective: Alloc over a %T: %w", c.t, ErrNoSymmetricHeap)
	}
	b, aerr := c.sym.Alloc(size, align)
	n := c.t.WorldSize()
	mine := allocRecord(b, aerr)
	all := make([]int64, allocFields*n)
	counts := make([]int, n)
	for r := range counts {
		counts[r] = allocFields
	}
	err := c.AllGatherBytes(ctx, Int64, AsBytes(mine[:]), AsBytes(all), counts)
	if err == nil {
		err = aerr
	}
	if err == nil {
		err = allocAgree(b, mine, all)
	}
	if err != nil {
		if aerr == nil {
			c.sym.Free(b)
		}
		return engine.SymmetricBuffer{}, err
	}
	return b, nil
}

// allocFields is the size of a rank's allocation record, in int64s: ok
// (1 if its Alloc succeeded), offset, length.
const allocFields = 3

// allocRecord is b's record, or a failed one.
func allocRecord(b engine.SymmetricBuffer, err error) [allocFields]int64 {
	if err != nil {
		return [allocFields]int64{}
	}
	return [allocFields]int64{1, int64(b.Offset), int64(b.Len)}
}

// allocAgree returns nil if every rank's record in all is mine, or an
// *AllocMismatchError naming the first that is not; b is this rank's
// allocation.
func allocAgree(b engine.SymmetricBuffer, mine [allocFields]int64, all []int64) error {
	for r := range len(all) / allocFields {
		var theirs [allocFields]int64
		copy(theirs[:], all[r*allocFields:])
		if theirs != mine {
			other := engine.SymmetricBuffer{Rank: r}
			if theirs[0] == 1 {
				other.Offset, other.Len = uint64(theirs[1]), uint64(theirs[2])
			}
			return &AllocMismatchError{Rank: r, Failed: theirs[0] != 1, Local: b, Remote: other}
		}
	}
	return nil
}
