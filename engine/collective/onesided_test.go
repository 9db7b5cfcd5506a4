package collective_test

import (
	"context"
	"errors"
	"fmt"
	"github.com/boltmesh/boltmesh/internal/racedetect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/boltmesh/boltmesh/engine"
	"github.com/boltmesh/boltmesh/engine/collective"
	"github.com/boltmesh/boltmesh/heap"
	"github.com/boltmesh/boltmesh/internal/meshtest"
	"github.com/boltmesh/boltmesh/internal/plumb"
)

// oneSidedOpts selects the one-sided allreduce.
var oneSidedOpts = collective.Options{Algorithm: collective.AlgorithmOneSided}

// newOneSidedComms builds an n-rank mesh with symmetric heaps of heapSize
// bytes and a one-sided Comm on each rank.
func newOneSidedComms(t testing.TB, n int, heapSize uint64) ([]*engine.NetTransport, []*collective.Comm) {
	t.Helper()
	ts := meshtest.Mesh(t, n, engine.Options{HeapSize: heapSize})
	cs := make([]*collective.Comm, n)
	for r := range n {
		cs[r] = mustNew(t, ts[r], oneSidedOpts)
	}
	t.Cleanup(func() {
		for r := range n {
			cs[r].Close()
		}
	})
	return ts, cs
}

// osWant is the reference v as a dtype holds it (matrixWant without the
// allocation, for the dtypes of TestOneSidedMatrix).
func osWant(dt collective.DType, v float64) float64 {
	if dt == collective.Float32 {
		return float64(float32(v))
	}
	return v
}

// TestOneSidedMatrix checks the one-sided allreduce against the float64
// reference of the collective matrix (small integers, so that the
// comparison is exact): worlds 1 to 8, lengths from empty to uneven
// blocks of a quarter million elements, four dtypes, Sum, Max and Mean.
func TestOneSidedMatrix(t *testing.T) {
	worlds := []int{1, 2, 3, 4, 5, 8}
	lengths := []int{0, 1, 7, 1000, 1<<18 + 3}
	dts := []collective.DType{collective.Float32, collective.Float64, collective.Int32, collective.Int64}
	ops := []collective.Op{collective.Sum, collective.Max, collective.Mean}
	for _, n := range worlds {
		_, cs := newOneSidedComms(t, n, 4<<20)
		for _, length := range lengths {
			t.Run(fmt.Sprintf("n=%d/len=%d", n, length), func(t *testing.T) {
				if length > 1<<16 && testing.Short() {
					t.Skip("-short")
				}
				err := onAll(n, func(r int) error {
					for _, dt := range dts {
						for _, op := range ops {
							data := matrixBuf(dt, length)
							for i := range length {
								matrixPut(dt, data, i, matrixValue(op, r, i))
							}
							if err := cs[r].AllReduceBytes(context.Background(), dt, data, op); err != nil {
								return fmt.Errorf("rank %d %v %v: %w", r, dt, op, err)
							}
							for i := range length {
								if got, want := matrixGet(dt, data, i), osWant(dt, matrixRef(dt, op, n, i)); got != want {
									return fmt.Errorf("rank %d %v %v: element %d: got %v, want %v", r, dt, op, i, got, want)
								}
							}
						}
					}
					return nil
				})
				if err != nil {
					t.Fatal(err)
				}
			})
		}
	}
}

// TestOneSided16 covers the 16-bit floats, which the one-sided path
// reduces with the same kernels.
func TestOneSided16(t *testing.T) {
	const n = 3
	_, cs := newOneSidedComms(t, n, 1<<20)
	for _, dt := range []collective.DType{collective.Float16, collective.BFloat16} {
		for _, length := range []int{5, 5000} {
			err := onAll(n, func(r int) error {
				data := matrixBuf(dt, length)
				for i := range length {
					matrixPut(dt, data, i, matrixValue(collective.Mean, r, i))
				}
				if err := cs[r].AllReduceBytes(context.Background(), dt, data, collective.Mean); err != nil {
					return err
				}
				return matrixCheck(fmt.Sprintf("%v rank %d", dt, r), dt, data, 0, length, func(i int) float64 {
					return matrixRef(dt, collective.Mean, n, i)
				})
			})
			if err != nil {
				t.Fatal(err)
			}
		}
	}
}

