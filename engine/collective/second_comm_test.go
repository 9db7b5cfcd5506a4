package collective_test

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"sync"
	"testing"
	"time"

	"github.com/boltmesh/boltmesh/engine"
	"github.com/boltmesh/boltmesh/engine/collective"
	"github.com/boltmesh/boltmesh/internal/meshtest"
)

// TestSecondComm: two Comms over one transport, with other options, work
// side by side when every rank makes the same calls in the same order,
// whichever Comm makes them: here one Comm's calls run ahead of the
// other's, and a slow rank is still in one Comm's call when its peers'
// messages for the other Comm's next call arrive. Before the Comms shared
// their sequence of calls, those messages belonged to a call the slow
// rank had "left behind" by number and were dropped: its call waited
// until its ctx ended.
func TestSecondComm(t *testing.T) {
	const n = 3
	ts := meshtest.Mesh(t, n, engine.Options{})
	errs := make([]error, n)
	var wg sync.WaitGroup
	for r := range n {
		wg.Go(func() { errs[r] = secondCommRank(ts[r]) })
	}
	wg.Wait()
	for r, err := range errs {
		if err != nil {
			t.Errorf("rank %d: %v", r, err)
		}
	}
}

// secondCommRank is one rank of TestSecondComm.
func secondCommRank(tr *engine.NetTransport) error {
	a, err := collective.New(tr, collective.Options{})
	if err != nil {
		return err
	}
	defer a.Close()
	b, err := collective.New(tr, collective.Options{Algorithm: collective.AlgorithmRing, Chunk: 4 << 10})
	if err != nil {
		return err
	}
	defer b.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	rank, world := tr.Rank(), tr.WorldSize()
	for round := range 4 {
		for i := range 3 {
			if err := sumCheck(ctx, a, rank, world, 64, round*10+i); err != nil {
				return err
			}
		}
		if rank == round%world {
			time.Sleep(30 * time.Millisecond) // the others' calls on b arrive while this rank is in a's
		}
		if err := sumCheck(ctx, b, rank, world, 16<<10, 1000+round); err != nil {
			return err
		}
	}
	return nil
}

// sumCheck runs an allreduce of a float32 Sum over elems elements on c,
// each rank contributing rank+seed+element index, and checks the result.
func sumCheck(ctx context.Context, c *collective.Comm, rank, world, elems, seed int) error {
	data := make([]byte, 4*elems)
	for i := range elems {
		binary.LittleEndian.PutUint32(data[4*i:], math.Float32bits(float32(rank+seed+i)))
	}
	if err := c.AllReduceBytes(ctx, collective.Float32, data, collective.Sum); err != nil {
		return err
	}
	for i := range elems {
		want := float32(world*(seed+i) + world*(world-1)/2)
		if got := math.Float32frombits(binary.LittleEndian.Uint32(data[4*i:])); got != want {
			return fmt.Errorf("allreduce seed %d element %d: got %v, want %v", seed, i, got, want)
		}
	}
	return nil
}
