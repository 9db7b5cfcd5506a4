package engine_test

import (
	"bytes"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/boltmesh/boltmesh/engine"
)

// benchSizes are the message sizes of BenchmarkPingPong and BenchmarkStream.
var benchSizes = []int{8, 1024, 65536, 1048576, 16777216}

// benchImpls are the transports compared.
var benchImpls = []string{"boltmesh", "stdnet"}

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

// newBenchPair connects two ends with impl; both close at cleanup.
func newBenchPair(b *testing.B, impl string) (benchEnd, benchEnd) {
	b.Helper()
	switch impl {
	case "boltmesh":
		ts := newMesh(b, 2, engine.Options{})
		return meshEnd{ts[0], 1}, meshEnd{ts[1], 0}
	case "stdnet":
		return newStdnetPair(b)
	}
	b.Fatalf("unknown impl %q", impl)
	return nil, nil
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

// benchFailer stops a benchmark whose helper goroutine may be blocked: it
// closes both ends (which fails the goroutine's pending operation), waits
// for the goroutine and reports its error, which comes first, too.
type benchFailer struct {
	b    *testing.B
	ends [2]benchEnd
	wg   *sync.WaitGroup
	errc chan error
}

func (f *benchFailer) fatal(err error) {
	f.b.Helper()
	f.ends[0].Close()
	f.ends[1].Close()
	f.wg.Wait()
	select {
	case gerr := <-f.errc:
		f.b.Fatalf("%v (and then: %v)", gerr, err)
	default:
		f.b.Fatal(err)
	}
}

// check reports a helper goroutine's error, after the loop.
func (f *benchFailer) check() {
	f.b.Helper()
	f.wg.Wait()
	select {
	case err := <-f.errc:
		f.b.Fatal(err)
	default:
	}
}

// BenchmarkPingPong measures round trips: one op is a message of size N
// from rank 0 to rank 1 and the same message back. Bytes are counted in
// both directions; p50-us is the median round trip.
func BenchmarkPingPong(b *testing.B) { benchRun(b, benchPingPong) }

func benchPingPong(b *testing.B, impl string, size int) {
	var wg sync.WaitGroup
	b.Cleanup(wg.Wait) // runs after the ends' own cleanup closed them
	a, z := newBenchPair(b, impl)
	want := benchPattern(size)
	sbuf := slices.Clone(want)
	rbuf := make([]byte, size)
	ebuf := make([]byte, size)
	lat := make([]time.Duration, b.N)
	f := &benchFailer{b: b, ends: [2]benchEnd{a, z}, wg: &wg, errc: make(chan error, 1)}
	n := b.N

	wg.Go(func() { // rank 1: echo every message back
		for i := range n {
			m, err := z.RecvInto(ebuf)
			if err == nil {
				err = benchCheck(ebuf, m, size, i)
			}
			if err == nil {
				err = z.Send(benchTag, ebuf[:m])
			}
			if err != nil {
				f.errc <- fmt.Errorf("rank 1, round trip %d: %w", i, err)
				z.Close()
				return
			}
		}
	})

	b.SetBytes(2 * int64(size))
	b.ReportAllocs()
	b.ResetTimer()
	for i := range n {
		benchStamp(sbuf, i)
		t0 := time.Now()
		if err := a.Send(benchTag, sbuf); err != nil {
			f.fatal(fmt.Errorf("rank 0, round trip %d: send: %w", i, err))
		}
		m, err := a.RecvInto(rbuf)
		lat[i] = time.Since(t0)
		if err != nil {
			f.fatal(fmt.Errorf("rank 0, round trip %d: recv: %w", i, err))
		}
		if err := benchCheck(rbuf, m, size, i); err != nil {
			f.fatal(err)
		}
		if i == 0 || i == n-1 {
			b.StopTimer()
			if err := benchCheckWhole(rbuf, want, i); err != nil {
				f.fatal(err)
			}
			b.StartTimer()
		}
	}
	b.StopTimer()
	f.check()
	slices.Sort(lat)
	b.ReportMetric(float64(lat[(n-1)/2])/float64(time.Microsecond), "p50-us")
}

// BenchmarkStream measures one-way throughput: rank 0 sends b.N messages of
// size N back to back and rank 1 receives them; the time is the receiver's.
func BenchmarkStream(b *testing.B) { benchRun(b, benchStream) }

func benchStream(b *testing.B, impl string, size int) {
	var wg sync.WaitGroup
	b.Cleanup(wg.Wait) // runs after the ends' own cleanup closed them
	a, z := newBenchPair(b, impl)
	want := benchPattern(size)
	sbuf := slices.Clone(want)
	rbuf := make([]byte, size)
	f := &benchFailer{b: b, ends: [2]benchEnd{a, z}, wg: &wg, errc: make(chan error, 1)}
	n := b.N
	start := make(chan struct{})

	wg.Go(func() { // rank 0: the sender
		<-start
		for i := range n {
			benchStamp(sbuf, i)
			if err := a.Send(benchTag, sbuf); err != nil {
				f.errc <- fmt.Errorf("rank 0, message %d: send: %w", i, err)
				a.Close()
				return
			}
		}
	})

	b.SetBytes(int64(size))
	b.ReportAllocs()
	b.ResetTimer()
	close(start)
	for i := range n {
		m, err := z.RecvInto(rbuf)
		if err != nil {
			f.fatal(fmt.Errorf("rank 1, message %d: recv: %w", i, err))
		}
		if err := benchCheck(rbuf, m, size, i); err != nil {
			f.fatal(err)
		}
		if i == 0 || i == n-1 { // timed: stopping the clock would let the sender run ahead
			if err := benchCheckWhole(rbuf, want, i); err != nil {
				f.fatal(err)
			}
		}
	}
	b.StopTimer()
	f.check()
}