// TestOneSidedBitIdentical: float32 sums of random data come out with the
// same bits on every rank.
func TestOneSidedBitIdentical(t *testing.T) {
	for _, n := range []int{2, 3, 4, 5} {
		_, cs := newOneSidedComms(t, n, 1<<20)
		checkBitIdentical(t, cs, []int{100, 100001})
	}
}

// TestOneSidedSteadyStateAllocs: once its heap area exists, a one-sided
// allreduce allocates nothing, at 4 KiB and 4 MiB.
func TestOneSidedSteadyStateAllocs(t *testing.T) {
	if racedetect.Enabled {
		t.Skip("the race detector's sync.Pool drops items at random, so the transport allocates")
	}
	for _, n := range []int{2, 3} {
		_, cs := newOneSidedComms(t, n, 8<<20)
		for _, length := range []int{1 << 10, 1 << 20} { // 4 KiB and 4 MiB of float32
			data := make([][]float32, n)
			for r := range n {
				data[r] = make([]float32, length)
			}
			a := collSteadyAllocs(t, cs, func(r int) error { return collective.AllReduce(cs[r], data[r], collective.Sum) })
			if a != 0 {
				t.Errorf("n=%d, %d float32: %v allocations per one-sided allreduce, want 0", n, length, a)
			}
		}
	}
}

// TestOneSidedHeapTooSmall: a heap area that does not fit fails every
// rank with a *HeapError naming the size needed, and leaves the ranks in
// step: a call that fits works afterwards. Every rank fails alike, so
// none says the call may have completed elsewhere, and none abandons it:
// an abandon could overtake the rank's last part of the agreement that
// found the heap too small, and fail a slower rank with ErrCollAbandoned
// (it did in about 1 round of 10 under the race detector, 8 of 10 with
// the mailbox), so the rounds are repeated.
func TestOneSidedHeapTooSmall(t *testing.T) {
	const n = 2
	_, cs := newOneSidedComms(t, n, 64<<10)
	for round := range 20 {
		err := onAll(n, func(r int) error {
			err := collective.AllReduce(cs[r], make([]float32, 1<<18), collective.Sum)
			var he *collective.HeapError
			switch {
			case !errors.As(err, &he) || !errors.Is(err, collective.ErrHeapSpace) || !errors.Is(err, heap.ErrNoSpace):
				return fmt.Errorf("round %d, rank %d: got %v, want a *HeapError wrapping heap.ErrNoSpace", round, r, err)
			case he.Need < 1<<20 || !strings.Contains(err.Error(), strconv.FormatUint(he.Need, 10)):
				return fmt.Errorf("round %d, rank %d: %v: need %d, want >= 1 MiB and named", round, r, err, he.Need)
			case errors.Is(err, collective.ErrMayHaveCompleted):
				return fmt.Errorf("round %d, rank %d: %v: every rank fails alike, want no ErrMayHaveCompleted", round, r, err)
			}
			if round == 0 {
				t.Logf("rank %d: %v", r, err)
			}
			return checkOneSidedSum(cs[r], r, n, 1000)
		})
		if err != nil {
			t.Fatal(err)
		}
	}
}

