package engine_test

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"runtime/pprof"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/boltmesh/boltmesh/internal/childproc"

	"github.com/boltmesh/boltmesh/engine"
)

// benchHeapSize is the symmetric heap of both ranks in BenchmarkPut and
// BenchmarkGet: room for the largest benchmark size.
const benchHeapSize = 64 << 20

// benchHeapWatchdog bounds one run of a one-sided benchmark function. The
// test binary's -timeout does not cover benchmarks, so a hang would
// otherwise last until CI kills the job, without a trace.
const benchHeapWatchdog = 2 * time.Minute

// benchHeapRole is the child role of the one-sided benchmarks; op ("put"
// or "get") follows it.
const benchHeapRole = "bench-heap-"

// newHeapBenchPeer starts the child process that plays rank 1 of the
// one-sided benchmark op ("put" or "get") with a buffer of size bytes, and
// returns rank 0's transport and the buffer on rank 1. When it returns,
// rank 1's buffer holds its initial content (the pattern for "get"). The
// benchmark ends with end, which runs the closing barrier after which the
// child verifies its buffer; the child is waited for at cleanup.
func newHeapBenchPeer(b *testing.B, impl, op string, size, n int) (t *engine.NetTransport, remote engine.SymmetricBuffer, end func()) {
	b.Helper()
	env := []string{fmt.Sprintf("%s=%d", benchSizeEnv, size), fmt.Sprintf("%s=%d", benchNEnv, n)}
	lns, addrs := listeners(b, 2)
	cmd := startChildEnv(b, benchHeapRole+impl+"-"+op, 1, lns[1], addrs, env)
	o := benchOpts(impl)
	o.HeapSize = benchHeapSize
	t, err := engine.FromListener(0, 2, lns[0], addrs, o)
	if err != nil {
		b.Fatal(err)
	}
	requireLink(b, t, impl)
	b.Cleanup(func() { waitChild(b, cmd, meshEnd{t, 1}) })
	benchWatchdog(b, cmd, benchHeapWatchdog)
	buf, err := t.Alloc(uint64(size), 0)
	if err != nil {
		b.Fatal(err)
	}
	if err := t.Barrier(); err != nil { // rank 1's buffer is ready
		b.Fatal(err)
	}
	return t, buf.On(1), func() {
		if err := t.Barrier(); err != nil { // rank 1 checks its buffer now
			b.Fatal(err)
		}
	}
}

// benchWatchdog makes a run of b that lasts longer than d dump the
// goroutines of the child (SIGQUIT) and of this process, and exit.
func benchWatchdog(b *testing.B, cmd *childproc.Proc, d time.Duration) {
	w := time.AfterFunc(d, func() {
		fmt.Fprintf(os.Stderr, "%s: no progress after %v; goroutines of the child, then of rank 0:\n", b.Name(), d)
		cmd.Process.Signal(syscall.SIGQUIT)
		time.Sleep(2 * time.Second)
		pprof.Lookup("goroutine").WriteTo(os.Stderr, 2)
		os.Exit(2)
	})
	b.Cleanup(func() { w.Stop() })
}

// runBenchHeapChild is rank 1 of BenchmarkPut or BenchmarkGet: it
// allocates the same buffer as rank 0, fills it with the pattern for a get
// benchmark, waits in a barrier while rank 0 works, and then verifies the
// buffer: for put it must hold the last message rank 0 put, for get it
// must be unchanged.
func runBenchHeapChild(role string, rank int, addrs []string, ln net.Listener, size, n int) error {
	impl, op, _ := strings.Cut(strings.TrimPrefix(role, benchHeapRole), "-")
	if op != "put" && op != "get" {
		return fmt.Errorf("unknown role %q", role)
	}
	o := benchOpts(impl)
	o.HeapSize = benchHeapSize
	t, err := engine.FromListener(rank, len(addrs), ln, addrs, o)
	if err != nil {
		return err
	}
	defer t.Close()
	buf, err := t.Alloc(uint64(size), 0)
	if err != nil {
		return err
	}
	h, err := t.Bytes(buf)
	if err != nil {
		return err
	}
	want := benchPattern(size)
	if op == "get" {
		copy(h, want)
	} else {
		clear(h)
		benchStamp(want, n-1)
	}
	if err := t.Barrier(); err != nil {
		return fmt.Errorf("opening barrier: %w", err)
	}
	if err := t.Barrier(); err != nil {
		return fmt.Errorf("closing barrier: %w", err)
	}
	if !bytes.Equal(h, want) {
		j := 0
		for h[j] == want[j] {
			j++
		}
		return fmt.Errorf("%s of %d bytes x %d: rank 1's buffer differs first at byte %d: %#x, want %#x", op, size, n, j, h[j], want[j])
	}
	return nil
}

