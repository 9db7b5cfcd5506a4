package collective_test

import (
	"fmt"
	"math"
	"net"
	"os"
	"runtime"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/boltmesh/boltmesh/engine"
	"github.com/boltmesh/boltmesh/engine/collective"
)

// benchARRanks and benchARSizes (bytes of float32) span BenchmarkAllReduce.
var (
	benchARRanks = []int{2, 4}
	benchARSizes = []int{8, 1024, 65536, 262144, 1048576, 16777216, 67108864}
)

// Benchmark ranks 1..n-1 run in child processes, given the size and the
// iteration count b.N by environment.
const (
	benchARSizeEnv  = "BOLTMESH_COLL_BENCH_SIZE"
	benchARItersEnv = "BOLTMESH_COLL_BENCH_ITERS"
	benchARAlgoEnv  = "BOLTMESH_COLL_BENCH_ALGO" // Options.Algorithm, as a number
	// benchARAlignedEnv, when "1", times each call as OpenMPI's anchor
	// does (see BenchmarkAllReduceAligned).
	benchARAlignedEnv = "BOLTMESH_COLL_BENCH_ALIGNED"
	// benchARImplEnv is the impl measured: "boltmesh" (loopback TCP,
	// shared memory off) or "shm" (neighbours over shared memory).
	benchARImplEnv = "BOLTMESH_COLL_BENCH_IMPL"
)

// benchARImpls are the impls of every allreduce benchmark.
var benchARImpls = []string{"boltmesh", "shm"}

// benchARRunImpls runs fn as impl=X/ranks=N/size=S for every impl, rank
// count and size that keep reports true.
func benchARRunImpls(b *testing.B, keep func(size int) bool, fn func(b *testing.B, n, size int)) {
	for _, impl := range benchARImpls {
		b.Run("impl="+impl, func(b *testing.B) {
			b.Setenv(benchARImplEnv, impl) // the children inherit it
			for _, n := range benchARRanks {
				for _, size := range benchARSizes {
					if keep(size) {
						b.Run(fmt.Sprintf("ranks=%d/size=%d", n, size), func(b *testing.B) { fn(b, n, size) })
					}
				}
			}
		})
	}
}

// Options.Chunk and Options.RingMin of every benchmark rank, in bytes, and
// the transport's Options.Congestion, when set (children inherit them): to
// tune on a machine, e.g. BOLTMESH_COLL_CHUNK=131072 go test -bench
// AllReduce, or to compare with BOLTMESH_COLL_CONGESTION=system.
const (
	benchARChunkEnv      = "BOLTMESH_COLL_CHUNK"
	benchARRingMinEnv    = "BOLTMESH_COLL_RINGMIN"
	benchARCongestionEnv = "BOLTMESH_COLL_CONGESTION"
)

// benchAROpts returns the transport and Comm options of a benchmark rank:
// with the one-sided algorithm, a symmetric heap that holds its landing
// area (about the message size), else procOpts' small one.
func benchAROpts(algo collective.Algorithm, size int) (engine.Options, collective.Options, error) {
	topts := procOpts
	if algo == collective.AlgorithmOneSided {
		topts.HeapSize = uint64(size) + 1<<20
	}
	topts.Congestion = os.Getenv(benchARCongestionEnv)
	if os.Getenv(benchARImplEnv) != "shm" {
		topts.SharedMemory = engine.SharedMemoryOff
	}
	copts := collective.Options{Algorithm: algo}
	var err error
	if copts.Chunk, err = envBytes(benchARChunkEnv); err == nil {
		copts.RingMin, err = envBytes(benchARRingMinEnv)
	}
	return topts, copts, err
}

// envBytes reads a byte count from the environment variable name: 0 when
// it is unset.
func envBytes(name string) (int, error) {
	v := os.Getenv(name)
	if v == "" {
		return 0, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("%s=%q is not a byte count", name, v)
	}
	return n, nil
}

// benchARRefill is how often, in iterations, the ranks restore their
// contributions. In between, every rank starts a call holding the same
// sum s of the last one, so the call yields n*s: with n a power of two the
// values stay small integers times a power of two, exact in float32; each
// iteration's result differs from the last; and the cost of restoring is
// spread over benchARRefill calls. (AllReduce works in place; MPI's
// benchmark reduces out of place and never restores.)
const benchARRefill = 32

// benchAR is one rank's data: its contribution src, the buffer reduced in
// place, and the expected sums by element index mod 19 (contribution's
// period).
type benchAR struct {
	n         int
	src, data []float32
	sums      [19]float32
	slowest   [1]float64 // aligned timing: the slowest rank's call, in seconds
}

func newBenchAR(rank, n, size int) (*benchAR, error) {
	if n&(n-1) != 0 {
		return nil, fmt.Errorf("benchmark world %d is not a power of two", n)
	}
	a := &benchAR{n: n, src: make([]float32, size/4), data: make([]float32, size/4)}
	var mine [19]float32
	for j := range mine {
		mine[j] = float32(contribution(rank, j))
		a.sums[j] = float32(reference(collective.Sum, n, j))
	}
	for i := range a.src {
		a.src[i] = mine[i%19]
	}
	return a, nil
}

