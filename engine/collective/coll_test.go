package collective_test

import (
	"context"
	"errors"
	"fmt"
	"github.com/boltmesh/boltmesh/internal/racedetect"
	"math"
	"slices"
	"testing"
	"time"

	"github.com/boltmesh/boltmesh/engine"
	"github.com/boltmesh/boltmesh/engine/collective"
)

var (
	collWorlds  = []int{1, 2, 3, 4, 5, 8}
	collLengths = []int{0, 1, 7, 1000}
	collOps     = []collective.Op{collective.Sum, collective.Mean, collective.Max, collective.Min, collective.Prod}
)

const collLarge = 1<<20 + 3

// collVal is element i of rank r's data in the data-movement tests:
// distinct for every (rank, index).
func collVal(r, i int) int32 { return int32(r*3_000_017 + i + 1) }

// collCounts returns n counts around length: all equal, or uneven (zeros
// included, for length 0 or 1 every other rank).
func collCounts(n, length int, uneven bool) []int {
	counts := make([]int, n)
	for i := range counts {
		counts[i] = length
		if uneven {
			counts[i] = length*(i%3)/2 + i%2
		}
	}
	return counts
}

// collPairCount is how many elements rank i sends rank j in AllToAll.
func collPairCount(length, i, j int, uneven bool) int {
	if !uneven {
		return length
	}
	return length*((i+2*j)%3)/2 + (i+j)%2
}

func collSum(counts []int) int {
	s := 0
	for _, k := range counts {
		s += k
	}
	return s
}

// collRoots is the roots to try in a world of n: first, last and middle.
func collRoots(n int) []int {
	roots := []int{0}
	for _, r := range []int{n - 1, n / 2} {
		if !slices.Contains(roots, r) {
			roots = append(roots, r)
		}
	}
	return roots
}

func TestCollDataMovement(t *testing.T) {
	for _, n := range collWorlds {
		cs := newComms(t, n, collective.Options{})
		for _, length := range collLengths {
			collMovement(t, cs, length)
		}
	}
}

func TestCollDataMovementLarge(t *testing.T) {
	cs := newComms(t, 3, collective.Options{})
	collMovement(t, cs, collLarge)
}

