package collective

import (
	"context"
	"fmt"

	"github.com/boltmesh/boltmesh/internal/proflabel"
)

// Gather concatenates every rank's in, in rank order, into root's out:
// rank r contributes counts[r] elements. out is used at root only (the
// other ranks may pass nil).
func Gather[T Elem](c *Comm, root int, in, out []T, counts []int) error {
	return c.GatherBytes(context.Background(), root, DTypeOf[T](), AsBytes(in), AsBytes(out), counts)
}

// GatherBytes is Gather over raw bytes holding elements of dt (counts, the
// same on every rank, are in elements; dt only sets their size). len(in)
// must be counts[rank]*dt.Size(), and at root len(out) sum(counts)*dt.Size().
// The root receives every other rank's segment straight into out, every
// receive posted at once, so that the segments come concurrently (one
// above the eager limit moves only once its receive is posted); the data
// crosses the network once.
func (c *Comm) GatherBytes(ctx context.Context, root int, dt DType, in, out []byte, counts []int) (err error) {
	esz, total, err := c.checkRooted("Gather", root, dt, in, out, counts)
	if err != nil {
		return c.refuse(kindGather, err)
	}
	r := c.t.Rank()
	tag := c.begin(kindGather, dt, 0)
	defer c.end(&err)
	defer proflabel.Restore(c.label(ctx, collLabels(kindGather, total)))
	if r != root {
		return c.keepUp(ctx, tag, c.send(ctx, root, tag, in))
	}
	return c.keepUp(ctx, tag, c.gatherPosted(ctx, tag, esz, in, out, counts))
}

// checkRooted validates a Gather or Scatter: part is this rank's segment
// (counts[rank] elements), whole the root's concatenation of all segments
// (checked at root only). It returns the element size and whole's length.
func (c *Comm) checkRooted(fn string, root int, dt DType, part, whole []byte, counts []int) (esz, total int, err error) {
	if esz, err = collElemSize(fn, dt); err != nil {
		return 0, 0, err
	}
	r, n := c.t.Rank(), c.t.WorldSize()
	if err = collCheckRoot(fn, root, n); err != nil {
		return 0, 0, err
	}
	if total, err = collCheckCounts(fn, "counts", counts, n, esz); err != nil {
		return 0, 0, err
	}
	partName, wholeName := "in", "out"
	if fn == "Scatter" {
		partName, wholeName = "out", "in"
	}
	if err = collCheckLen(fn, partName, dt, len(part), counts[r]*esz); err != nil {
		return 0, 0, err
	}
	if r == root {
		err = collCheckLen(fn, wholeName, dt, len(whole), total)
	}
	return esz, total, err
}

// Scatter sends segment r of root's in (counts[r] elements, the segments
// in rank order) to rank r's out. in is used at root only (the other ranks
// may pass nil).
func Scatter[T Elem](c *Comm, root int, in, out []T, counts []int) error {
	return c.ScatterBytes(context.Background(), root, DTypeOf[T](), AsBytes(in), AsBytes(out), counts)
}

// ScatterBytes is Scatter over raw bytes holding elements of dt (counts,
// the same on every rank, are in elements). At root len(in) must be
// sum(counts)*dt.Size(); everywhere len(out) must be counts[rank]*dt.Size().
// The root sends every other rank its segment straight from in, every
// send started at once, so that the segments travel concurrently.
func (c *Comm) ScatterBytes(ctx context.Context, root int, dt DType, in, out []byte, counts []int) (err error) {
	esz, total, err := c.checkRooted("Scatter", root, dt, out, in, counts)
	if err != nil {
		return c.refuse(kindScatter, err)
	}
	r := c.t.Rank()
	tag := c.begin(kindScatter, dt, 0)
	defer c.end(&err)
	defer proflabel.Restore(c.label(ctx, collLabels(kindScatter, total)))
	if r != root {
		m, err := c.recv(ctx, root, tag, out)
		if err == nil {
			err = c.recvCheck(m, len(out), root)
		}
		return c.keepUp(ctx, tag, err)
	}
	return c.keepUp(ctx, tag, c.scatterStarted(ctx, tag, esz, in, out, counts))
}

