package collective_test

import (
	"errors"
	"fmt"
	"github.com/boltmesh/boltmesh/internal/racedetect"
	"math"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/boltmesh/boltmesh/engine"
	"github.com/boltmesh/boltmesh/engine/collective"
	"github.com/boltmesh/boltmesh/internal/meshtest"
)

// mustNew is collective.New that fails the test on an error.
func mustNew(t testing.TB, tr collective.Transport, opts collective.Options) *collective.Comm {
	t.Helper()
	c, err := collective.New(tr, opts)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// newComms builds an n-rank mesh in this process and a Comm on each rank.
func newComms(t testing.TB, n int, opts collective.Options) []*collective.Comm {
	t.Helper()
	return newCommsOn(t, n, engine.Options{HeapSize: 1 << 20}, opts)
}

// newCommsOn is newComms with the transports' options.
func newCommsOn(t testing.TB, n int, topts engine.Options, opts collective.Options) []*collective.Comm {
	t.Helper()
	ts := meshtest.Mesh(t, n, topts)
	cs := make([]*collective.Comm, n)
	for r := range n {
		cs[r] = mustNew(t, ts[r], opts)
	}
	t.Cleanup(func() { // before the transports' cleanup, which Mesh registered first
		for r := range n {
			cs[r].Close()
		}
	})
	return cs
}

// onAll runs f on every rank at once and returns the ranks' errors joined.
func onAll(n int, f func(r int) error) error {
	errs := make([]error, n)
	var wg sync.WaitGroup
	for r := range n {
		wg.Go(func() { errs[r] = f(r) })
	}
	wg.Wait()
	return errors.Join(errs...)
}

// contribution is rank r's input: small integers, exact in every type.
func contribution(r, i int) float64 {
	return float64((r*7+i*13)%19 - 9)
}

func reference(op collective.Op, n, i int) float64 {
	acc := contribution(0, i)
	for r := 1; r < n; r++ {
		v := contribution(r, i)
		switch op {
		case collective.Sum, collective.Mean:
			acc += v
		case collective.Prod:
			acc *= v
		case collective.Max:
			acc = math.Max(acc, v)
		case collective.Min:
			acc = math.Min(acc, v)
		}
	}
	if op == collective.Mean {
		acc /= float64(n)
	}
	return acc
}

func checkAllReduce[T collective.Elem](t *testing.T, cs []*collective.Comm, op collective.Op, length int) {
	n := len(cs)
	err := onAll(n, func(r int) error {
		data := make([]T, length)
		for i := range data {
			data[i] = T(contribution(r, i))
		}
		if err := collective.AllReduce(cs[r], data, op); err != nil {
			return err
		}
		for i, got := range data {
			want := reference(op, n, i)
			if _, isInt := any(got).(int32); isInt || isInt64(got) {
				if op == collective.Mean {
					want = math.Trunc(want)
				}
				if op == collective.Prod { // wraps; compare in the type
					want = float64(T(want))
				}
			}
			if float64(got) != want && math.Abs(float64(got)-want) > 1e-6*math.Abs(want) {
				return fmt.Errorf("rank %d element %d: got %v, want %v", r, i, got, want)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func isInt64(v any) bool { _, ok := v.(int64); return ok }

func TestAllReduceWorldsOpsTypes(t *testing.T) {
	lengths := []int{0, 1, 7, 1000, 1<<16 + 3}
	ops := []collective.Op{collective.Sum, collective.Mean, collective.Max, collective.Min, collective.Prod}
	for _, n := range []int{1, 2, 3, 4, 5, 8} {
		cs := newComms(t, n, collective.Options{RingMin: 4 << 10})
		for _, length := range lengths {
			for _, op := range ops {
				name := fmt.Sprintf("n=%d/len=%d/%v", n, length, op)
				t.Run(name+"/float32", func(t *testing.T) { checkAllReduce[float32](t, cs, op, length) })
				t.Run(name+"/float64", func(t *testing.T) { checkAllReduce[float64](t, cs, op, length) })
				t.Run(name+"/int32", func(t *testing.T) { checkAllReduce[int32](t, cs, op, length) })
				t.Run(name+"/int64", func(t *testing.T) { checkAllReduce[int64](t, cs, op, length) })
			}
		}
	}
}

// TestAllReduceBitIdentical: float32 sums of random data come out with the
// same bits on every rank, by both algorithms.
func TestAllReduceBitIdentical(t *testing.T) {
	for _, n := range []int{3, 4, 5} {
		checkBitIdentical(t, newComms(t, n, collective.Options{RingMin: 4 << 10}), []int{100, 100000})
	}
}

// checkBitIdentical runs a float32 Sum allreduce of random data of each
// length on every Comm of cs and fails unless every rank ends with the
// same bits.
func checkBitIdentical(t *testing.T, cs []*collective.Comm, lengths []int) {
	t.Helper()
	n := len(cs)
	for _, length := range lengths {
		results := make([][]float32, n)
		err := onAll(n, func(r int) error {
			rng := rand.New(rand.NewPCG(uint64(r), uint64(length)))
			data := make([]float32, length)
			for i := range data {
				data[i] = float32(rng.NormFloat64() * 1e3)
			}
			results[r] = data
			return collective.AllReduce(cs[r], data, collective.Sum)
		})
		if err != nil {
			t.Fatal(err)
		}
		for r := 1; r < n; r++ {
			for i := range results[0] {
				if math.Float32bits(results[r][i]) != math.Float32bits(results[0][i]) {
					t.Fatalf("n=%d len=%d: rank %d element %d differs from rank 0", n, length, r, i)
				}
			}
		}
	}
}

func TestAllReduce16(t *testing.T) {
	cs := newComms(t, 3, collective.Options{RingMin: 1 << 10})
	for _, dt := range []collective.DType{collective.Float16, collective.BFloat16} {
		for _, length := range []int{5, 5000} {
			err := onAll(3, func(r int) error {
				data := make([]uint16, length)
				to16 := collective.F32ToF16
				from16 := collective.F16ToF32
				if dt == collective.BFloat16 {
					to16, from16 = collective.F32ToBF16, collective.BF16ToF32
				}
				for i := range data {
					data[i] = to16(float32(contribution(r, i)))
				}
				if err := collective.AllReduce16(cs[r], dt, data, collective.Sum); err != nil {
					return err
				}
				for i := range data {
					if got, want := from16(data[i]), reference(collective.Sum, 3, i); float64(got) != want {
						return fmt.Errorf("%v rank %d element %d: got %v want %v", dt, r, i, got, want)
					}
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
		}
	}
}

func TestAllReduceLengthMismatch(t *testing.T) {
	cs := newComms(t, 2, collective.Options{})
	err := onAll(2, func(r int) error {
		return collective.AllReduce(cs[r], make([]float32, 10+r), collective.Sum)
	})
	if !errors.Is(err, collective.ErrLengthMismatch) && !errors.Is(err, engine.ErrTruncated) {
		t.Fatalf("got %v, want a length mismatch", err)
	}
}

// TestAllReduceSteadyStateAllocs: an allreduce allocates nothing once
// warm, between neighbours over shared memory and over loopback TCP.
func TestAllReduceSteadyStateAllocs(t *testing.T) {
	if racedetect.Enabled {
		t.Skip("allocation counts mean nothing under the race detector: it makes sync.Pool drop items")
	}
	for _, link := range meshtest.Links {
		t.Run(link.Name, func(t *testing.T) {
			o := link.Opts
			o.HeapSize = 1 << 20
			allReduceSteadyStateAllocs(t, newCommsOn(t, 2, o, collective.Options{}))
		})
	}
}

// allReduceSteadyStateAllocs checks that an allreduce over cs, whole and
// in pieces, allocates nothing once warm (collSteadyAllocs).
func allReduceSteadyStateAllocs(t *testing.T, cs []*collective.Comm) {
	for _, length := range []int{1 << 10, 1 << 20} { // 4 KiB and 4 MiB of float32
		bufs := make([][]float32, len(cs))
		for r := range bufs {
			bufs[r] = make([]float32, length)
		}
		call := func(r int) error { return collective.AllReduce(cs[r], bufs[r], collective.Sum) }
		// AllocsPerRun counts the whole process's allocations: a run that
		// spans a heartbeat tick, or in which a loaded machine's timing sends
		// a payload ahead of its receive into a pooled buffer the pool had
		// dropped, counts what the allreduce did not do. A steady state
		// allocates nothing in at least one of three runs.
		var allocs float64
		for range 3 {
			if allocs = collSteadyAllocs(t, cs, call); allocs == 0 {
				break
			}
		}
		if allocs != 0 {
			t.Errorf("%d float32: %v allocations per allreduce in each of 3 runs, want 0", length, allocs)
		}
	}
}

// TestAllReduceHalving: Rabenseifner's allreduce (AlgorithmHalving) gives
// every rank the reduction, in every world from 1 to 8 ranks (folding
// the ranks above a power of two), for lengths that do not halve evenly
// and in pieces (Chunk), and the same bits on every rank.
func TestAllReduceHalving(t *testing.T) {
	lengths := []int{0, 1, 7, 1000, 1<<16 + 3}
	ops := []collective.Op{collective.Sum, collective.Mean, collective.Max, collective.Min, collective.Prod}
	for _, n := range []int{1, 2, 3, 4, 5, 6, 7, 8} {
		cs := newComms(t, n, collective.Options{Algorithm: collective.AlgorithmHalving, Chunk: 4 << 10})
		for _, length := range lengths {
			for _, op := range ops {
				name := fmt.Sprintf("n=%d/len=%d/%v", n, length, op)
				t.Run(name+"/float32", func(t *testing.T) { checkAllReduce[float32](t, cs, op, length) })
				t.Run(name+"/int64", func(t *testing.T) { checkAllReduce[int64](t, cs, op, length) })
			}
		}
		if n > 2 {
			checkBitIdentical(t, cs, []int{100, 100000})
		}
	}
}
