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

// gatherPosted is Gather's root over a plumb.CollAsync: counts[i]
// elements of esz bytes from each rank i into its place in out, this
// rank's from in.
func (c *Comm) gatherPosted(ctx context.Context, async plumb.CollAsync, tag uint32, esz int, in, out []byte, counts []int) (err error) {
	r := c.t.Rank()
	recvs := c.recvSlots(len(counts))
	defer func() {
		for i, rc := range recvs {
			if rc != nil {
				rc.Cancel() // a failed call's: out is the caller's again
				recvs[i] = nil
			}
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
		if recvs[i], err = async.PostCollFrom(i, tag, c.meta, seg); err != nil {
			return explain(err)
		}
	}
	for i, k := range counts {
		if i == r {
			continue
		}
		m, err := recvs[i].WaitColl(ctx)
		recvs[i] = nil
		if err == nil {
			err = c.recvCheck(m, k*esz, i)
		}
		if err != nil {
			return explain(err)
		}
	}
	return nil
}

// scatterStarted is Scatter's root over a plumb.CollAsync: counts[i]
// elements of esz bytes from in to each rank i, this rank's into out.
func (c *Comm) scatterStarted(ctx context.Context, async plumb.CollAsync, tag uint32, esz int, in, out []byte, counts []int) (err error) {
	r := c.t.Rank()
	sends := c.sendSlots(len(counts))
	defer func() {
		for i, s := range sends {
			if s != nil {
				s.Drop() // a failed call's: returns once in may be reused
				sends[i] = nil
			}
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
		if sends[i], err = async.StartColl(ctx, i, tag, c.meta, seg); err != nil {
			return explain(err)
		}
	}
	for i, s := range sends {
		if s == nil {
			continue
		}
		err := s.Wait(ctx)
		sends[i] = nil
		if err != nil {
			return explain(err)
		}
	}
	return nil
}

// recvSlots returns n empty slots for posted receives, kept for the next
// call.
func (c *Comm) recvSlots(n int) []plumb.CollRecv {
	if cap(c.recvs) < n {
		c.recvs = make([]plumb.CollRecv, n)
	}
	return c.recvs[:n]
}

// sendSlots returns n empty slots for started sends (a star worker's
// pieces, a Scatter root's segments), kept for the next call.
func (c *Comm) sendSlots(n int) []plumb.CollSend {
	if cap(c.sends) < n {
		c.sends = make([]plumb.CollSend, n)
	}
	return c.sends[:n]
}
