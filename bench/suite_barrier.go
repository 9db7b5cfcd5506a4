package bench

import (
	"encoding/binary"
	"errors"
)

// The barrier suite times Barrier across all ranks. It moves no payload;
// after the loop it checks what a barrier promises: each rank puts a value
// into its right neighbour's region, quiets, enters a barrier, and then
// must find its left neighbour's value in its own region.
func init() {
	Register(&Suite{
		Name:       "barrier",
		Doc:        "barrier latency across all ranks",
		FixedSizes: []int{0},
		MinRanks:   2,
		Ops:        []Op{{Name: "barrier", Start: startBarrier}},
	})
}

type barrier struct {
	ep  Endpoint
	reg Region
}

func startBarrier(c *Case) (Body, error) {
	reg, err := c.EP.NewRegion(8)
	if err != nil {
		return nil, err
	}
	return &barrier{ep: c.EP, reg: reg}, nil
}

// Iter implements Body.
func (b *barrier) Iter(int) error { return b.ep.Barrier() }

// Finish checks that a barrier orders a put before it with a read after it
// on another rank, and frees the region.
// With no iterations (a case that failed to start on another rank) it only
// frees: the check is collective.
func (b *barrier) Finish(iters int) error {
	var err error
	if iters > 0 {
		err = b.checkOrder(iters)
	}
	return errors.Join(err, b.reg.Free())
}

func (b *barrier) checkOrder(iters int) error {
	r, n := b.ep.Rank(), b.ep.Ranks()
	var v [8]byte
	binary.LittleEndian.PutUint64(v[:], barrierToken(r, iters))
	if err := b.reg.Put((r+1)%n, v[:]); err != nil {
		return err
	}
	if err := b.reg.Quiet(); err != nil {
		return err
	}
	if err := b.ep.Barrier(); err != nil {
		return err
	}
	if err := b.reg.Load(v[:]); err != nil {
		return err
	}
	left := (r - 1 + n) % n
	if got, want := binary.LittleEndian.Uint64(v[:]), barrierToken(left, iters); got != want {
		return checkErr(r, "after a barrier, rank %d's put holds %#x, want %#x", left, got, want)
	}
	return nil
}

func barrierToken(rank, iters int) uint64 { return uint64(rank)<<32 | uint64(iters) | 1<<63 }