// checkOneSidedSum runs a float64 Sum allreduce of length elements and
// checks it.
func checkOneSidedSum(c *collective.Comm, r, n, length int) error {
	data := make([]float64, length)
	for i := range data {
		data[i] = contribution(r, i)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := c.AllReduceBytes(ctx, collective.Float64, collective.AsBytes(data), collective.Sum); err != nil {
		return fmt.Errorf("rank %d: %w", r, err)
	}
	for i, got := range data {
		if want := reference(collective.Sum, n, i); got != want {
			return fmt.Errorf("rank %d element %d: got %v, want %v", r, i, got, want)
		}
	}
	return nil
}

// TestOneSidedMismatch: ranks that pass different lengths or dtypes fail
// with ErrMismatch (and ErrLengthMismatch for lengths), whether the
// difference shows when the heap area is sized or only in the headers,
// and stay usable.
func TestOneSidedMismatch(t *testing.T) {
	const n = 3
	_, cs := newOneSidedComms(t, n, 1<<20)
	cases := []struct {
		name    string
		call    func(c *collective.Comm, r int) error
		lengths bool
	}{
		{"sizing", func(c *collective.Comm, r int) error {
			return collective.AllReduce(c, make([]float32, 1000+2000*(r%2)), collective.Sum)
		}, true},
		{"header", func(c *collective.Comm, r int) error {
			return collective.AllReduce(c, make([]float32, 999+r%2), collective.Sum)
		}, true},
		{"growth", func(c *collective.Comm, r int) error {
			// Only rank 1 needs a bigger area than the last call's: every
			// rank must still fail, none wait for the others.
			return collective.AllReduce(c, make([]float32, 1000+8000*(r%2)), collective.Sum)
		}, true},
		{"dtype", func(c *collective.Comm, r int) error {
			if r == 1 {
				return collective.AllReduce(c, make([]int32, 1000), collective.Sum)
			}
			return collective.AllReduce(c, make([]float32, 1000), collective.Sum)
		}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := onAll(n, func(r int) error {
				err := tc.call(cs[r], r)
				if !errors.Is(err, collective.ErrMismatch) || tc.lengths && !errors.Is(err, collective.ErrLengthMismatch) {
					return fmt.Errorf("rank %d: got %v, want a mismatch", r, err)
				}
				t.Logf("rank %d: %v", r, err)
				return checkOneSidedSum(cs[r], r, n, 3000)
			})
			if err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestOneSidedPeerLost: with a rank gone, the others' one-sided allreduces
// fail promptly with ErrPeerLost, both when the rank is gone before the
// call and when it goes during it, and every later one fails with
// ErrOneSidedFailed (still wrapping ErrPeerLost). Other collectives of the
// Comm are unaffected by the retired heap path.
func TestOneSidedPeerLost(t *testing.T) {
	for _, during := range []bool{false, true} {
		t.Run(fmt.Sprintf("during=%v", during), func(t *testing.T) {
			const n, victim = 3, 2
			ts, cs := newOneSidedComms(t, n, 1<<20)
			if err := onAll(n, func(r int) error { return checkOneSidedSum(cs[r], r, n, 1000) }); err != nil {
				t.Fatal(err)
			}
			if !during {
				ts[victim].Close()
			}
			results := make(chan error, victim)
			for r := range victim {
				go func() { results <- collective.AllReduce(cs[r], make([]float32, 1000), collective.Sum) }()
			}
			if during {
				time.Sleep(50 * time.Millisecond) // the survivors wait in the first barrier
				ts[victim].Close()
			}
			for range victim {
				select {
				case err := <-results:
					if !errors.Is(err, engine.ErrPeerLost) {
						t.Fatalf("got %v, want ErrPeerLost", err)
					}
				case <-time.After(10 * time.Second):
					t.Fatal("one-sided allreduce still blocked 10 s after a rank went")
				}
			}
			for r := range victim {
				err := collective.AllReduce(cs[r], make([]float32, 10), collective.Sum)
				if !errors.Is(err, collective.ErrOneSidedFailed) || !errors.Is(err, engine.ErrPeerLost) {
					t.Errorf("rank %d, next call: got %v, want ErrOneSidedFailed wrapping ErrPeerLost", r, err)
				}
			}
		})
	}
}

// TestOneSidedFailureRetires: a call that gives up (its ctx ends) on some
// ranks retires the one-sided path of each Comm it failed on; the later
// calls fail with ErrOneSidedFailed rather than mix their heap traffic
// with the failed call's, and the two-sided collectives still work.
func TestOneSidedFailureRetires(t *testing.T) {
	const n = 2
	_, cs := newOneSidedComms(t, n, 1<<20)
	if err := onAll(n, func(r int) error { return checkOneSidedSum(cs[r], r, n, 100) }); err != nil {
		t.Fatal(err)
	}
	err := onAll(n, func(r int) error {
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		defer cancel()
		if r == 0 {
			var c0 context.CancelFunc
			ctx, c0 = context.WithCancel(ctx)
			c0() // rank 0 gives up at once; rank 1 waits for it in vain
		}
		// Rank 1's call ends with its ctx, or sooner with ErrAbandoned
		// if it got past the first barrier to where rank 0's abandon of
		// the call reaches it.
		err := cs[r].AllReduceBytes(ctx, collective.Float32, make([]byte, 400), collective.Sum)
		if !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded) && (r == 0 || !errors.Is(err, collective.ErrAbandoned)) {
			return fmt.Errorf("rank %d: got %v, want the ctx's error", r, err)
		}
		err = collective.AllReduce(cs[r], make([]float32, 100), collective.Sum)
		if !errors.Is(err, collective.ErrOneSidedFailed) {
			return fmt.Errorf("rank %d, next call: got %v, want ErrOneSidedFailed", r, err)
		}
		if err := cs[r].FreeHeap(context.Background()); !errors.Is(err, collective.ErrOneSidedFailed) {
			return fmt.Errorf("rank %d, FreeHeap: got %v, want ErrOneSidedFailed", r, err)
		}
		data := make([]float32, 100)
		data[0] = float32(r)
		bctx, bcancel := context.WithTimeout(context.Background(), 20*time.Second) // a rank that failed above does not come
		defer bcancel()
		if err := cs[r].BroadcastBytes(bctx, 1, collective.AsBytes(data)); err != nil {
			return fmt.Errorf("rank %d, Broadcast: %w", r, err)
		}
		if data[0] != 1 {
			return fmt.Errorf("rank %d, Broadcast: got %v, want 1", r, data[0])
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestOneSidedFreeHeap: FreeHeap returns the heap area to the heap,
// and the next call allocates it again, at the same offset everywhere.
func TestOneSidedFreeHeap(t *testing.T) {
	const n = 3
	ts, cs := newOneSidedComms(t, n, 1<<20)
	for round := range 2 {
		if err := onAll(n, func(r int) error { return checkOneSidedSum(cs[r], r, n, 5000) }); err != nil {
			t.Fatal(err)
		}
		for r := range n {
			if ts[r].Heap().InUse() == 0 {
				t.Fatalf("round %d: rank %d has no heap area", round, r)
			}
		}
		if err := onAll(n, func(r int) error { return cs[r].FreeHeap(context.Background()) }); err != nil {
			t.Fatal(err)
		}
		for r := range n {
			if u := ts[r].Heap().InUse(); u != 0 {
				t.Fatalf("round %d: rank %d has %d bytes in use after FreeHeap", round, r, u)
			}
		}
	}
}

// TestOneSidedSelection: the one-sided algorithm needs a symmetric heap,
// and an unknown algorithm is refused.
func TestOneSidedSelection(t *testing.T) {
	ts := meshtest.Mesh(t, 1, engine.Options{HeapSize: 1 << 20})
	wire, _ := plumb.WireOf(ts[0])
	plain := mustNew(t, struct {
		collective.Transport
		plumb.Wire
	}{ts[0], wire}, oneSidedOpts)
	if err := collective.AllReduce(plain, make([]float32, 4), collective.Sum); !errors.Is(err, collective.ErrNoSymmetricHeap) {
		t.Errorf("one-sided over a plain transport: got %v, want ErrNoSymmetricHeap", err)
	}
	bad := mustNew(t, ts[0], collective.Options{Algorithm: 99})
	if err := collective.AllReduce(bad, make([]float32, 4), collective.Sum); !errors.Is(err, collective.ErrAlgorithm) {
		t.Errorf("Algorithm 99: got %v, want ErrAlgorithm", err)
	}
	for _, a := range []collective.Algorithm{collective.AlgorithmAuto, collective.AlgorithmDoubling, collective.AlgorithmRing} {
		c := mustNew(t, ts[0], collective.Options{Algorithm: a})
		data := []float32{1, 2, 3}
		if err := collective.AllReduce(c, data, collective.Mean); err != nil || data[2] != 3 {
			t.Errorf("%v over 1 rank: %v %v", a, data, err)
		}
	}
}

// TestOneSidedExplicitAlgorithms: the two-sided algorithms forced at
// every size agree with the reference too (they are what Auto picks
// from).
func TestOneSidedExplicitAlgorithms(t *testing.T) {
	for _, a := range []collective.Algorithm{collective.AlgorithmDoubling, collective.AlgorithmRing} {
		cs := newComms(t, 3, collective.Options{Algorithm: a})
		for _, length := range []int{0, 5, 1000} {
			if err := onAll(3, func(r int) error { return checkOneSidedSum(cs[r], r, 3, length) }); err != nil {
				t.Fatalf("%v len %d: %v", a, length, err)
			}
		}
	}
}
