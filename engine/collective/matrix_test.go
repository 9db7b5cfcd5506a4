package collective_test

import (
	"context"
	"fmt"
	"github.com/boltmesh/boltmesh/internal/racedetect"
	"math"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/boltmesh/boltmesh/engine"
	"github.com/boltmesh/boltmesh/engine/collective"
)

// The collective matrix: every collective × every dtype × every reduction
// × world sizes 1, 2, 3, 4, 5, 8 × lengths 0, 1, 7, 1000, 1<<20+3, checked
// against a float64 reference. matrixRank is one rank's part: the ranks of
// an in-process mesh (TestMatrix) and child processes (TestMatrixProcesses)
// run the same calls in the same order.
//
// Inputs are small integers (see matrixValue), so that every partial
// result is exact in every dtype, float16 and bfloat16 included: the
// comparison is bit-exact, for floats too, and Mean is the float64 mean
// rounded once to the dtype (its single division is correctly rounded, and
// double rounding through float64 or float32 is innocuous at these
// precisions). For integers Mean truncates toward zero. Random float data,
// where rounding does differ from the reference, is the subject of
// TestAllReduceBitIdentical, which checks that every rank has the same bits.

var (
	matrixWorlds  = []int{1, 2, 3, 4, 5, 8}
	matrixLengths = []int{0, 1, 7, 1000, 1<<20 + 3}
	matrixDTypes  = []collective.DType{collective.Float32, collective.Float64, collective.Int32, collective.Int64, collective.Float16, collective.BFloat16}
	matrixOps     = []collective.Op{collective.Sum, collective.Mean, collective.Max, collective.Min, collective.Prod}
)

// matrixLong is the length that only runs without the race detector, which
// makes it take minutes; `make test` runs the matrix both ways.
const matrixLong = 1<<20 + 3

// matrixValue is rank r's element i for op: in [-9, 9] (sums of 8 ranks
// stay within 72), or in {-1, 1, 2} for Prod (products within 256).
func matrixValue(op collective.Op, r, i int) float64 {
	if op == collective.Prod {
		return [...]float64{2, 1, -1}[(r+2*i)%3]
	}
	return float64((r*7+i*13)%19 - 9)
}

// matrixRef is the reference result of element i over n ranks.
func matrixRef(dt collective.DType, op collective.Op, n, i int) float64 {
	acc := matrixValue(op, 0, i)
	for r := 1; r < n; r++ {
		v := matrixValue(op, r, i)
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
		if dt == collective.Int32 || dt == collective.Int64 {
			return math.Trunc(acc / float64(n))
		}
		return acc / float64(n)
	}
	return acc
}

// matrixBuf returns a zeroed, 8-byte aligned buffer of k elements of dt.
func matrixBuf(dt collective.DType, k int) []byte {
	w := make([]uint64, (k*dt.Size()+7)/8)
	return unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(w))), len(w)*8)[:k*dt.Size()]
}

// matrixPut stores v as element i of b, rounded to dt.
func matrixPut(dt collective.DType, b []byte, i int, v float64) {
	p := unsafe.Pointer(&b[i*dt.Size()])
	switch dt {
	case collective.Float32:
		*(*float32)(p) = float32(v)
	case collective.Float64:
		*(*float64)(p) = v
	case collective.Int32:
		*(*int32)(p) = int32(v)
	case collective.Int64:
		*(*int64)(p) = int64(v)
	case collective.Float16:
		*(*uint16)(p) = collective.F32ToF16(float32(v))
	case collective.BFloat16:
		*(*uint16)(p) = collective.F32ToBF16(float32(v))
	}
}

// matrixGet loads element i of b as a float64.
func matrixGet(dt collective.DType, b []byte, i int) float64 {
	p := unsafe.Pointer(&b[i*dt.Size()])
	switch dt {
	case collective.Float32:
		return float64(*(*float32)(p))
	case collective.Float64:
		return *(*float64)(p)
	case collective.Int32:
		return float64(*(*int32)(p))
	case collective.Int64:
		return float64(*(*int64)(p))
	case collective.Float16:
		return float64(collective.F16ToF32(*(*uint16)(p)))
	default:
		return float64(collective.BF16ToF32(*(*uint16)(p)))
	}
}

// matrixWant is the reference rounded to dt, as the result must hold it.
func matrixWant(dt collective.DType, v float64) float64 {
	b := matrixBuf(dt, 1)
	matrixPut(dt, b, 0, v)
	return matrixGet(dt, b, 0)
}

// matrixCounts splits length elements unevenly over n ranks: rank r gets
// a share proportional to r+1, the last one the remainder.
func matrixCounts(n, length int) []int {
	counts := make([]int, n)
	left, weights := length, n*(n+1)/2
	for r := range n - 1 {
		counts[r] = length * (r + 1) / weights
		left -= counts[r]
	}
	counts[n-1] = left
	return counts
}

