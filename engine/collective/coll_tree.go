package collective

import (
	"context"

	"github.com/boltmesh/boltmesh/internal/proflabel"
)

// Broadcast copies root's data to every rank: on return every rank's data
// holds root's. Every rank must pass the same length.
func Broadcast[T Elem](c *Comm, root int, data []T) error {
	return c.BroadcastBytes(context.Background(), root, AsBytes(data))
}

// BroadcastBytes is Broadcast over raw bytes, of any length (the same on
// every rank). Below Options.BcastScatterMin bytes (default
// BcastScatterMin), or with fewer than 3 ranks, it runs a binomial tree
// rooted at root: ceil(log2 n) rounds, each rank receiving once (straight
// into data) and sending to at most log2 n children, the largest subtree
// first. From there it scatters and gathers (van de Geijn): root sends
// rank v (numbered from root, in host order: hosts.go) the v-th of n
// segments, and a chain from root through every rank passes each segment
// on, so that root sends 2(n-1)/n of the data and every other rank
// receives it once, where the tree moves all of it ceil(log2 n) times
// across some link.
//
// A rank that receives fewer bytes than it expected fails with
// ErrLengthMismatch, and one that would receive more with the transport's
// truncation error; a rank that received too few still forwards what it
// got, so its subtree fails too rather than waiting.
func (c *Comm) BroadcastBytes(ctx context.Context, root int, data []byte) (err error) {
	const fn = "Broadcast"
	if err := collCheckRoot(fn, root, c.t.WorldSize()); err != nil {
		return c.refuse(kindBroadcast, err)
	}
	tag := c.begin(kindBroadcast, 0, 0)
	defer c.end(&err)
	defer proflabel.Restore(c.label(ctx, collLabels(kindBroadcast, len(data))))
	if c.t.WorldSize() >= 3 && len(data) >= c.opts.BcastScatterMin {
		return c.keepUp(ctx, tag, c.scatterBcast(ctx, tag, root, data))
	}
	return c.keepUp(ctx, tag, c.binomialBcast(ctx, tag, root, data))
}

// BcastScatterMin is the smallest broadcast, in bytes, that scatters and
// gathers rather than running a binomial tree (in worlds of 3 ranks or
// more). Below it the tree's fewer steps win; from it the scatter and
// chain were the faster on emulated hosts, and over shared memory at
// 256 KiB and 1 MiB (bench/RESULTS.md, "Figures moved out of code
// comments", BcastScatterMin).
const BcastScatterMin = 256 << 10

// bcastSeg is segment i of n of a broadcast of size bytes: [lo, hi).
func bcastSeg(i, n, size int) (lo, hi int) {
	return int(int64(i) * int64(size) / int64(n)), int(int64(i+1) * int64(size) / int64(n))
}