// collMovement runs every data-movement collective on cs with length
// elements per rank (and per pair), even and uneven, from every root in
// collRoots.
func collMovement(t *testing.T, cs []*collective.Comm, length int) {
	n := len(cs)
	for _, root := range collRoots(n) {
		t.Run(fmt.Sprintf("n=%d/len=%d/Broadcast/root=%d", n, length, root), func(t *testing.T) {
			collRun(t, n, func(r int) error {
				data := make([]int32, length)
				for i := range data {
					data[i] = -1
					if r == root {
						data[i] = collVal(root, i)
					}
				}
				if err := collective.Broadcast(cs[r], root, data); err != nil {
					return err
				}
				for i, got := range data {
					if want := collVal(root, i); got != want {
						return fmt.Errorf("rank %d element %d: got %d, want %d", r, i, got, want)
					}
				}
				return nil
			})
		})
	}
	for _, uneven := range []bool{false, true} {
		counts := collCounts(n, length, uneven)
		total := collSum(counts)
		name := fmt.Sprintf("n=%d/len=%d/uneven=%v", n, length, uneven)
		// want is the concatenation of every rank's values.
		want := make([]int32, 0, total)
		for r, k := range counts {
			for i := range k {
				want = append(want, collVal(r, i))
			}
		}
		t.Run(name+"/AllGather", func(t *testing.T) {
			collRun(t, n, func(r int) error {
				in := make([]int32, counts[r])
				for i := range in {
					in[i] = collVal(r, i)
				}
				out := make([]int32, total)
				if err := collective.AllGather(cs[r], in, out, counts); err != nil {
					return err
				}
				return collEqual(r, out, want)
			})
		})
		t.Run(name+"/AllGatherInPlace", func(t *testing.T) {
			collRun(t, n, func(r int) error {
				out := make([]int32, total)
				off := collSum(counts[:r])
				in := out[off : off+counts[r]]
				for i := range in {
					in[i] = collVal(r, i)
				}
				if err := collective.AllGather(cs[r], in, out, counts); err != nil {
					return err
				}
				return collEqual(r, out, want)
			})
		})
		for _, root := range collRoots(n) {
			t.Run(fmt.Sprintf("%s/Gather/root=%d", name, root), func(t *testing.T) {
				collRun(t, n, func(r int) error {
					in := make([]int32, counts[r])
					for i := range in {
						in[i] = collVal(r, i)
					}
					var out []int32
					if r == root {
						out = make([]int32, total)
					}
					if err := collective.Gather(cs[r], root, in, out, counts); err != nil {
						return err
					}
					if r == root {
						return collEqual(r, out, want)
					}
					return nil
				})
			})
			t.Run(fmt.Sprintf("%s/Scatter/root=%d", name, root), func(t *testing.T) {
				collRun(t, n, func(r int) error {
					var in []int32
					if r == root {
						in = slices.Clone(want)
					}
					out := make([]int32, counts[r])
					if err := collective.Scatter(cs[r], root, in, out, counts); err != nil {
						return err
					}
					off := collSum(counts[:r])
					return collEqual(r, out, want[off:off+counts[r]])
				})
			})
		}
		t.Run(name+"/AllToAll", func(t *testing.T) {
			collRun(t, n, func(r int) error {
				inCounts, outCounts := make([]int, n), make([]int, n)
				for j := range n {
					inCounts[j] = collPairCount(length, r, j, uneven)
					outCounts[j] = collPairCount(length, j, r, uneven)
				}
				// Element i of the segment rank r sends rank j is
				// collVal(r*n+j, i).
				in := make([]int32, 0, collSum(inCounts))
				for j, k := range inCounts {
					for i := range k {
						in = append(in, collVal(r*n+j, i))
					}
				}
				want := make([]int32, 0, collSum(outCounts))
				for j, k := range outCounts {
					for i := range k {
						want = append(want, collVal(j*n+r, i))
					}
				}
				out := make([]int32, len(want))
				if err := collective.AllToAll(cs[r], in, inCounts, out, outCounts); err != nil {
					return err
				}
				return collEqual(r, out, want)
			})
		})
	}
}

// collRun runs f on every rank at once, failing the test on any error, or
// if the ranks take over a minute (a hang).
func collRun(t *testing.T, n int, f func(r int) error) {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- onAll(n, f) }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(time.Minute):
		panic("collective did not finish within a minute: " + t.Name())
	}
}

func collEqual[T comparable](r int, got, want []T) error {
	if len(got) != len(want) {
		return fmt.Errorf("rank %d: %d elements, want %d", r, len(got), len(want))
	}
	for i := range got {
		if got[i] != want[i] {
			return fmt.Errorf("rank %d element %d: got %v, want %v", r, i, got[i], want[i])
		}
	}
	return nil
}

