package engine_test

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/boltmesh/boltmesh/internal/childproc"

	"github.com/boltmesh/boltmesh/engine"
)

// benchSizes are the message sizes of BenchmarkPingPong and BenchmarkStream.
var benchSizes = []int{8, 1024, 65536, 1048576, 16777216}

// benchImpls are the transports compared: boltmesh over loopback TCP
// (shared memory off), boltmesh over shared memory, and Go's net.
var benchImpls = []string{"boltmesh", "shm", "stdnet"}

// benchOpts are the options of both ranks of a boltmesh impl.
func benchOpts(impl string) engine.Options {
	if impl == "shm" {
		return engine.Options{}
	}
	return engine.Options{SharedMemory: engine.SharedMemoryOff}
}

// requireLink fails b unless rank 0's link to rank 1 is what impl
// measures: pipes for shm, TCP otherwise.
func requireLink(b *testing.B, t *engine.NetTransport, impl string) {
	b.Helper()
	if got, pipes := t.Topology().Neighbours(), impl == "shm"; slices.Equal(got, []int{1}) != pipes {
		b.Fatalf("impl=%s: Topology().Neighbours = %v", impl, got)
	}
}

const benchTag = 7

// benchEnd is one side of a two-party link, the same for both
// implementations: Send goes to the other side, RecvInto takes the next
// message from it. Close unblocks pending operations.
type benchEnd interface {
	Send(tag int, p []byte) error
	RecvInto(dst []byte) (int, error)
	Close() error
}

// meshEnd adapts a rank of a 2-rank mesh to benchEnd.
type meshEnd struct {
	t    *engine.NetTransport
	peer int
}

func (m meshEnd) Send(tag int, p []byte) error { return m.t.Send(m.peer, tag, p) }
func (m meshEnd) RecvInto(dst []byte) (int, error) {
	return m.t.RecvInto(m.peer, benchTag, dst)
}
func (m meshEnd) Close() error { return m.t.Close() }

// Benchmark peers run in a child process (the test binary re-executed),
// so that a benchmark measures two processes on loopback as the reference
// tools (sockperf, iperf3) do, not two goroutines sharing one runtime.
const (
	benchSizeEnv = "BOLTMESH_BENCH_SIZE"
	benchNEnv    = "BOLTMESH_BENCH_N"
	benchAddrEnv = "BOLTMESH_BENCH_ADDR"
)

// newBenchPeer starts the child process that plays rank 1 of impl for op
// ("echo" or "stream") and returns rank 0's end, closed at cleanup after
// the child has been waited for.
func newBenchPeer(b *testing.B, impl, op string, size, n int) benchEnd {
	b.Helper()
	env := []string{fmt.Sprintf("%s=%d", benchSizeEnv, size), fmt.Sprintf("%s=%d", benchNEnv, n)}
	role := "bench-" + impl + "-" + op
	switch impl {
	case "boltmesh", "shm":
		lns, addrs := listeners(b, 2)
		cmd := startChildEnv(b, role, 1, lns[1], addrs, env)
		t, err := engine.FromListener(0, 2, lns[0], addrs, benchOpts(impl))
		if err != nil {
			b.Fatal(err)
		}
		requireLink(b, t, impl)
		end := meshEnd{t, 1}
		b.Cleanup(func() { waitChild(b, cmd, end) })
		return end
	case "stdnet":
		ln, err := net.ListenTCP("tcp", &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)})
		if err != nil {
			b.Fatal(err)
		}
		defer ln.Close()
		cmd := startChildEnv(b, role, 1, nil, nil, append(env, benchAddrEnv+"="+ln.Addr().String()))
		c, err := ln.AcceptTCP()
		if err != nil {
			b.Fatal(err)
		}
		e := newStdnetEnd(c, 0)
		b.Cleanup(func() { waitChild(b, cmd, e) })
		return e
	}
	b.Fatalf("unknown impl %q", impl)
	return nil
}

