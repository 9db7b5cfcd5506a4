package collective_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"testing"
	"time"

	"github.com/boltmesh/boltmesh/engine"
	"github.com/boltmesh/boltmesh/engine/collective"
	"github.com/boltmesh/boltmesh/internal/meshtest"
	"github.com/boltmesh/boltmesh/internal/racedetect"
)

// TestMatrixStar runs the collective matrix (every collective, dtype and
// op) over star transports of 3, 4 and 5 ranks: AllReduce takes the star
// algorithm (reduce at the coordinator, then broadcast), the others run
// their usual schedules with worker-to-worker messages forwarded by the
// coordinator.
func TestMatrixStar(t *testing.T) {
	for _, n := range []int{3, 4, 5} {
		ts := meshtest.Star(t, n, engine.Options{})
		cs := make([]*collective.Comm, n)
		for r, tr := range ts {
			cs[r] = mustNew(t, tr, collective.Options{})
		}
		for _, length := range []int{0, 1, 7, 1000, 100003} {
			t.Run(fmt.Sprintf("n=%d/len=%d", n, length), func(t *testing.T) {
				if err := onAll(n, func(r int) error { return matrixRank(cs[r], r, n, length) }); err != nil {
					t.Fatal(err)
				}
			})
		}
	}
}

// TestStarPieces: a star's allreduce of more than a piece (Options.Chunk)
// goes in pieces, over plain and sealed links, and gives every rank the
// reduction, with the same bits,
// for lengths that end in a short piece, one piece and a byte, and many
// pieces, with sums whose order matters in float32.
func TestStarPieces(t *testing.T) {
	for _, link := range []meshtest.Link{meshtest.Links[2], meshtest.Links[3]} { // a star's links: TCP, plain and sealed
		t.Run(link.Name, func(t *testing.T) { starPieces(t, link.Opts) })
	}
}

func starPieces(t *testing.T, opts engine.Options) {
	const n = 4
	ts := meshtest.Star(t, n, opts)
	cs := make([]*collective.Comm, n)
	for r, tr := range ts {
		cs[r] = mustNew(t, tr, collective.Options{Chunk: 4 << 10})
	}
	for _, length := range []int{1024, 1025, 1<<10*40 + 3, 1 << 18} { // float32: 1 piece, 1 piece and an element, 40 and a bit, 256
		t.Run(fmt.Sprint(length), func(t *testing.T) {
			bufs := make([][]float32, n)
			for r := range bufs {
				bufs[r] = make([]float32, length)
				for i := range bufs[r] {
					bufs[r][i] = float32(i%1000)*0.1 + float32(r)*1e-3 + 1e5*float32(r%2)
				}
			}
			if err := onAll(n, func(r int) error { return collective.AllReduce(cs[r], bufs[r], collective.Sum) }); err != nil {
				t.Fatal(err)
			}
			for i := range length {
				var want float32
				for r := range n { // the center's first, then the workers' in rank order
					want += float32(i%1000)*0.1 + float32(r)*1e-3 + 1e5*float32(r%2)
				}
				for r := range n {
					if math.Float32bits(bufs[r][i]) != math.Float32bits(want) {
						t.Fatalf("rank %d element %d: %v, want %v (bits %#x, %#x)", r, i, bufs[r][i], want, math.Float32bits(bufs[r][i]), math.Float32bits(want))
					}
				}
			}
		})
	}
}

