package collective

import (
	"context"

	"github.com/boltmesh/boltmesh/internal/proflabel"
)

// AllGather concatenates every rank's in, in rank order, into every rank's
// out: rank r contributes counts[r] elements, and out holds sum(counts).
// in may be out's own segment (in place).
func AllGather[T Elem](c *Comm, in, out []T, counts []int) error {
	return c.AllGatherBytes(context.Background(), DTypeOf[T](), AsBytes(in), AsBytes(out), counts)
}

// AllGatherBytes is AllGather over raw bytes holding elements of dt
// (counts are in elements; dt only sets their size). Every rank must pass
// the same counts; len(in) must be counts[rank]*dt.Size() and len(out)
// sum(counts)*dt.Size(). in may be out's own segment; otherwise they must
// not overlap.
//
// It runs a ring: n-1 steps, in each of which every rank sends the segment
// it got last to its right neighbour and receives the next one from its
// left neighbour straight into out, so each rank sends and receives
// sum(counts) - its own count elements, the least possible.
func (c *Comm) AllGatherBytes(ctx context.Context, dt DType, in, out []byte, counts []int) (err error) {
	const fn = "AllGather"
	esz, err := collElemSize(fn, dt)
	if err != nil {
		return c.refuse(kindAllGather, err)
	}
	r, n := c.t.Rank(), c.t.WorldSize()
	total, err := collCheckCounts(fn, "counts", counts, n, esz)
	if err != nil {
		return c.refuse(kindAllGather, err)
	}
	if err := collCheckLen(fn, "in", dt, len(in), counts[r]*esz); err != nil {
		return c.refuse(kindAllGather, err)
	}
	if err := collCheckLen(fn, "out", dt, len(out), total); err != nil {
		return c.refuse(kindAllGather, err)
	}
	tag := c.begin(kindAllGather, dt, 0)
	defer c.end(&err)
	defer proflabel.Restore(c.label(ctx, collLabels(kindAllGather, total)))
	off := collOffset(counts, r, esz)
	copy(out[off:off+len(in)], in)
	if n == 1 {
		return nil
	}
	// Around the ring in host order (hosts.go): on step s the rank at
	// position p passes on the segment of the rank at position p-s and
	// takes that of p-s-1.
	p := c.position(r)
	right, left := c.rankAt((p+1)%n), c.rankAt((p-1+n)%n)
	for s := 0; s < n-1; s++ {
		sendIdx, recvIdx := c.rankAt((p-s+n)%n), c.rankAt((p-s-1+n)%n)
		sendOff, recvOff := collOffset(counts, sendIdx, esz), collOffset(counts, recvIdx, esz)
		send := out[sendOff : sendOff+counts[sendIdx]*esz]
		recv := out[recvOff : recvOff+counts[recvIdx]*esz]
		m, err := c.exchange(ctx, right, left, collTag(tag, s), send, recv)
		if err == nil {
			err = c.recvCheck(m, len(recv), left)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// ReduceScatter reduces data element-wise across all ranks with op and
// leaves in rank r's segment of data (counts[r] elements, the segments in
// rank order) the full reduction of that segment. The other segments are
// left unchanged.
func ReduceScatter[T Elem](c *Comm, data []T, counts []int, op Op) error {
	return c.ReduceScatterBytes(context.Background(), DTypeOf[T](), AsBytes(data), counts, op)
}

// ReduceScatter16 is ReduceScatter for float16 or bfloat16 data stored as
// uint16 (dt Float16 or BFloat16), accumulated in float32 per step.
func ReduceScatter16(c *Comm, dt DType, data []uint16, counts []int, op Op) error {
	if dt.Size() != 2 {
		return errDType("ReduceScatter16", dt)
	}
	return c.ReduceScatterBytes(context.Background(), dt, AsBytes16(data), counts, op)
}

// ReduceScatterBytes is ReduceScatter over raw bytes holding elements of
// dt; counts (the same on every rank) are in elements, and len(data) must
// be sum(counts)*dt.Size(). Only this rank's segment of data is written.
//
// It runs a ring: n-1 steps, in each of which every rank sends a partial
// result to its right neighbour and combines the one it receives from its
// left with its own contribution, in scratch, so that segment j is
// reduced in the fixed order x[j+1], x[j+2], ..., x[j+n] (by position in
// host order, hosts.go, mod n): the result is deterministic, and each
// rank sends and receives sum(counts) - its own count elements. A Mean
// is divided by n at the end.
func (c *Comm) ReduceScatterBytes(ctx context.Context, dt DType, data []byte, counts []int, op Op) (err error) {
	const fn = "ReduceScatter"
	if err := collCheckReduce(fn, dt, data, op); err != nil {
		return c.refuse(kindReduceScatter, err)
	}
	esz := dt.Size()
	r, n := c.t.Rank(), c.t.WorldSize()
	total, err := collCheckCounts(fn, "counts", counts, n, esz)
	if err != nil {
		return c.refuse(kindReduceScatter, err)
	}
	if err := collCheckLen(fn, "data", dt, len(data), total); err != nil {
		return c.refuse(kindReduceScatter, err)
	}
	tag := c.begin(kindReduceScatter, dt, op)
	defer c.end(&err)
	defer proflabel.Restore(c.label(ctx, collLabels(kindReduceScatter, total)))
	off := collOffset(counts, r, esz)
	mine := data[off : off+counts[r]*esz]
	if n > 1 {
		if err := c.ringReduceScatter(ctx, tag, dt, data, counts, op); err != nil {
			return err
		}
	}
	return FinishBytes(dt, mine, op, n)
}

func (c *Comm) ringReduceScatter(ctx context.Context, tag uint32, dt DType, data []byte, counts []int, op Op) error {
	r, n := c.t.Rank(), c.t.WorldSize()
	esz := dt.Size()
	maxSeg := 0
	for _, k := range counts {
		maxSeg = max(maxSeg, k*esz)
	}
	// Two receive buffers, taking turns: one is being sent on while the
	// next partial result arrives in the other.
	sc := c.collScratch(2 * maxSeg)
	bufs := [2][]byte{sc[:maxSeg], sc[maxSeg:]}
	// Around the ring in host order (hosts.go): step s sends the segment
	// of the rank at position p-s-1 and receives that of p-s-2 (mod n);
	// the last step receives this rank's own.
	p := c.position(r)
	right, left := c.rankAt((p+1)%n), c.rankAt((p-1+n)%n)
	sendOff := collOffset(counts, left, esz)
	send := data[sendOff : sendOff+counts[left]*esz]
	for s := 0; s < n-1; s++ {
		recvIdx := c.rankAt((p - s - 2 + 2*n) % n)
		recvOff := collOffset(counts, recvIdx, esz)
		in := bufs[s%2][:counts[recvIdx]*esz]
		m, err := c.exchange(ctx, right, left, collTag(tag, s), send, in)
		if err == nil {
			err = c.recvCheck(m, len(in), left)
		}
		if err != nil {
			return err
		}
		local := data[recvOff : recvOff+len(in)]
		if s == n-2 { // segment r: the result goes into data
			err = CombineBytes(dt, local, in, op)
		} else { // a partial result: combine in scratch, pass it on
			err = CombineBytes(dt, in, local, op)
			send = in
		}
		if err != nil {
			return err
		}
	}
	return nil
}
