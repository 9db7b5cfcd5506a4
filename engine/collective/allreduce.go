package collective

import (
	"context"
	"fmt"
	"math"
	"runtime/pprof"

	"github.com/boltmesh/boltmesh/internal/proflabel"
)

// AllReduce reduces data element-wise across all ranks with op, in place:
// every rank ends with the same result, bit for bit (see AllReduceBytes,
// and there what a failed call means for the other ranks).
func AllReduce[T Elem](c *Comm, data []T, op Op) error {
	return c.AllReduceBytes(context.Background(), DTypeOf[T](), AsBytes(data), op)
}

// AllReduce16 is AllReduce for float16 or bfloat16 data stored as uint16
// (dt Float16 or BFloat16), accumulated in float32 (see AllReduceBytes for
// failed calls).
func AllReduce16(c *Comm, dt DType, data []uint16, op Op) error {
	return c.AllReduceBytes(context.Background(), dt, AsBytes16(data), op)
}

// AllReduceBytes reduces raw data holding elements of dt, in place. Small
// messages use recursive doubling (log2 n steps); from Options.RingMin
// bytes on, a ring reduce-scatter followed by an all-gather moves only
// 2(n-1)/n of the data per rank; between them, from Options.HalvingMin in a
// world of 4 or more that spans machines, Rabenseifner's algorithm
// moves as little in 2 log2(n) steps; on a star of more than two ranks the
// coordinator reduces and broadcasts (Options.Algorithm can fix any, or
// select the one-sided algorithm over the symmetric heap). Every element
// is reduced in one fixed order, and each pairwise step is commutative
// (IEEE addition, multiplication, max and min are), so every rank ends
// with identical bits.
//
// Every rank must pass the same length, element type and reduction: ranks
// whose lengths differ fail with an error wrapping ErrMismatch and
// ErrLengthMismatch (a *CallLengthError, or one saying that the ranks
// are at different steps of the call), and other differences with a
// *MismatchError; with more than two ranks, a rank that received no odd
// message fails with ErrAbandoned instead.
//
// ctx bounds the call on this rank only. The ranks do not agree on a
// call's outcome: a rank completes the call as soon as it has received
// every part it needs, so others may complete a call that failed here
// (its ctx ended, say, after it had sent its data), with results that
// include this rank's data. This rank's error then wraps
// ErrMayHaveCompleted (*PartialError). It does so whenever this rank had
// handed the transport any message of the call; one that does not
// (a ctx that had ended before the call or before its first message,
// refused arguments) means that no rank completes the call: each fails,
// the others with ErrAbandoned (or the same lost peer). Whatever happened, every rank's next
// call works, with or without a ctx (see the package documentation,
// "Failed calls").
func (c *Comm) AllReduceBytes(ctx context.Context, dt DType, data []byte, op Op) (err error) {
	if err := collCheckReduce("AllReduce", dt, data, op); err != nil {
		return c.refuse(kindAllReduce, err)
	}
	n := c.t.WorldSize()
	algo, err := c.allReduceAlgo(n, len(data))
	if err != nil {
		return c.refuse(kindAllReduce, err)
	}
	tag := c.begin(kindAllReduce, dt, op)
	defer c.end(&err)
	defer proflabel.Restore(c.label(ctx, c.labels(algo, len(data))))
	switch algo {
	case AlgorithmOneSided:
		return c.oneSided(ctx, tag, dt, data, op)
	case AlgorithmStar:
		err = c.star(ctx, tag, dt, data, op)
	case AlgorithmRing:
		err = c.ring(ctx, tag, dt, data, op)
	case AlgorithmHalving:
		err = c.halving(ctx, tag, dt, data, op)
	default:
		err = c.doubling(ctx, tag, dt, data, op)
	}
	if err == nil {
		err = FinishBytes(dt, data, op, n)
	}
	return err
}