// collCheckReduced compares element i of a reduction of n contributions
// (contribution(r, i)) with reference, as checkAllReduce does.
func collCheckReduced[T collective.Elem](r int, got T, op collective.Op, n, i int) error {
	want := reference(op, n, i)
	if dt := collective.DTypeOf[T](); dt == collective.Int32 || dt == collective.Int64 {
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
	return nil
}

func collContribution[T collective.Elem](r, length int) []T {
	data := make([]T, length)
	for i := range data {
		data[i] = T(contribution(r, i))
	}
	return data
}

func checkReduceTo[T collective.Elem](t *testing.T, cs []*collective.Comm, root int, op collective.Op, length int) {
	n := len(cs)
	collRun(t, n, func(r int) error {
		data := collContribution[T](r, length)
		if err := collective.ReduceTo(cs[r], root, data, op); err != nil {
			return err
		}
		if r != root { // untouched
			return collEqual(r, data, collContribution[T](r, length))
		}
		for i, got := range data {
			if err := collCheckReduced(r, got, op, n, i); err != nil {
				return err
			}
		}
		return nil
	})
}

func checkReduceScatter[T collective.Elem](t *testing.T, cs []*collective.Comm, op collective.Op, counts []int) {
	n := len(cs)
	total := collSum(counts)
	collRun(t, n, func(r int) error {
		data := collContribution[T](r, total)
		if err := collective.ReduceScatter(cs[r], data, counts, op); err != nil {
			return err
		}
		lo, hi := collSum(counts[:r]), collSum(counts[:r+1])
		orig := collContribution[T](r, total)
		if err := collEqual(r, data[:lo], orig[:lo]); err != nil {
			return fmt.Errorf("outside its segment: %w", err)
		}
		if err := collEqual(r, data[hi:], orig[hi:]); err != nil {
			return fmt.Errorf("outside its segment: %w", err)
		}
		for i := lo; i < hi; i++ {
			if err := collCheckReduced(r, data[i], op, n, i); err != nil {
				return err
			}
		}
		return nil
	})
}

func TestCollReduceTo(t *testing.T) {
	for _, n := range collWorlds {
		cs := newComms(t, n, collective.Options{})
		for _, length := range collLengths {
			for _, root := range collRoots(n) {
				for _, op := range collOps {
					name := fmt.Sprintf("n=%d/len=%d/root=%d/%v", n, length, root, op)
					t.Run(name+"/float32", func(t *testing.T) { checkReduceTo[float32](t, cs, root, op, length) })
					t.Run(name+"/float64", func(t *testing.T) { checkReduceTo[float64](t, cs, root, op, length) })
					t.Run(name+"/int32", func(t *testing.T) { checkReduceTo[int32](t, cs, root, op, length) })
					t.Run(name+"/int64", func(t *testing.T) { checkReduceTo[int64](t, cs, root, op, length) })
				}
			}
		}
	}
}

func TestCollReduceScatter(t *testing.T) {
	for _, n := range collWorlds {
		cs := newComms(t, n, collective.Options{})
		for _, length := range collLengths {
			for _, uneven := range []bool{false, true} {
				counts := collCounts(n, length, uneven)
				for _, op := range collOps {
					name := fmt.Sprintf("n=%d/len=%d/uneven=%v/%v", n, length, uneven, op)
					t.Run(name+"/float32", func(t *testing.T) { checkReduceScatter[float32](t, cs, op, counts) })
					t.Run(name+"/float64", func(t *testing.T) { checkReduceScatter[float64](t, cs, op, counts) })
					t.Run(name+"/int32", func(t *testing.T) { checkReduceScatter[int32](t, cs, op, counts) })
					t.Run(name+"/int64", func(t *testing.T) { checkReduceScatter[int64](t, cs, op, counts) })
				}
			}
		}
	}
}

func TestCollReduceLarge(t *testing.T) {
	cs := newComms(t, 3, collective.Options{})
	t.Run("ReduceTo", func(t *testing.T) { checkReduceTo[float32](t, cs, 2, collective.Sum, collLarge) })
	t.Run("ReduceScatter", func(t *testing.T) {
		checkReduceScatter[float32](t, cs, collective.Mean, collCounts(3, collLarge, true))
	})
}

// TestCollReduceDeterministic: a ReduceTo of irregular floats gives the
// same bits on every repetition.
func TestCollReduceDeterministic(t *testing.T) {
	const n, length = 5, 10000
	cs := newComms(t, n, collective.Options{})
	inputs := make([][]float32, n)
	for r := range inputs {
		inputs[r] = make([]float32, length)
		for i := range inputs[r] {
			inputs[r][i] = float32(math.Sin(float64(r*length+i))) * 1e3
		}
	}
	var first []float32
	for rep := range 3 {
		var got []float32
		collRun(t, n, func(r int) error {
			data := slices.Clone(inputs[r])
			if err := collective.ReduceTo(cs[r], 1, data, collective.Sum); err != nil {
				return err
			}
			if r == 1 {
				got = data
			}
			return nil
		})
		if rep == 0 {
			first = got
			continue
		}
		for i := range got {
			if math.Float32bits(got[i]) != math.Float32bits(first[i]) {
				t.Fatalf("repetition %d element %d: %v, first time %v", rep, i, got[i], first[i])
			}
		}
	}
}

// TestCollBytesFloat16 runs the byte forms with a 2-byte DType, and the
// 16-bit reductions.
func TestCollBytesFloat16(t *testing.T) {
	const n = 3
	cs := newComms(t, n, collective.Options{})
	ctx := context.Background()
	counts := []int{3, 0, 5}
	collRun(t, n, func(r int) error {
		in := make([]uint16, counts[r])
		for i := range in {
			in[i] = uint16(r*100 + i)
		}
		out := make([]uint16, collSum(counts))
		if err := cs[r].AllGatherBytes(ctx, collective.Float16, collective.AsBytes16(in), collective.AsBytes16(out), counts); err != nil {
			return err
		}
		want := []uint16{0, 1, 2, 200, 201, 202, 203, 204}
		if err := collEqual(r, out, want); err != nil {
			return err
		}
		data := make([]uint16, 8)
		for i := range data {
			data[i] = collective.F32ToBF16(float32(contribution(r, i)))
		}
		if err := collective.ReduceScatter16(cs[r], collective.BFloat16, data, counts, collective.Sum); err != nil {
			return err
		}
		lo := collSum(counts[:r])
		for i := lo; i < lo+counts[r]; i++ {
			if got, w := collective.BF16ToF32(data[i]), reference(collective.Sum, n, i); float64(got) != w {
				return fmt.Errorf("ReduceScatter16 rank %d element %d: got %v, want %v", r, i, got, w)
			}
		}
		for i := range data {
			data[i] = collective.F32ToF16(float32(contribution(r, i)))
		}
		if err := collective.ReduceTo16(cs[r], 0, collective.Float16, data, collective.Max); err != nil {
			return err
		}
		if r == 0 {
			for i := range data {
				if got, w := collective.F16ToF32(data[i]), reference(collective.Max, n, i); float64(got) != w {
					return fmt.Errorf("ReduceTo16 element %d: got %v, want %v", i, got, w)
				}
			}
		}
		return nil
	})
}

func TestCollArgErrors(t *testing.T) {
	const n = 3
	cs := newComms(t, n, collective.Options{})
	ctx := context.Background()
	f32 := func(k int) []byte { return make([]byte, 4*k) }
	misaligned := make([]byte, 20)[1:17]
	cases := []struct {
		name string
		err  error
		call func(c *collective.Comm) error
	}{
		{"Broadcast root -1", collective.ErrRoot, func(c *collective.Comm) error { return c.BroadcastBytes(ctx, -1, f32(2)) }},
		{"Broadcast root n", collective.ErrRoot, func(c *collective.Comm) error { return collective.Broadcast(c, n, []int64{1}) }},
		{"ReduceTo root", collective.ErrRoot, func(c *collective.Comm) error { return collective.ReduceTo(c, 7, []float32{1}, collective.Sum) }},
		{"ReduceTo dtype", collective.ErrDType, func(c *collective.Comm) error { return c.ReduceToBytes(ctx, 0, 0, f32(1), collective.Sum) }},
		{"ReduceTo op", collective.ErrOp, func(c *collective.Comm) error { return c.ReduceToBytes(ctx, 0, collective.Float32, f32(1), 0) }},
		{"ReduceTo length", collective.ErrDTypeLength, func(c *collective.Comm) error {
			return c.ReduceToBytes(ctx, 0, collective.Float32, make([]byte, 6), collective.Sum)
		}},
		{"ReduceTo alignment", collective.ErrAlignment, func(c *collective.Comm) error {
			return c.ReduceToBytes(ctx, 0, collective.Float32, misaligned, collective.Sum)
		}},
		{"ReduceTo16 dtype", collective.ErrDType, func(c *collective.Comm) error {
			return collective.ReduceTo16(c, 0, collective.Float32, []uint16{1, 2}, collective.Sum)
		}},
		{"AllGather dtype", collective.ErrDType, func(c *collective.Comm) error {
			return c.AllGatherBytes(ctx, 99, f32(1), f32(3), []int{1, 1, 1})
		}},
		{"AllGather counts len", collective.ErrCounts, func(c *collective.Comm) error {
			return collective.AllGather(c, []float32{1}, make([]float32, 2), []int{1, 1})
		}},
		{"AllGather counts negative", collective.ErrCounts, func(c *collective.Comm) error {
			return collective.AllGather(c, []float32{1}, make([]float32, 2), []int{1, 2, -1})
		}},
		{"AllGather counts overflow", collective.ErrCounts, func(c *collective.Comm) error {
			return collective.AllGather(c, []float32{1}, make([]float32, 2), []int{1, math.MaxInt / 2, math.MaxInt / 2})
		}},
		{"AllGather in", collective.ErrBufferSize, func(c *collective.Comm) error {
			return collective.AllGather(c, []float32{1, 2}, make([]float32, 3), []int{1, 1, 1})
		}},
		{"AllGather out", collective.ErrBufferSize, func(c *collective.Comm) error {
			return c.AllGatherBytes(ctx, collective.Float32, f32(1), f32(3)[:11], []int{1, 1, 1})
		}},
		{"ReduceScatter counts", collective.ErrCounts, func(c *collective.Comm) error {
			return collective.ReduceScatter(c, make([]float64, 3), []int{1, 2}, collective.Sum)
		}},
		{"ReduceScatter data", collective.ErrBufferSize, func(c *collective.Comm) error {
			return collective.ReduceScatter(c, make([]float64, 4), []int{1, 2, 0}, collective.Sum)
		}},
		{"ReduceScatter op", collective.ErrOp, func(c *collective.Comm) error {
			return collective.ReduceScatter(c, make([]float64, 3), []int{1, 2, 0}, 42)
		}},
		{"ReduceScatter16 dtype", collective.ErrDType, func(c *collective.Comm) error {
			return collective.ReduceScatter16(c, collective.Int32, make([]uint16, 3), []int{1, 2, 0}, collective.Sum)
		}},
		{"Gather root", collective.ErrRoot, func(c *collective.Comm) error {
			return collective.Gather(c, 3, []int32{1}, make([]int32, 3), []int{1, 1, 1})
		}},
		{"Gather out at root", collective.ErrBufferSize, func(c *collective.Comm) error {
			return collective.Gather(c, 0, []int32{1}, make([]int32, 2), []int{1, 1, 1})
		}},
		{"Gather in", collective.ErrBufferSize, func(c *collective.Comm) error {
			return collective.Gather(c, 1, []int32{1, 2}, nil, []int{1, 1, 1})
		}},
		{"Scatter root", collective.ErrRoot, func(c *collective.Comm) error {
			return collective.Scatter(c, -2, make([]int32, 3), []int32{1}, []int{1, 1, 1})
		}},
		{"Scatter in at root", collective.ErrBufferSize, func(c *collective.Comm) error {
			return collective.Scatter(c, 0, make([]int32, 4), []int32{1}, []int{1, 1, 1})
		}},
		{"Scatter out", collective.ErrBufferSize, func(c *collective.Comm) error {
			return collective.Scatter(c, 2, nil, []int32{}, []int{1, 1, 1})
		}},
		{"Scatter counts", collective.ErrCounts, func(c *collective.Comm) error {
			return collective.Scatter(c, 2, nil, []int32{1}, []int{1, 1, 1, 1})
		}},
		{"AllToAll inCounts", collective.ErrCounts, func(c *collective.Comm) error {
			return collective.AllToAll(c, make([]int32, 2), []int{1, 1}, make([]int32, 3), []int{1, 1, 1})
		}},
		{"AllToAll outCounts", collective.ErrCounts, func(c *collective.Comm) error {
			return collective.AllToAll(c, make([]int32, 3), []int{1, 1, 1}, make([]int32, 3), []int{1, -1, 3})
		}},
		{"AllToAll in", collective.ErrBufferSize, func(c *collective.Comm) error {
			return collective.AllToAll(c, make([]int32, 2), []int{1, 1, 1}, make([]int32, 3), []int{1, 1, 1})
		}},
		{"AllToAll out", collective.ErrBufferSize, func(c *collective.Comm) error {
			return collective.AllToAll(c, make([]int32, 3), []int{1, 1, 1}, make([]int32, 4), []int{1, 1, 1})
		}},
		{"AllToAll own segment", collective.ErrCounts, func(c *collective.Comm) error {
			return collective.AllToAll(c, make([]int32, 3), []int{1, 1, 1}, make([]int32, 4), []int{2, 1, 1})
		}},
	}
	// Every rank makes each call, as in SPMD code. A rank whose arguments
	// are refused fails with their error before it communicates, and
	// abandons the call; a rank whose arguments are fine (the checks that
	// apply only at the root) goes on and fails with ErrAbandoned, or
	// finishes if it needs nothing from the others.
	for _, tc := range cases {
		errs := make([]error, n)
		collRun(t, n, func(r int) error {
			errs[r] = tc.call(cs[r])
			return nil
		})
		if !errors.Is(errs[0], tc.err) {
			t.Errorf("%s: rank 0 got %v, want %v", tc.name, errs[0], tc.err)
		}
		for r, err := range errs[1:] {
			if err != nil && !errors.Is(err, tc.err) && !errors.Is(err, collective.ErrAbandoned) {
				t.Errorf("%s: rank %d got %v, want %v or ErrAbandoned", tc.name, r+1, err, tc.err)
			}
		}
	}
	// Each refused call took its turn everywhere: the ranks still agree on
	// the next call.
	collRun(t, n, func(r int) error {
		data := []float32{float32(r)}
		if err := collective.Broadcast(cs[r], 2, data); err != nil {
			return err
		}
		if data[0] != 2 {
			return fmt.Errorf("rank %d: got %v, want 2", r, data[0])
		}
		return nil
	})
}

// TestCollLengthMismatch: ranks that disagree about lengths get errors
// rather than wrong data or a hang.
func TestCollLengthMismatch(t *testing.T) {
	isMismatch := func(err error) bool {
		return errors.Is(err, collective.ErrLengthMismatch) || errors.Is(err, engine.ErrTruncated)
	}
	t.Run("Broadcast", func(t *testing.T) {
		const n = 5
		cs := newComms(t, n, collective.Options{})
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		errs := make([]error, n)
		_ = onAll(n, func(r int) error {
			data := make([]byte, 12)
			if r == 1 {
				data = data[:10] // the root sends less than the others expect
			}
			errs[r] = cs[r].BroadcastBytes(ctx, 1, data)
			return nil
		})
		for r, err := range errs {
			if r == 1 && err != nil {
				t.Errorf("root: %v", err)
			}
			if r != 1 && !errors.Is(err, collective.ErrLengthMismatch) {
				t.Errorf("rank %d: got %v, want ErrLengthMismatch", r, err)
			}
		}
	})
	t.Run("AllGather", func(t *testing.T) {
		cs := newComms(t, 2, collective.Options{})
		err := onAll(2, func(r int) error {
			counts := []int{2, 3 + r} // the ranks disagree about rank 1's count
			return collective.AllGather(cs[r], make([]int32, counts[r]), make([]int32, 5+r), counts)
		})
		if !isMismatch(err) {
			t.Fatalf("got %v, want a length mismatch", err)
		}
	})
	t.Run("ReduceTo", func(t *testing.T) {
		cs := newComms(t, 2, collective.Options{})
		err := onAll(2, func(r int) error {
			return collective.ReduceTo(cs[r], 0, make([]float64, 4-r), collective.Sum)
		})
		if !isMismatch(err) {
			t.Fatalf("got %v, want a length mismatch", err)
		}
	})
	t.Run("AllToAll", func(t *testing.T) {
		cs := newComms(t, 2, collective.Options{})
		err := onAll(2, func(r int) error {
			inCounts, outCounts := []int{1, 1}, []int{1, 2}
			if r == 1 {
				inCounts, outCounts = []int{1, 1}, []int{1, 1}
			}
			return collective.AllToAll(cs[r], make([]int32, 2), inCounts, make([]int32, collSum(outCounts)), outCounts)
		})
		if !isMismatch(err) {
			t.Fatalf("got %v, want a length mismatch", err)
		}
	})
}

// collSteadyAllocs measures the allocations of call on rank 0 while the
// other ranks run it alongside, after warming up (as
// TestAllReduceSteadyStateAllocs does).
func collSteadyAllocs(t *testing.T, cs []*collective.Comm, call func(r int) error) float64 {
	n := len(cs)
	kicks := make([]chan struct{}, n)
	done := make(chan error, n)
	for r := 1; r < n; r++ {
		kicks[r] = make(chan struct{})
		go func() {
			for range kicks[r] {
				done <- call(r)
			}
		}()
	}
	defer func() {
		for r := 1; r < n; r++ {
			close(kicks[r])
		}
	}()
	run := func() {
		for r := 1; r < n; r++ {
			kicks[r] <- struct{}{}
		}
		err := call(0)
		for r := 1; r < n; r++ {
			if err2 := <-done; err == nil {
				err = err2
			}
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	for range 20 {
		run()
	}
	return testing.AllocsPerRun(50, run)
}

func TestCollSteadyStateAllocs(t *testing.T) {
	if racedetect.Enabled {
		t.Skip("the race detector's sync.Pool drops items at random, so the transport allocates")
	}
	const elems = 1 << 10 // 4 KiB of float32 per rank
	for _, n := range []int{2, 3} {
		cs := newComms(t, n, collective.Options{})
		counts := collCounts(n, elems, false)
		data, out := make([][]float32, n), make([][]float32, n)
		a2aIn, a2aOut := make([][]float32, n), make([][]float32, n)
		for r := range n {
			data[r] = make([]float32, elems)
			out[r] = make([]float32, n*elems)
			a2aIn[r], a2aOut[r] = make([]float32, n*elems), make([]float32, n*elems)
		}
		calls := []struct {
			name string
			call func(r int) error
		}{
			{"Broadcast", func(r int) error { return collective.Broadcast(cs[r], n-1, data[r]) }},
			{"AllGather", func(r int) error { return collective.AllGather(cs[r], data[r], out[r], counts) }},
			{"ReduceTo", func(r int) error { return collective.ReduceTo(cs[r], 1, data[r], collective.Mean) }},
			{"ReduceScatter", func(r int) error { return collective.ReduceScatter(cs[r], out[r], counts, collective.Sum) }},
			{"Gather", func(r int) error { return collective.Gather(cs[r], 0, data[r], out[r], counts) }},
			{"Scatter", func(r int) error { return collective.Scatter(cs[r], 1, out[r], data[r], counts) }},
			{"AllToAll", func(r int) error { return collective.AllToAll(cs[r], a2aIn[r], counts, a2aOut[r], counts) }},
		}
		for _, tc := range calls {
			if a := collSteadyAllocs(t, cs, tc.call); a != 0 {
				t.Errorf("n=%d %s of 4 KiB: %v allocations per call, want 0", n, tc.name, a)
			}
		}
	}
}
