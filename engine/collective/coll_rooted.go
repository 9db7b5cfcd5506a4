package collective

import (
	"context"

	"github.com/boltmesh/boltmesh/internal/plumb"
)

// A rooted call's root posts every receive (Gather) or starts every send
// (Scatter) at once, and then waits for them in rank order: a segment
// above the eager limit moves only once its receive is posted, so a root
// that took one rank after another made the others wait their turn, and
// over a star of phones the call took the sum of their uploads (or
// downloads) rather than the longest. The segments are the caller's own
// buffers: nothing is held beyond them.

// gatherPosted is Gather's root: counts[i] elements of esz bytes from
// each rank i into its place in out, this rank's from in.
func (c *Comm) gatherPosted(ctx context.Context, tag uint32, esz int, in, out []byte, counts []int) (err error) {
	r := c.t.Rank()
	recvs := c.recvSlots(len(counts))
	defer func() {
		for i, h := range recvs {
			c.drop(i, h) // a failed call's: out is the caller's again
			recvs[i] = plumb.Handle{}
		}
	}()
	off := 0
	for i, k := range counts {
		seg := out[off : off+k*esz]
		off += len(seg)
		if i == r {
			copy(seg, in)
			continue
		}
		if recvs[i], err = c.wire.Post(i, tag, c.meta, seg, false); err != nil {
			return explain(err)
		}
	}
	for i, k := range counts {
		if i == r {
			continue
		}
		m, err := c.wait(ctx, i, recvs[i])
		recvs[i] = plumb.Handle{}
		if err == nil {
			err = c.recvCheck(m, k*esz, i)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// scatterStarted is Scatter's root: counts[i] elements of esz bytes
// from in to each rank i, this rank's into out.
func (c *Comm) scatterStarted(ctx context.Context, tag uint32, esz int, in, out []byte, counts []int) (err error) {
	r := c.t.Rank()
	sends := c.sendSlots(len(counts))
	defer func() {
		for i, h := range sends {
			c.drop(i, h) // a failed call's: returns once in may be reused
			sends[i] = plumb.Handle{}
		}
	}()
	off := 0
	for i, k := range counts {
		seg := in[off : off+k*esz]
		off += len(seg)
		if i == r {
			copy(out, seg)
			continue
		}
		if err := c.sending(ctx); err != nil {
			return err
		}
		if sends[i], err = c.start(ctx, i, tag, seg); err != nil {
			return err
		}
	}
	for i, h := range sends {
		if !h.Live() {
			continue
		}
		_, _, err := c.wire.Wait(i, h, plumb.Waiting{Ctx: ctx})
		sends[i] = plumb.Handle{}
		if err != nil {
			return explain(err)
		}
	}
	return nil
}

// recvSlots returns n empty slots for posted receives, kept for the next
// call.
func (c *Comm) recvSlots(n int) []plumb.Handle {
	if cap(c.recvs) < n {
		c.recvs = make([]plumb.Handle, n)
	}
	return c.recvs[:n]
}

// sendSlots returns n empty slots for started sends (a star worker's
// pieces, a Scatter root's segments), kept for the next call.
func (c *Comm) sendSlots(n int) []plumb.Handle {
	if cap(c.sends) < n {
		c.sends = make([]plumb.Handle, n)
	}
	return c.sends[:n]
}