// allReduceAlgo returns the algorithm an allreduce of size bytes over n
// ranks takes: AlgorithmDoubling, AlgorithmRing or AlgorithmOneSided.
func (c *Comm) allReduceAlgo(n, size int) (Algorithm, error) {
	switch c.opts.Algorithm {
	case AlgorithmAuto:
		if c.useStar(n) {
			return AlgorithmStar, nil
		}
		if c.links && c.shared && !c.ringSet && n >= 4 && size >= c.opts.HalvingMin {
			return AlgorithmHalving, nil // the link carries 1/p2 a step (coll_halving.go)
		}
		if c.useRing(n, size) {
			return AlgorithmRing, nil
		}
		if c.links && n >= 4 && size >= c.opts.HalvingMin {
			return AlgorithmHalving, nil
		}
		return AlgorithmDoubling, nil
	case AlgorithmDoubling:
		return AlgorithmDoubling, nil
	case AlgorithmRing:
		if n < 2 || 2*(n-1) >= tagsPerCall {
			return AlgorithmDoubling, nil
		}
		return AlgorithmRing, nil
	case AlgorithmHalving:
		if n < 2 {
			return AlgorithmDoubling, nil
		}
		return AlgorithmHalving, nil
	case AlgorithmOneSided:
		if c.sym == nil {
			return 0, ErrNoSymmetricHeap
		}
		return AlgorithmOneSided, nil
	case AlgorithmStar:
		if c.center < 0 {
			return 0, fmt.Errorf("%w: AlgorithmStar needs a star transport", ErrAlgorithm)
		}
		return AlgorithmStar, nil
	}
	return 0, fmt.Errorf("%w (Options.Algorithm %v)", ErrAlgorithm, c.opts.Algorithm)
}

// useRing reports whether an allreduce of size bytes over n ranks takes
// the ring rather than recursive doubling.
func (c *Comm) useRing(n, size int) bool {
	ringMin := c.opts.RingMin
	if ringMin == 0 {
		ringMin = defaultRingMin(n)
	}
	switch {
	case n < 2 || 2*(n-1) >= tagsPerCall:
		return false
	case n == 2:
		chunk := c.opts.Chunk
		if len(c.chunks) == 2 {
			chunk = c.chunks[1-c.t.Rank()]
		}
		return size >= max(ringMin, 2*chunk)
	}
	return size >= ringMin
}

// sizeClasses name message sizes in profile labels.
var sizeClasses = [...]struct {
	below int
	name  string
}{{1 << 10, "<1KiB"}, {64 << 10, "<64KiB"}, {1 << 20, "<1MiB"}, {16 << 20, "<16MiB"}, {math.MaxInt, ">=16MiB"}}

// labels returns the profile labels of an allreduce (op, algorithm, size
// class), made once per Comm so that labelling a call allocates nothing.
// They go over the labels of the call's ctx for its duration (labels.go).
func (c *Comm) labels(algo Algorithm, size int) context.Context {
	s := 0
	for size >= sizeClasses[s].below {
		s++
	}
	if c.labelCtx[algo][s] == nil {
		c.labelCtx[algo][s] = pprof.WithLabels(context.Background(), pprof.Labels("op", "allreduce", "algorithm", algo.String(), "size", sizeClasses[s].name))
	}
	return c.labelCtx[algo][s]
}

// recvCheck checks that a peer's message had the expected length: one
// that is shorter (a longer one the transport refuses) means the ranks
// passed different lengths.
func (c *Comm) recvCheck(n, want, from int) error {
	if n != want {
		return &CallLengthError{Rank: from, Want: want, Got: n}
	}
	return nil
}

// doubling is recursive doubling. With n not a power of two, the first
// 2*rem ranks pair up first (foldIn): each even one hands its data to the
// odd one above it and waits for the result, leaving a power of two to
// double.
func (c *Comm) doubling(ctx context.Context, tag uint32, dt DType, data []byte, op Op) error {
	p2, rem, done, err := c.foldIn(ctx, tag, dt, data, op)
	if done || err != nil {
		return err
	}
	buf := c.scratch(len(data))
	v := virtualRank(c.position(c.t.Rank()), rem)
	step := uint32(2)
	for mask := 1; mask < p2; mask, step = mask*2, step+1 {
		peer := c.rankAt(realRank(v^mask, rem))
		if err := c.exchangeReduce(ctx, peer, tag+step, dt, data, buf, op); err != nil {
			return err
		}
	}
	return c.foldOut(ctx, tag, data, rem)
}