// prepare readies the data for iteration it (-1 is the warm-up).
func (a *benchAR) prepare(it int) {
	if it < 0 || it%benchARRefill == 0 {
		copy(a.data, a.src)
	}
}

// want is element i's value after iteration it.
func (a *benchAR) want(it, i int) float32 {
	k := 0
	if it >= 0 {
		k = it % benchARRefill
	}
	return a.sums[i%19] * float32(math.Pow(float64(a.n), float64(k)))
}

// checkMarks checks the first, middle and last elements after iteration it.
func (a *benchAR) checkMarks(it int) error {
	if len(a.data) == 0 {
		return nil
	}
	for _, i := range [3]int{0, len(a.data) / 2, len(a.data) - 1} {
		if a.data[i] != a.want(it, i) {
			return fmt.Errorf("iteration %d: element %d of %d is %v, want %v", it, i, len(a.data), a.data[i], a.want(it, i))
		}
	}
	return nil
}

// checkAll checks every element after iteration it.
func (a *benchAR) checkAll(it int) error {
	for i, got := range a.data {
		if got != a.want(it, i) {
			return fmt.Errorf("iteration %d: element %d of %d is %v, want %v", it, i, len(a.data), got, a.want(it, i))
		}
	}
	return nil
}

// step runs iteration it (untimed version).
func (a *benchAR) step(c *collective.Comm, it int) error {
	a.prepare(it)
	if err := collective.AllReduce(c, a.data, collective.Sum); err != nil {
		return fmt.Errorf("iteration %d: %w", it, err)
	}
	return a.checkMarks(it)
}

// timed runs iteration it as the benchmark times it and returns the
// call's duration. Aligned, as OpenMPI's anchor (../shared/peers/
// mpi_allreduce.c) does: the ranks meet at a barrier first, and the
// duration is the longest of any rank's, which every rank learns from one
// more (untimed) allreduce. Otherwise calls follow each other directly,
// and the duration is this rank's own.
func (a *benchAR) timed(c *collective.Comm, tr *engine.NetTransport, it int, aligned bool) (time.Duration, error) {
	a.prepare(it)
	if aligned {
		if err := tr.Barrier(); err != nil {
			return 0, fmt.Errorf("iteration %d: barrier: %w", it, err)
		}
	}
	t0 := time.Now()
	err := collective.AllReduce(c, a.data, collective.Sum)
	d := time.Since(t0)
	if err != nil {
		return 0, fmt.Errorf("iteration %d: %w", it, err)
	}
	if aligned {
		a.slowest[0] = d.Seconds()
		if err := collective.AllReduce(c, a.slowest[:], collective.Max); err != nil {
			return 0, fmt.Errorf("iteration %d: the slowest rank's time: %w", it, err)
		}
		d = time.Duration(a.slowest[0] * float64(time.Second))
	}
	return d, a.checkMarks(it)
}

// benchARChild is ranks 1..n-1 of BenchmarkAllReduce: a warm-up call, the
// same b.N calls as rank 0, a full check of the last result, a barrier.
func benchARChild(rank int, addrs []string, ln net.Listener) error {
	size, err := strconv.Atoi(os.Getenv(benchARSizeEnv))
	if err != nil {
		ln.Close()
		return err
	}
	iters, err := strconv.Atoi(os.Getenv(benchARItersEnv))
	if err != nil {
		ln.Close()
		return err
	}
	algo, err := strconv.Atoi(os.Getenv(benchARAlgoEnv))
	if err != nil {
		ln.Close()
		return err
	}
	a, err := newBenchAR(rank, len(addrs), size)
	if err != nil {
		ln.Close()
		return err
	}
	topts, copts, err := benchAROpts(collective.Algorithm(algo), size)
	if err != nil {
		ln.Close()
		return err
	}
	tr, err := engine.FromListener(rank, len(addrs), ln, addrs, topts)
	if err != nil {
		return err
	}
	defer tr.Close()
	c, err := collective.New(tr, copts)
	if err != nil {
		return err
	}
	defer c.Close()
	if err := a.step(c, -1); err != nil {
		return err
	}
	aligned := os.Getenv(benchARAlignedEnv) == "1"
	for it := range iters {
		if _, err := a.timed(c, tr, it, aligned); err != nil {
			return err
		}
	}
	if err := a.checkAll(iters - 1); err != nil {
		return err
	}
	return tr.Barrier()
}

// BenchmarkAllReduce measures float32 Sum allreduce with every rank in its
// own process on loopback: rank 0 is timed here, ranks 1..n-1 are child
// processes. One op is one AllReduce of size bytes (every 32nd op also
// restores the input, see benchARRefill). busbw-GB/s is the NCCL-style bus
// bandwidth size/time * 2(n-1)/n from the mean call; p10-us, p50-us and
// p90-us are percentiles of rank 0's calls, and busbw-p50-GB/s is busbw
// from the median call (the statistic of OpenMPI's figure in
// ../shared/peers/anchors.sh).
func BenchmarkAllReduce(b *testing.B) {
	benchARRunImpls(b, func(int) bool { return true }, func(b *testing.B, n, size int) { benchAllReduce(b, n, size, collective.AlgorithmAuto) })
}