// TestStarPiecesLengthMismatch: ranks of a star that pass lengths in
// pieces that differ, by a piece or by a byte, fail, every one, with a
// length mismatch or the abandon it causes, instead of waiting.
func TestStarPiecesLengthMismatch(t *testing.T) {
	const n = 3
	ts := meshtest.Star(t, n, engine.Options{})
	cs := make([]*collective.Comm, n)
	for r, tr := range ts {
		cs[r] = mustNew(t, tr, collective.Options{Chunk: 4 << 10})
	}
	for _, tc := range []struct {
		name string
		odd  int // the rank whose length differs
		diff int // its length minus the others'
	}{{"worker-short-by-a-piece", 2, -1024}, {"worker-long-by-a-piece", 1, 1024}, {"center-short-by-an-element", 0, -1}, {"center-long-by-a-piece", 0, 1024}, {"worker-long-by-an-element", 2, 1}, {"worker-short-by-an-element", 1, -1}} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			errs := make([]error, n)
			var wg sync.WaitGroup
			for r := range n {
				wg.Go(func() {
					length := 8 << 10
					if r == tc.odd {
						length += tc.diff
					}
					errs[r] = cs[r].AllReduceBytes(ctx, collective.Float32, collective.AsBytes(make([]float32, length)), collective.Sum)
				})
			}
			wg.Wait()
			for r, err := range errs {
				switch {
				case errors.Is(err, context.DeadlineExceeded):
					t.Fatalf("rank %d waited until its ctx ended: %v", r, err)
				case !errors.Is(err, collective.ErrLengthMismatch) && !errors.Is(err, collective.ErrAbandoned) && !errors.Is(err, engine.ErrTruncated):
					t.Fatalf("rank %d: %v, want a length mismatch or ErrAbandoned", r, err)
				}
			}
			// The next call works on every rank.
			if err := onAll(n, func(r int) error { return collective.AllReduce(cs[r], make([]float32, 8<<10), collective.Sum) }); err != nil {
				t.Fatalf("the call after: %v", err)
			}
		})
	}
}

// TestStarAllReduceSteadyStateAllocs: a star's allreduce, whole and in
// pieces, allocates nothing once warm.
func TestStarAllReduceSteadyStateAllocs(t *testing.T) {
	if racedetect.Enabled {
		t.Skip("allocation counts mean nothing under the race detector: it makes sync.Pool drop items")
	}
	const n = 3
	ts := meshtest.Star(t, n, engine.Options{HeapSize: 1 << 20})
	cs := make([]*collective.Comm, n)
	for r, tr := range ts {
		cs[r] = mustNew(t, tr, collective.Options{})
	}
	allReduceSteadyStateAllocs(t, cs) // 4 KiB whole, 4 MiB in 16 pieces
}

// TestStarPiecesSmallWindow: a star's allreduce in pieces completes with
// the least flow-control windows (MaxQueuedBytes 64 KiB, so that the
// eager limit is a frame.Cost of 16 KiB), in pieces sent eagerly, which
// the window holds 3 (8 KiB) or 7 (4 KiB) of, and by rendezvous, with the
// reduction on every rank. A worker with more eager pieces in flight than
// the center's window holds, while the center's results fill its own,
// would wait for the center as the center waits for it (starWindow).
func TestStarPiecesSmallWindow(t *testing.T) {
	const n = 5
	ts := meshtest.Star(t, n, engine.Options{MaxQueuedBytes: 64 << 10})
	for _, chunk := range []int{4 << 10, 8 << 10, 16 << 10, 64 << 10} { // eager, eager, past the limit (frame.Cost adds a header), rendezvous
		t.Run(fmt.Sprint(chunk), func(t *testing.T) {
			cs := make([]*collective.Comm, n)
			for r, tr := range ts {
				cs[r] = mustNew(t, tr, collective.Options{Chunk: chunk})
			}
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			const length = 1<<19 + 7 // float32: 2 MiB and a bit
			bufs := make([][]float32, n)
			err := onAll(n, func(r int) error {
				bufs[r] = make([]float32, length)
				for i := range bufs[r] {
					bufs[r][i] = float32(r + i%7)
				}
				return cs[r].AllReduceBytes(ctx, collective.Float32, collective.AsBytes(bufs[r]), collective.Sum)
			})
			if err != nil {
				t.Fatal(err)
			}
			for r := range n {
				for i := range length {
					if want := float32(n*(n-1)/2 + n*(i%7)); bufs[r][i] != want {
						t.Fatalf("rank %d element %d: %v, want %v", r, i, bufs[r][i], want)
					}
				}
			}
		})
	}
}