// runBenchChild is rank 1 of a benchmark: it echoes (op "echo") or sends
// (op "stream") the messages rank 0 expects, checking what it receives.
func runBenchChild(role string, rank int, addrs []string, ln net.Listener) error {
	size, err1 := strconv.Atoi(os.Getenv(benchSizeEnv))
	n, err2 := strconv.Atoi(os.Getenv(benchNEnv))
	if err := errors.Join(err1, err2); err != nil {
		return err
	}
	if strings.HasPrefix(role, benchHeapRole) {
		return runBenchHeapChild(role, rank, addrs, ln, size, n)
	}
	var end benchEnd
	switch {
	case strings.HasPrefix(role, "bench-boltmesh-"), strings.HasPrefix(role, "bench-shm-"):
		t, err := engine.FromListener(rank, len(addrs), ln, addrs, benchOpts(strings.Split(role, "-")[1]))
		if err != nil {
			return err
		}
		end = meshEnd{t, 0}
	case strings.HasPrefix(role, "bench-stdnet-"):
		c, err := net.Dial("tcp", os.Getenv(benchAddrEnv))
		if err != nil {
			return err
		}
		end = newStdnetEnd(c.(*net.TCPConn), 1)
	default:
		return fmt.Errorf("unknown role %q", role)
	}
	defer end.Close()
	if strings.HasSuffix(role, "-echo") {
		return benchEcho(end, size, n)
	}
	return benchSend(end, size, n)
}

func benchEcho(end benchEnd, size, n int) error {
	buf := make([]byte, size)
	for i := range n {
		m, err := end.RecvInto(buf)
		if err == nil {
			err = benchCheck(buf, m, size, i)
		}
		if err == nil {
			err = end.Send(benchTag, buf[:m])
		}
		if err != nil {
			return fmt.Errorf("echo %d: %w", i, err)
		}
	}
	return benchDone(end)
}

func benchSend(end benchEnd, size, n int) error {
	buf := benchPattern(size)
	for i := range n {
		benchStamp(buf, i)
		if err := end.Send(benchTag, buf); err != nil {
			return fmt.Errorf("message %d: %w", i, err)
		}
	}
	return benchDone(end)
}

// benchDone waits for rank 0's last word, so that closing does not race
// with bytes still in flight.
func benchDone(end benchEnd) error {
	var b [1]byte
	_, err := end.RecvInto(b[:])
	return err
}

// waitChild waits for the child to exit and closes rank 0's end; a child
// that fails or does not exit in time fails the benchmark. After a failure
// the end is closed first, so that a child waiting for rank 0 exits.
func waitChild(b *testing.B, child *childproc.Proc, end benchEnd) {
	defer end.Close()
	if b.Failed() {
		end.Close()
	}
	if err := child.WaitFor(30 * time.Second); err != nil {
		b.Errorf("benchmark peer: %v", err)
	}
}

// benchPatternByte is byte j of the size-dependent payload pattern.
func benchPatternByte(size, j int) byte {
	return byte((uint32(j)*2654435761 + uint32(size)*40503 + 0x9e37) >> 24)
}

func benchPattern(size int) []byte {
	p := make([]byte, size)
	for j := range p {
		p[j] = benchPatternByte(size, j)
	}
	return p
}

// benchMarks are the positions checked in every message: first, middle and
// last byte.
func benchMarks(size int) [3]int { return [3]int{0, size / 2, size - 1} }

// benchMarkByte is what message i carries at mark k: the pattern xor a
// per-iteration stamp, so that a stale or reordered message is caught.
func benchMarkByte(size, pos, i, k int) byte {
	return benchPatternByte(size, pos) ^ byte(i*37+11+k*85)
}

// benchStamp writes message i's marks into buf.
func benchStamp(buf []byte, i int) {
	for k, pos := range benchMarks(len(buf)) {
		buf[pos] = benchMarkByte(len(buf), pos, i, k)
	}
}

// benchCheck verifies the length and the marks of message i.
func benchCheck(got []byte, n, size, i int) error {
	if n != size {
		return fmt.Errorf("message %d: received %d bytes, want %d", i, n, size)
	}
	for k, pos := range benchMarks(size) {
		if w := benchMarkByte(size, pos, i, k); got[pos] != w {
			return fmt.Errorf("message %d of %d bytes: byte %d is %#x, want %#x", i, size, pos, got[pos], w)
		}
	}
	return nil
}