// BenchmarkAllReduceAligned is BenchmarkAllReduce (up to 16 MiB) timed as
// OpenMPI's anchor times MPI_Allreduce: before each call the ranks meet at
// a barrier, and a call's time is the slowest rank's. p50-us and
// busbw-p50-GB/s are then like for like with the anchor's figures; ns/op
// and busbw-GB/s include the barrier and the exchange of the times.
func BenchmarkAllReduceAligned(b *testing.B) {
	benchARRunImpls(b, func(size int) bool { return size <= 16<<20 }, func(b *testing.B, n, size int) {
		benchAllReduceMode(b, n, size, collective.AlgorithmAuto, true)
	})
}

// BenchmarkAllReduceOneSided is BenchmarkAllReduce with the one-sided
// algorithm (Options.Algorithm = AlgorithmOneSided), up to 16 MiB; run
// both to compare, e.g. -bench 'AllReduce(OneSided)?/impl=boltmesh/ranks=2/'.
func BenchmarkAllReduceOneSided(b *testing.B) {
	benchARRunImpls(b, func(size int) bool { return size <= 16<<20 }, func(b *testing.B, n, size int) {
		benchAllReduce(b, n, size, collective.AlgorithmOneSided)
	})
}

func benchAllReduce(b *testing.B, n, size int, algo collective.Algorithm) {
	benchAllReduceMode(b, n, size, algo, false)
}

// benchAllReduceMode is benchAllReduce, with calls timed aligned or not
// (see benchAR.timed).
func benchAllReduceMode(b *testing.B, n, size int, algo collective.Algorithm, aligned bool) {
	iters := b.N
	a, err := newBenchAR(0, n, size)
	if err != nil {
		b.Fatal(err)
	}
	lns, addrs := procListeners(b, n)
	env := []string{fmt.Sprintf("%s=%d", benchARSizeEnv, size), fmt.Sprintf("%s=%d", benchARItersEnv, iters), fmt.Sprintf("%s=%d", benchARAlgoEnv, algo)}
	if aligned {
		env = append(env, benchARAlignedEnv+"=1")
	}
	// Co-located ranks each get their share of the cores, as MPI binds a
	// process per core (see cmd/boltmesh's coreShare), unless GOMAXPROCS
	// is set for all of them.
	if os.Getenv("GOMAXPROCS") == "" {
		share := max(1, runtime.NumCPU()/n)
		env = append(env, fmt.Sprintf("GOMAXPROCS=%d", share))
		defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(share))
	}
	var children []*procChild
	for r := 1; r < n; r++ {
		children = append(children, procStart(b, "bench-allreduce", r, lns[r], addrs, env...))
	}
	topts, copts, err := benchAROpts(algo, size)
	if err != nil {
		b.Fatal(err)
	}
	tr, err := engine.FromListener(0, n, lns[0], addrs, topts)
	if err != nil {
		b.Fatal(err)
	}
	if shm := os.Getenv(benchARImplEnv) == "shm"; (len(tr.Topology().Neighbours()) == n-1) != shm {
		b.Fatalf("%s=%s: rank 0's neighbours %v", benchARImplEnv, os.Getenv(benchARImplEnv), tr.Topology().Neighbours())
	}
	c := mustNew(b, tr, copts)
	b.Cleanup(func() {
		tr.Close()
		c.Close()
	})
	if err := a.step(c, -1); err != nil { // warm-up: scratch, connections, heap area
		b.Fatal(err)
	}
	lat := make([]time.Duration, iters)

	b.SetBytes(int64(size))
	b.ReportAllocs()
	b.ResetTimer()
	for it := range iters {
		if lat[it], err = a.timed(c, tr, it, aligned); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	perOp := b.Elapsed().Seconds() / float64(iters)

	if err := a.checkAll(iters - 1); err != nil {
		b.Error(err)
	}
	if err := tr.Barrier(); err != nil {
		b.Errorf("final barrier: %v", err)
	}
	procWaitAll(b, children, 60*time.Second)

	slices.Sort(lat)
	b.ReportMetric(float64(lat[(iters-1)/2])/float64(time.Microsecond), "p50-us")
	b.ReportMetric(float64(lat[(iters-1)/10])/float64(time.Microsecond), "p10-us")
	b.ReportMetric(float64(lat[(iters-1)*9/10])/float64(time.Microsecond), "p90-us")
	b.ReportMetric(float64(size)/perOp*2*float64(n-1)/float64(n)/1e9, "busbw-GB/s")
	b.ReportMetric(float64(size)/lat[(iters-1)/2].Seconds()*2*float64(n-1)/float64(n)/1e9, "busbw-p50-GB/s")
}