// scatterBcast is the scatter and chain of BroadcastBytes. Ranks are
// numbered from root (v); segment v goes from root to v on step 0, then
// on step s+1 (s from 0 to n-2) rank v passes segment v-s (mod n) to
// v+1 and takes segment v-s-1 from v-1; root takes nothing and the last
// rank passes nothing on, so every rank ends with every segment.
func (c *Comm) scatterBcast(ctx context.Context, tag uint32, root int, data []byte) error {
	n := c.t.WorldSize()
	v := c.fromRoot(c.t.Rank(), root)
	abs := func(u int) int { return c.rankFrom(u, root) }
	seg := func(i int) []byte {
		lo, hi := bcastSeg((i%n+n)%n, n, len(data))
		return data[lo:hi]
	}
	if v == 0 {
		for u := 1; u < n; u++ {
			if err := c.send(ctx, abs(u), tag, seg(u)); err != nil {
				return err
			}
		}
	} else {
		in := seg(v)
		m, err := c.recv(ctx, root, tag, in)
		if err == nil {
			err = c.recvCheck(m, len(in), root)
		}
		if err != nil {
			return err
		}
	}
	right, left := abs(v+1), abs(v-1)
	for s := 0; s < n-1; s++ {
		st := collTag(tag, s+1)
		out, in := seg(v-s), seg(v-s-1)
		var m int
		var err error
		switch {
		case v == 0:
			err = c.send(ctx, right, st, out)
			m = len(in)
		case v == n-1:
			m, err = c.recv(ctx, left, st, in)
		default:
			m, err = c.exchange(ctx, right, left, st, out, in)
		}
		if err == nil {
			err = c.recvCheck(m, len(in), left)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

func (c *Comm) binomialBcast(ctx context.Context, tag uint32, root int, data []byte) error {
	n := c.t.WorldSize()
	v := c.fromRoot(c.t.Rank(), root) // rank relative to root
	mask := 1
	var rerr error
	for ; mask < n; mask <<= 1 {
		if v&mask != 0 {
			parent := c.rankFrom(v-mask, root)
			m, err := c.recv(ctx, parent, tag, data)
			if err != nil {
				return err
			}
			if rerr = c.recvCheck(m, len(data), parent); rerr != nil {
				data = data[:m]
			}
			break
		}
	}
	// Children are v+mask/2, v+mask/4, ..., v+1 (those below n).
	for mask >>= 1; mask > 0; mask >>= 1 {
		if v+mask < n {
			if err := c.send(ctx, c.rankFrom(v+mask, root), tag, data); err != nil && rerr == nil {
				return err
			}
		}
	}
	return rerr
}

// ReduceTo reduces data element-wise across all ranks with op into root's
// data. The other ranks' data is left unchanged.
func ReduceTo[T Elem](c *Comm, root int, data []T, op Op) error {
	return c.ReduceToBytes(context.Background(), root, DTypeOf[T](), AsBytes(data), op)
}

// ReduceTo16 is ReduceTo for float16 or bfloat16 data stored as uint16
// (dt Float16 or BFloat16), accumulated in float32 per step.
func ReduceTo16(c *Comm, root int, dt DType, data []uint16, op Op) error {
	if dt.Size() != 2 {
		return errDType("ReduceTo16", dt)
	}
	return c.ReduceToBytes(context.Background(), root, dt, AsBytes16(data), op)
}

// ReduceToBytes reduces raw data holding elements of dt across all ranks
// with op into root's data; the other ranks' data is left unchanged (they
// reduce in scratch). Every rank must pass the same length.
//
// It runs a binomial tree over the ranks numbered from root in host order
// (v = (position - root's position) mod n, hosts.go): rank v combines its
// own data with the partial results of its children v+1, v+2, v+4, ...
// in that order, acc = acc op child, and sends acc to its parent. The
// order of every reduction is therefore fixed by n, root and the ranks'
// hosts, and the result is deterministic. A Mean is divided by n at the
// root.
func (c *Comm) ReduceToBytes(ctx context.Context, root int, dt DType, data []byte, op Op) (err error) {
	const fn = "ReduceTo"
	if err := collCheckReduce(fn, dt, data, op); err != nil {
		return c.refuse(kindReduce, err)
	}
	n := c.t.WorldSize()
	if err := collCheckRoot(fn, root, n); err != nil {
		return c.refuse(kindReduce, err)
	}
	tag := c.begin(kindReduce, dt, op)
	defer c.end(&err)
	defer proflabel.Restore(c.label(ctx, collLabels(kindReduce, len(data))))
	if err := c.binomialReduce(ctx, tag, root, dt, data, op); err != nil {
		return err
	}
	if c.t.Rank() == root {
		if err := FinishBytes(dt, data, op, n); err != nil {
			return err
		}
	}
	return c.keepUp(ctx, tag, nil)
}

func (c *Comm) binomialReduce(ctx context.Context, tag uint32, root int, dt DType, data []byte, op Op) error {
	n := c.t.WorldSize()
	v := c.fromRoot(c.t.Rank(), root)
	acc := data // this rank's partial result: data at the root, else scratch
	var buf []byte
	haveBuf := false
	for mask := 1; mask < n; mask <<= 1 {
		if v&mask != 0 { // a leaf sends data itself, an inner rank its scratch
			return c.send(ctx, c.rankFrom(v-mask, root), tag, acc)
		}
		child := v + mask
		if child >= n {
			continue
		}
		if !haveBuf {
			haveBuf = true
			if v != 0 { // accumulate in scratch, leaving data untouched
				s := c.collScratch(2 * len(data))
				acc, buf = s[:len(data)], s[len(data):]
				copy(acc, data)
			} else {
				buf = c.collScratch(len(data))
			}
		}
		from := c.rankFrom(child, root)
		m, err := c.recv(ctx, from, tag, buf)
		if err == nil {
			err = c.recvCheck(m, len(buf), from)
		}
		if err == nil {
			err = CombineBytes(dt, acc, buf, op)
		}
		if err != nil {
			return err
		}
	}
	return nil
}