// AllToAll sends segment j of every rank's in to rank j: rank r's in holds
// inCounts[j] elements for each rank j, in rank order, and its out receives
// outCounts[i] elements from each rank i, in rank order. Rank i's
// inCounts[j] must equal rank j's outCounts[i]. in and out must not
// overlap.
func AllToAll[T Elem](c *Comm, in []T, inCounts []int, out []T, outCounts []int) error {
	return c.AllToAllBytes(context.Background(), DTypeOf[T](), AsBytes(in), inCounts, AsBytes(out), outCounts)
}

// AllToAllBytes is AllToAll over raw bytes holding elements of dt (counts
// are in elements; dt only sets their size). len(in) must be
// sum(inCounts)*dt.Size() and len(out) sum(outCounts)*dt.Size().
//
// It runs the pairwise schedule: in step s = 1..n-1 rank r sends to
// (r+s) mod n while receiving from (r-s) mod n, the send concurrent with
// the receive, so that no step can deadlock whatever the message sizes.
// Segments go straight from in and into out, without copies.
func (c *Comm) AllToAllBytes(ctx context.Context, dt DType, in []byte, inCounts []int, out []byte, outCounts []int) (err error) {
	const fn = "AllToAll"
	esz, err := collElemSize(fn, dt)
	if err != nil {
		return c.refuse(kindAllToAll, err)
	}
	r, n := c.t.Rank(), c.t.WorldSize()
	inTotal, err := collCheckCounts(fn, "inCounts", inCounts, n, esz)
	if err != nil {
		return c.refuse(kindAllToAll, err)
	}
	outTotal, err := collCheckCounts(fn, "outCounts", outCounts, n, esz)
	if err != nil {
		return c.refuse(kindAllToAll, err)
	}
	if err := collCheckLen(fn, "in", dt, len(in), inTotal); err != nil {
		return c.refuse(kindAllToAll, err)
	}
	if err := collCheckLen(fn, "out", dt, len(out), outTotal); err != nil {
		return c.refuse(kindAllToAll, err)
	}
	if inCounts[r] != outCounts[r] {
		return c.refuse(kindAllToAll, fmt.Errorf("%w (%s: rank %d sends itself inCounts[%d] = %d elements, expects outCounts[%d] = %d)",
			ErrCounts, fn, r, r, inCounts[r], r, outCounts[r]))
	}
	tag := c.begin(kindAllToAll, dt, 0)
	defer c.end(&err)
	defer proflabel.Restore(c.label(ctx, collLabels(kindAllToAll, inTotal)))
	inOff, outOff := collOffset(inCounts, r, esz), collOffset(outCounts, r, esz)
	copy(out[outOff:outOff+outCounts[r]*esz], in[inOff:inOff+inCounts[r]*esz])
	// to = r+s walks up from r+1, from = r-s down from r-1 (mod n); the
	// offsets follow them.
	to, toOff := r, inOff
	from, fromOff := r, outOff
	for s := 1; s < n; s++ {
		toOff += inCounts[to] * esz
		if to++; to == n {
			to, toOff = 0, 0
		}
		if from == 0 {
			from, fromOff = n-1, outTotal-outCounts[n-1]*esz
		} else {
			from--
			fromOff -= outCounts[from] * esz
		}
		send := in[toOff : toOff+inCounts[to]*esz]
		recv := out[fromOff : fromOff+outCounts[from]*esz]
		m, err := c.exchange(ctx, to, from, collTag(tag, s), send, recv)
		if err == nil {
			err = c.recvCheck(m, len(recv), from)
		}
		if err != nil {
			return err
		}
	}
	return nil
}