// foldIn leaves a power of two of ranks, p2, for doubling and halving:
// of the first 2*rem = 2*(n-p2) ranks, each even one sends its data to
// the odd one above it (on tag) and waits for the result (on tag+1),
// which ends its call (done); the odd one reduces the two into data.
// Those steps take tags tag and tag+1; the caller's start at tag+2.
func (c *Comm) foldIn(ctx context.Context, tag uint32, dt DType, data []byte, op Op) (p2, rem int, done bool, err error) {
	r, n := c.position(c.t.Rank()), c.t.WorldSize()
	p2 = 1
	for p2*2 <= n {
		p2 *= 2
	}
	rem = n - p2
	switch {
	case r >= 2*rem:
		return p2, rem, false, nil
	case r%2 == 0: // folded: contribute, then wait for the result
		up := c.rankAt(r + 1)
		if err := c.send(ctx, up, tag, data); err != nil {
			return p2, rem, true, err
		}
		m, err := c.recv(ctx, up, tag+1, data)
		if err == nil {
			err = c.recvCheck(m, len(data), up)
		}
		return p2, rem, true, err
	}
	down := c.rankAt(r - 1)
	buf := c.scratch(len(data))
	m, err := c.recv(ctx, down, tag, buf)
	if err == nil {
		err = c.recvCheck(m, len(data), down)
	}
	if err == nil {
		err = CombineBytes(dt, data, buf, op)
	}
	return p2, rem, false, err
}

// foldOut hands the result back to the rank foldIn folded into this one,
// if any.
func (c *Comm) foldOut(ctx context.Context, tag uint32, data []byte, rem int) error {
	if r := c.position(c.t.Rank()); r < 2*rem {
		return c.send(ctx, c.rankAt(r-1), tag+1, data)
	}
	return nil
}

// virtualRank numbers the ranks that take part in the doubling 0..p2-1,
// from their positions (Comm.position).
func virtualRank(r, rem int) int {
	if r < 2*rem {
		return r / 2
	}
	return r - rem
}

// realRank inverts virtualRank.
func realRank(v, rem int) int {
	if v < rem {
		return 2*v + 1
	}
	return v + rem
}

// ring is a ring reduce-scatter followed by a ring all-gather over n
// segments of (nearly) equal element counts; any length works. In the
// reduce-scatter each step's segment travels in frames of Options.Chunk
// bytes, and each piece is reduced as soon as it has arrived while the
// next ones are still on the wire.
func (c *Comm) ring(ctx context.Context, tag uint32, dt DType, data []byte, op Op) error {
	r, n := c.position(c.t.Rank()), c.t.WorldSize()
	esz := dt.Size()
	elems := len(data) / esz
	seg := func(i int) []byte {
		return data[(i*elems/n)*esz : ((i+1)*elems/n)*esz]
	}
	right, left := c.rankAt((r+1)%n), c.rankAt((r-1+n)%n)
	for s := 0; s < n-1; s++ {
		out, in := seg((r-s+n)%n), seg((r-s-1+n)%n)
		buf := c.scratch(len(in))
		c.pipe = pipeState{dt: dt, op: op, dst: in, src: buf}
		err := c.exchangeChunks(ctx, right, left, tag+uint32(s), out, buf, esz, c.reduceChunk)
		c.pipe = pipeState{}
		if err != nil {
			return err
		}
	}
	for s := 0; s < n-1; s++ {
		out, in := seg((r+1-s+n)%n), seg((r-s+n)%n)
		if err := c.exchangeChunks(ctx, right, left, tag+uint32(n-1+s), out, in, esz, skipChunk); err != nil {
			return err
		}
	}
	return nil
}

// exchangeReduce swaps data with peer, receiving into buf, and reduces buf
// into data. Messages above the pair's piece size (Options.Chunk) travel
// in pieces, each reduced as it lands, so that the socket buffers never
// fill (see the transport's window of pieces, chunkWindow, exchange.go).
func (c *Comm) exchangeReduce(ctx context.Context, peer int, tag uint32, dt DType, data, buf []byte, op Op) error {
	if len(data) <= c.pairChunk(peer) {
		m, err := c.exchange(ctx, peer, peer, tag, data, buf)
		if err == nil {
			err = c.recvCheck(m, len(data), peer)
		}
		if err == nil {
			err = CombineBytes(dt, data, buf, op)
		}
		return err
	}
	c.pipe = pipeState{dt: dt, op: op, dst: data, src: buf}
	err := c.exchangeChunks(ctx, peer, peer, tag, data, buf, dt.Size(), c.reduceChunk)
	c.pipe = pipeState{}
	return err
}

// pipeState is what reduceChunk works on during a pipelined step.
type pipeState struct {
	dt       DType
	op       Op
	dst, src []byte
}

// pipeChunk reduces bytes [off, off+n) of the step's received segment
// into the destination; c.reduceChunk is it as a method value, made once.
func (c *Comm) pipeChunk(off, n int) error {
	p := &c.pipe
	return CombineBytes(p.dt, p.dst[off:off+n], p.src[off:off+n], p.op)
}

// skipChunk is the onChunk of exchanges with nothing to do per piece.
func skipChunk(off, n int) error { return nil }
