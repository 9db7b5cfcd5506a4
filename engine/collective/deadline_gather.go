package collective

import (
	"context"
	"errors"
	"time"

	"github.com/boltmesh/boltmesh/engine"
	"github.com/boltmesh/boltmesh/internal/plumb"
)

// The deadline allreduce's root gathers with its receives posted ahead: a
// contribution above the eager limit moves only once a receive takes it,
// so a root that received from one leaf after another made the leaves
// upload one after another, each waiting for those before it (over a star
// of phones, each behind its own slow uplink, the round took the sum of
// their uploads rather than the longest). The root posts a receive for up
// to gatherAhead leaves at once, each into a buffer of its own, in rank
// order, waits for them in rank order, reduces each as it comes (rank
// order: the result's bits are the same as before), and posts the next
// leaf's receive into the buffer just reduced. A leaf whose receive is
// posted and whose contribution has come by the deadline is in, whatever
// its rank.

// gatherState is the root's receives posted ahead and their buffers, kept
// for the next call.
type gatherState struct {
	recvs []plumb.Handle // by leaf: its posted receive, until waited for
	errs  []error        // by leaf: why its receive could not be posted
	slot  []int          // by leaf: the buffer its receive fills
	bufs  [][]byte       // the buffers; nil: left to the transport, to be made again
	free  []int          // the buffers free now
	next  int            // the next rank to post for
	u     plumb.Until    // a wait's time limits (until)
}

// gatherAhead is how many leaves' receives the root posts at once for
// contributions of size bytes, out of leaves.
func (c *Comm) gatherAhead(size, leaves int) int {
	if c.opts.GatherMax < 0 || size == 0 {
		return min(1, leaves)
	}
	return max(1, min(leaves, c.opts.GatherMax/size))
}

// begin readies g for a call over n ranks with ahead buffers.
func (g *gatherState) begin(n, ahead int) {
	if len(g.recvs) < n {
		g.recvs = make([]plumb.Handle, n)
		g.errs = make([]error, n)
		g.slot = make([]int, n)
	}
	for len(g.bufs) < ahead {
		g.bufs = append(g.bufs, nil)
	}
	g.free = g.free[:0]
	for i := range ahead {
		g.free = append(g.free, i)
	}
	g.next = 0
}

// buf returns buffer i at size bytes.
func (g *gatherState) buf(i, size int) []byte {
	if cap(g.bufs[i]) < size {
		g.bufs[i] = alignedBytes(size)
	}
	return g.bufs[i][:size]
}

// until returns g's time limits, set to deadline and inFlight.
func (g *gatherState) until(deadline, inFlight time.Time) *plumb.Until {
	g.u = plumb.Until{Deadline: deadline, InFlight: inFlight}
	return &g.u
}

// post posts the receives of the next leaves (not self) while buffers are
// free.
func (g *gatherState) post(w plumb.Wire, self, n int, tag, meta uint32, size int) {
	for ; g.next < n && len(g.free) > 0; g.next++ {
		if g.next == self {
			continue
		}
		i := g.free[len(g.free)-1]
		g.free = g.free[:len(g.free)-1]
		g.slot[g.next] = i
		g.recvs[g.next], g.errs[g.next] = w.Post(g.next, tag, meta, g.buf(i, size), false)
		if g.errs[g.next] != nil {
			g.free = append(g.free, i)
		}
	}
}

// wait waits for leaf p's receive until deadline (the bytes of one
// being read in until grace), and hands its buffer
// back unless the transport kept it (an in-flight message): the buffer
// stays valid for the caller until the next post.
func (g *gatherState) wait(w plumb.Wire, ctx context.Context, p int, deadline, grace time.Time) ([]byte, int, error) {
	h, err := g.recvs[p], g.errs[p]
	g.recvs[p], g.errs[p] = plumb.Handle{}, nil
	if !h.Live() {
		return nil, 0, err
	}
	i := g.slot[p]
	b := g.bufs[i]
	m, _, err := w.Wait(p, h, plumb.Waiting{Ctx: ctx, Until: g.until(deadline, grace)})
	err = wireErr(err)
	if errors.Is(err, plumb.ErrInFlight) {
		g.bufs[i] = nil // the transport's until that message is in
	}
	g.free = append(g.free, i)
	return b, m, err
}

// drop drops the receives still posted (a call that failed), keeping the
// buffers the transport does not.
func (g *gatherState) drop(w plumb.Wire) {
	for p, h := range g.recvs {
		if !h.Live() {
			continue
		}
		// At once, and without waiting for bytes being read in: those
		// leave the buffer to the transport.
		_, _, err := w.Wait(p, h, plumb.Waiting{How: plumb.Now, Until: pastInFlight})
		if errors.Is(err, plumb.ErrInFlight) {
			g.bufs[g.slot[p]] = nil
		}
		g.recvs[p] = plumb.Handle{}
	}
	clear(g.errs)
}

// deadlineGather collects contributions at the root until deadline and
// reduces them into data in rank order, with its receives posted ahead
// (above): a leaf that is lost is left out instead
// of failing the round, and so is one whose message, announced in time,
// stops arriving halfway (a stopped rank): the root waits for its bytes
// for the deadline's span again at most (deadlineGrace), then leaves the
// buffer to the transport.
func (c *Comm) deadlineGather(ctx context.Context, tag uint32, dt DType, data []byte, op Op, deadline time.Time) (got Contributors, err error) {
	r, n := c.t.Rank(), c.t.WorldSize()
	got = Contributors{Mask: 1 << r, Count: 1}
	grace := deadline.Add(deadlineGrace(deadline))
	g := &c.gather
	g.begin(n, c.gatherAhead(len(data), n-1))
	defer g.drop(c.wire)
	for p := range n {
		if p == r {
			continue
		}
		g.post(c.wire, r, n, tag, c.meta, len(data))
		buf, m, err := g.wait(c.wire, ctx, p, deadline, grace)
		switch {
		case errors.Is(err, engine.ErrTimeout) && ctx.Err() == nil:
			continue // late: left out
		case errors.Is(err, plumb.ErrInFlight):
			continue // stopped halfway: left out
		case errors.Is(err, engine.ErrPeerLost):
			continue // gone: left out, as a late rank is
		}
		if err == nil {
			err = c.recvCheck(m, len(data), p)
		}
		if err == nil {
			err = CombineBytes(dt, data, buf[:m], op)
		}
		if err != nil {
			return got, explain(err)
		}
		got.Mask |= 1 << p
		got.Count++
	}
	return got, nil
}