// benchCheckWhole compares a message whose marks benchCheck accepted with
// the pattern want, everywhere but at the marks.
func benchCheckWhole(got, want []byte, i int) error {
	m := benchMarks(len(want))
	if !bytes.Equal(got[m[0]+1:m[1]], want[m[0]+1:m[1]]) || !bytes.Equal(got[m[1]+1:m[2]], want[m[1]+1:m[2]]) {
		for j := range want {
			if j != m[0] && j != m[1] && j != m[2] && got[j] != want[j] {
				return fmt.Errorf("message %d of %d bytes: first difference at byte %d: %#x, want %#x", i, len(want), j, got[j], want[j])
			}
		}
	}
	return nil
}

// benchRun runs fn as a sub-benchmark impl=X/size=N for every impl and size.
func benchRun(b *testing.B, fn func(b *testing.B, impl string, size int)) {
	for _, impl := range benchImpls {
		b.Run("impl="+impl, func(b *testing.B) {
			for _, size := range benchSizes {
				b.Run(fmt.Sprintf("size=%d", size), func(b *testing.B) { fn(b, impl, size) })
			}
		})
	}
}

// BenchmarkPingPong measures round trips: one op is a message of size N
// from rank 0 to rank 1 and the same message back. Bytes are counted in
// both directions; p50-us is the median round trip.
func BenchmarkPingPong(b *testing.B) { benchRun(b, benchPingPong) }

func benchPingPong(b *testing.B, impl string, size int) {
	a := newBenchPeer(b, impl, "echo", size, b.N)
	lat := benchRoundTrips(b, size,
		func(p []byte) error { return a.Send(benchTag, p) },
		func(p []byte) (int, error) { return a.RecvInto(p) })
	if err := a.Send(benchTag, []byte{1}); err != nil {
		b.Fatal(err)
	}
	benchLatency(b, lat)
}

// benchRoundTrips times b.N round trips of a size-byte message, each sent
// with send and its echo received with recv, checks every echo, and
// returns the round trips' times, with the timer stopped. Bytes are
// counted both ways.
func benchRoundTrips(b *testing.B, size int, send func([]byte) error, recv func([]byte) (int, error)) []time.Duration {
	n := b.N
	want := benchPattern(size)
	sbuf := slices.Clone(want)
	rbuf := make([]byte, size)
	lat := make([]time.Duration, n)
	b.SetBytes(2 * int64(size))
	b.ReportAllocs()
	b.ResetTimer()
	for i := range n {
		benchStamp(sbuf, i)
		t0 := time.Now()
		if err := send(sbuf); err != nil {
			b.Fatalf("round trip %d: send: %v", i, err)
		}
		m, err := recv(rbuf)
		lat[i] = time.Since(t0)
		if err != nil {
			b.Fatalf("round trip %d: recv: %v", i, err)
		}
		if err := benchCheck(rbuf, m, size, i); err != nil {
			b.Fatal(err)
		}
		if i == 0 || i == n-1 {
			b.StopTimer()
			if err := benchCheckWhole(rbuf, want, i); err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
		}
	}
	b.StopTimer()
	return lat
}

// benchLatency reports the median and the 99th percentile of lat as
// p50-us and p99-us.
func benchLatency(b *testing.B, lat []time.Duration) {
	slices.Sort(lat)
	n := len(lat)
	b.ReportMetric(float64(lat[(n-1)/2])/float64(time.Microsecond), "p50-us")
	b.ReportMetric(float64(lat[(n-1)*99/100])/float64(time.Microsecond), "p99-us")
}

// BenchmarkStream measures one-way throughput: rank 1 sends b.N messages of
// size N back to back and rank 0 receives them; the time is the receiver's.
func BenchmarkStream(b *testing.B) { benchRun(b, benchStream) }

func benchStream(b *testing.B, impl string, size int) {
	n := b.N
	a := newBenchPeer(b, impl, "stream", size, n)
	want := benchPattern(size)
	rbuf := make([]byte, size)
	b.SetBytes(int64(size))
	b.ReportAllocs()
	b.ResetTimer()
	for i := range n {
		m, err := a.RecvInto(rbuf)
		if err != nil {
			b.Fatalf("message %d: recv: %v", i, err)
		}
		if err := benchCheck(rbuf, m, size, i); err != nil {
			b.Fatal(err)
		}
		if i == 0 || i == n-1 { // timed: stopping the clock would let the sender run ahead
			if err := benchCheckWhole(rbuf, want, i); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.StopTimer()
	if err := a.Send(benchTag, []byte{1}); err != nil {
		b.Fatal(err)
	}
}