// matrixCheck compares elements [from, from+k) of got with want(i).
func matrixCheck(what string, dt collective.DType, got []byte, from, k int, want func(i int) float64) error {
	for i := range k {
		w := matrixWant(dt, want(from+i))
		if g := matrixGet(dt, got, i); g != w {
			return fmt.Errorf("%s: element %d: got %v, want %v", what, from+i, g, w)
		}
	}
	return nil
}

// matrixRank runs this rank's part of the matrix for one world and length.
func matrixRank(c *collective.Comm, r, n, length int) error {
	ctx := context.Background()
	for _, dt := range matrixDTypes {
		for _, op := range matrixOps {
			if err := matrixReductions(ctx, c, dt, op, r, n, length); err != nil {
				return err
			}
		}
		if err := matrixMovement(ctx, c, dt, r, n, length); err != nil {
			return err
		}
	}
	return nil
}

// matrixReductions runs AllReduce, ReduceTo and ReduceScatter of dt with op.
func matrixReductions(ctx context.Context, c *collective.Comm, dt collective.DType, op collective.Op, r, n, length int) error {
	name := fmt.Sprintf("n=%d len=%d %v %v rank %d", n, length, dt, op, r)
	mine := func() []byte {
		b := matrixBuf(dt, length)
		for i := range length {
			matrixPut(dt, b, i, matrixValue(op, r, i))
		}
		return b
	}
	ref := func(i int) float64 { return matrixRef(dt, op, n, i) }

	data := mine()
	if err := c.AllReduceBytes(ctx, dt, data, op); err != nil {
		return fmt.Errorf("%s: AllReduce: %w", name, err)
	}
	if err := matrixCheck(name+": AllReduce", dt, data, 0, length, ref); err != nil {
		return err
	}

	root := n - 1
	data = mine()
	if err := c.ReduceToBytes(ctx, root, dt, data, op); err != nil {
		return fmt.Errorf("%s: ReduceTo: %w", name, err)
	}
	if r == root {
		if err := matrixCheck(name+": ReduceTo", dt, data, 0, length, ref); err != nil {
			return err
		}
	}

	counts := matrixCounts(n, length)
	data = mine()
	if err := c.ReduceScatterBytes(ctx, dt, data, counts, op); err != nil {
		return fmt.Errorf("%s: ReduceScatter: %w", name, err)
	}
	off := 0
	for _, k := range counts[:r] {
		off += k
	}
	return matrixCheck(name+": ReduceScatter", dt, data[off*dt.Size():], off, counts[r], ref)
}

// matrixMovement runs Broadcast, AllGather, Gather, Scatter and AllToAll of
// dt; length is the total (AllGather's and Gather's output, Scatter's
// input, each rank's AllToAll input) split unevenly over the ranks.
func matrixMovement(ctx context.Context, c *collective.Comm, dt collective.DType, r, n, length int) error {
	name := fmt.Sprintf("n=%d len=%d %v rank %d", n, length, dt, r)
	esz := dt.Size()
	val := func(owner, i int) float64 { return matrixValue(collective.Sum, owner, i) }
	fill := func(owner, k int) []byte {
		b := matrixBuf(dt, k)
		for i := range k {
			matrixPut(dt, b, i, val(owner, i))
		}
		return b
	}
	counts := matrixCounts(n, length)
	offs := make([]int, n+1)
	for i, k := range counts {
		offs[i+1] = offs[i] + k
	}
	// whole checks a buffer holding every rank's part, in rank order.
	whole := func(what string, b []byte) error {
		for o := range n {
			part := b[offs[o]*esz : offs[o+1]*esz]
			if err := matrixCheck(name+": "+what, dt, part, 0, counts[o], func(i int) float64 { return val(o, i) }); err != nil {
				return err
			}
		}
		return nil
	}

	root := n / 2
	data := matrixBuf(dt, length)
	if r == root {
		data = fill(root, length)
	}
	if err := c.BroadcastBytes(ctx, root, data); err != nil {
		return fmt.Errorf("%s: Broadcast: %w", name, err)
	}
	if err := matrixCheck(name+": Broadcast", dt, data, 0, length, func(i int) float64 { return val(root, i) }); err != nil {
		return err
	}

	out := matrixBuf(dt, length)
	if err := c.AllGatherBytes(ctx, dt, fill(r, counts[r]), out, counts); err != nil {
		return fmt.Errorf("%s: AllGather: %w", name, err)
	}
	if err := whole("AllGather", out); err != nil {
		return err
	}

	var gathered []byte
	if r == root {
		gathered = matrixBuf(dt, length)
	}
	if err := c.GatherBytes(ctx, root, dt, fill(r, counts[r]), gathered, counts); err != nil {
		return fmt.Errorf("%s: Gather: %w", name, err)
	}
	if r == root {
		if err := whole("Gather", gathered); err != nil {
			return err
		}
	}

	var scattered []byte
	if r == root {
		scattered = matrixBuf(dt, length)
		for o := range n {
			copy(scattered[offs[o]*esz:], fill(o, counts[o]))
		}
	}
	part := matrixBuf(dt, counts[r])
	if err := c.ScatterBytes(ctx, root, dt, scattered, part, counts); err != nil {
		return fmt.Errorf("%s: Scatter: %w", name, err)
	}
	if err := matrixCheck(name+": Scatter", dt, part, 0, counts[r], func(i int) float64 { return val(r, i) }); err != nil {
		return err
	}
	return matrixAllToAll(ctx, c, dt, r, n, length, name)
}