// benchHeapImpls are what the one-sided benchmarks compare: boltmesh
// over loopback TCP, over shared memory, and a plain copy of as many
// bytes in one process (what a put or get between neighbours can at best
// be).
var benchHeapImpls = []string{"boltmesh", "shm", "copy"}

// benchRunSizes runs fn as a sub-benchmark impl=X/size=N for every impl
// of the one-sided benchmarks and every size.
func benchRunSizes(b *testing.B, fn func(b *testing.B, impl string, size int)) {
	for _, impl := range benchHeapImpls {
		b.Run("impl="+impl, func(b *testing.B) {
			for _, size := range benchSizes {
				b.Run(fmt.Sprintf("size=%d", size), func(b *testing.B) { fn(b, impl, size) })
			}
		})
	}
}

// benchCopy is impl=copy: b.N copies of size bytes between two buffers
// of this process, checked like the transfers.
func benchCopy(b *testing.B, size int) {
	src, dst := benchPattern(size), make([]byte, size)
	b.SetBytes(int64(size))
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		benchStamp(src, i)
		copy(dst, src)
	}
	b.StopTimer()
	if err := benchCheck(dst, len(dst), size, b.N-1); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkPut measures one-sided writes: b.N Puts of N bytes from rank 0
// into the same buffer in rank 1's heap, followed by a Quiet, inside the
// timed region, so that all the data is at the target when the clock
// stops. Every message is stamped with its number at its first, middle and
// last byte; rank 1 checks after the closing barrier that its buffer holds
// the last one.
func BenchmarkPut(b *testing.B) { benchRunSizes(b, benchPut) }

func benchPut(b *testing.B, impl string, size int) {
	if impl == "copy" {
		benchCopy(b, size)
		return
	}
	n := b.N
	t, dst, end := newHeapBenchPeer(b, impl, "put", size, n)
	sbuf := benchPattern(size)
	b.SetBytes(int64(size))
	b.ReportAllocs()
	b.ResetTimer()
	for i := range n {
		benchStamp(sbuf, i)
		if err := t.Put(dst, sbuf); err != nil {
			b.Fatalf("put %d: %v", i, err)
		}
	}
	if err := t.Quiet(); err != nil {
		b.Fatalf("quiet: %v", err)
	}
	b.StopTimer()
	end()
}

// BenchmarkGet measures one-sided reads: b.N Gets of N bytes from rank 1's
// heap into the same buffer of rank 0. Each get's first, middle and last
// byte are poisoned before and checked after it; the whole buffer is
// poisoned and compared at the first and last iteration (outside the
// timed region). p50-us is the median get.
func BenchmarkGet(b *testing.B) { benchRunSizes(b, benchGet) }

func benchGet(b *testing.B, impl string, size int) {
	if impl == "copy" {
		benchCopy(b, size)
		return
	}
	n := b.N
	t, src, end := newHeapBenchPeer(b, impl, "get", size, n)
	want := benchPattern(size)
	marks := benchMarks(size)
	rbuf := make([]byte, size)
	lat := make([]time.Duration, n)
	b.SetBytes(int64(size))
	b.ReportAllocs()
	b.ResetTimer()
	for i := range n {
		whole := i == 0 || i == n-1
		if whole {
			b.StopTimer()
			for j := range rbuf {
				rbuf[j] = ^want[j]
			}
			b.StartTimer()
		} else {
			for _, pos := range marks {
				rbuf[pos] = ^want[pos]
			}
		}
		t0 := time.Now()
		err := t.Get(src, rbuf)
		lat[i] = time.Since(t0)
		if err != nil {
			b.Fatalf("get %d: %v", i, err)
		}
		for _, pos := range marks {
			if rbuf[pos] != want[pos] {
				b.Fatalf("get %d of %d bytes: byte %d is %#x, want %#x", i, size, pos, rbuf[pos], want[pos])
			}
		}
		if whole {
			b.StopTimer()
			if !bytes.Equal(rbuf, want) {
				j := 0
				for rbuf[j] == want[j] {
					j++
				}
				b.Fatalf("get %d of %d bytes: first difference at byte %d: %#x, want %#x", i, size, j, rbuf[j], want[j])
			}
			b.StartTimer()
		}
	}
	b.StopTimer()
	end()
	slices.Sort(lat)
	b.ReportMetric(float64(lat[(n-1)/2])/float64(time.Microsecond), "p50-us")
}