// matrixAllToAll: rank s sends rank d the block matrixCounts(n, length)[d]
// of values val(s*n+d, i); every rank checks what each sender sent it.
func matrixAllToAll(ctx context.Context, c *collective.Comm, dt collective.DType, r, n, length int, name string) error {
	esz := dt.Size()
	counts := matrixCounts(n, length)
	in := matrixBuf(dt, length)
	off := 0
	for d, k := range counts {
		for i := range k {
			matrixPut(dt, in, off+i, matrixValue(collective.Sum, r*n+d, i))
		}
		off += k
	}
	// Rank r receives counts[r] elements from every sender.
	outCounts := slices.Repeat([]int{counts[r]}, n)
	out := matrixBuf(dt, n*counts[r])
	if err := c.AllToAllBytes(ctx, dt, in, counts, out, outCounts); err != nil {
		return fmt.Errorf("%s: AllToAll: %w", name, err)
	}
	for s := range n {
		got := out[s*counts[r]*esz:]
		if err := matrixCheck(fmt.Sprintf("%s: AllToAll from %d", name, s), dt, got, 0, counts[r], func(i int) float64 {
			return matrixValue(collective.Sum, s*n+r, i)
		}); err != nil {
			return err
		}
	}
	return nil
}

// TestMatrix runs the matrix with every rank in this process, over
// loopback TCP (shared memory off: TestMatrixProcesses runs it over shared
// memory). The longest length runs only without the race detector (make
// test runs both).
func TestMatrix(t *testing.T) {
	for _, n := range matrixWorlds {
		cs := newCommsOn(t, n, engine.Options{HeapSize: 1 << 20, SharedMemory: engine.SharedMemoryOff}, collective.Options{})
		for _, length := range matrixLengths {
			t.Run(fmt.Sprintf("n=%d/len=%d", n, length), func(t *testing.T) {
				if length == matrixLong && (racedetect.Enabled || testing.Short()) {
					t.Skip("minutes under the race detector or -short; make test runs it without")
				}
				if err := onAll(n, func(r int) error { return matrixRank(cs[r], r, n, length) }); err != nil {
					t.Fatal(err)
				}
			})
		}
	}
}

// matrixLengthsEnv passes a child of TestMatrixProcesses its lengths.
const matrixLengthsEnv = "BOLTMESH_COLL_MATRIX_LENGTHS"

// matrixProcLengths are the lengths of TestMatrixProcesses: all of them,
// but without the longest under the race detector or -short.
func matrixProcLengths() []int {
	if racedetect.Enabled || testing.Short() {
		return matrixLengths[:len(matrixLengths)-1]
	}
	return matrixLengths
}

// matrixChild is a rank of TestMatrixProcesses: the matrix for every
// length its parent names, then a barrier.
func matrixChild(rank int, addrs []string, ln net.Listener) error {
	var lengths []int
	for f := range strings.SplitSeq(os.Getenv(matrixLengthsEnv), ",") {
		l, err := strconv.Atoi(f)
		if err != nil {
			ln.Close()
			return err
		}
		lengths = append(lengths, l)
	}
	tr, err := engine.FromListener(rank, len(addrs), ln, addrs, procOpts)
	if err != nil {
		return err
	}
	defer tr.Close()
	c, err := collective.New(tr, collective.Options{})
	if err != nil {
		return err
	}
	defer c.Close()
	for _, length := range lengths {
		if err := matrixRank(c, rank, len(addrs), length); err != nil {
			return err
		}
	}
	return tr.Barrier()
}

// TestMatrixProcesses runs the matrix with every rank but rank 0 in a
// child process of its own; the children check their results and report
// through their exit status. The ranks are neighbours, over shared memory.
func TestMatrixProcesses(t *testing.T) {
	lengths := matrixProcLengths()
	env := make([]string, len(lengths))
	for i, l := range lengths {
		env[i] = strconv.Itoa(l)
	}
	for _, n := range matrixWorlds {
		t.Run(fmt.Sprintf("n=%d", n), func(t *testing.T) {
			lns, addrs := procListeners(t, n)
			var children []*procChild
			for r := 1; r < n; r++ {
				children = append(children, procStart(t, "matrix", r, lns[r], addrs, matrixLengthsEnv+"="+strings.Join(env, ",")))
			}
			tr, c := procRank0(t, n, lns[0], addrs)
			if got := tr.Topology().Neighbours(); len(got) != n-1 {
				t.Fatalf("rank 0's neighbours %v: want all %d other ranks over shared memory", got, n-1)
			}
			for _, length := range lengths {
				if err := matrixRank(c, 0, n, length); err != nil {
					t.Fatal(err)
				}
			}
			if err := tr.Barrier(); err != nil {
				t.Errorf("final barrier: %v", err)
			}
			procWaitAll(t, children, 60*time.Second)
		})
	}
}
