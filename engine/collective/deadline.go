package collective

import (
	"context"
	"encoding/binary"
	"fmt"
	"math/bits"
	"time"

	"github.com/boltmesh/boltmesh/internal/plumb"
)

// Contributors is the set of ranks whose data went into a deadline
// allreduce.
type Contributors struct {
	Mask  uint64 // bit r set: rank r contributed
	Count int    // number of contributors
}

// Has reports whether rank r contributed.
func (c Contributors) Has(r int) bool { return r >= 0 && r < 64 && c.Mask&(1<<r) != 0 }

// staleContribution is a contribution that missed its round's deadline;
// the root drops it when it arrives, so that it neither leaks nor leaks
// into a later round (it carries its own round's tag anyway). Over a
// tracker of calls (calls.go), which drops the messages of ended calls, none is
// kept.
type staleContribution struct {
	rank int
	tag  uint32
	meta uint32
}

// AllReduceDeadline is AllReduce with bounded staleness, as federated
// averaging needs: the root (Options.Root) waits for contributions until
// deadline, reduces those that arrived (in rank order, so the result is
// deterministic), and sends the result and the set of contributors to
// every rank. Mean divides by the number of contributors. A rank that
// misses the deadline still receives the round's result, sees itself left
// out in the returned set, and its late contribution is discarded. The
// root must not be the late one: the others wait for its result, without
// a time limit here (the call runs under context.Background()) and up to
// their ctx in AllReduceDeadlineBytes. A root that fails the call (a
// contribution of the wrong length, its own refused arguments, or in
// AllReduceDeadlineBytes its ctx ending) abandons it, so that the others
// fail with ErrAbandoned at once.
//
// Over an engine.NetTransport the root posts its receives for many ranks
// at once (up to Options.GatherMax of buffers), so that contributions
// above the eager limit upload at the same time rather than one after
// another, and one that came by the deadline is in whatever its rank. It
// never waits for a rank after the deadline, at any size: it sends results from a copy that it keeps until
// the rank has taken it, and a rank that has not yet taken the previous
// round's result when the root finishes a round (a stopped or very slow
// rank) gets ErrBehind for that round instead, so that it catches up. A
// lost rank is left out of the rounds that follow, as a late one is; a
// lost root fails the others' calls with engine.ErrPeerLost. A leaf fails
// with ErrMismatch on a contributor set from the root that lacks the root
// or names ranks outside the world.
func AllReduceDeadline[T Elem](c *Comm, data []T, op Op, deadline time.Time) (Contributors, error) {
	return c.AllReduceDeadlineBytes(context.Background(), DTypeOf[T](), AsBytes(data), op, deadline)
}

// AllReduceDeadlineBytes is AllReduceDeadline over raw data of dt.
func (c *Comm) AllReduceDeadlineBytes(ctx context.Context, dt DType, data []byte, op Op, deadline time.Time) (got Contributors, err error) {
	if err := collCheckReduce("AllReduceDeadline", dt, data, op); err != nil {
		return Contributors{}, c.refuse(kindAllReduceDeadline, err)
	}
	r, n, root := c.t.Rank(), c.t.WorldSize(), c.opts.Root
	if n > 64 {
		return Contributors{}, c.refuse(kindAllReduceDeadline, ErrWorldTooLarge)
	}
	if root < 0 || root >= n {
		return Contributors{}, c.refuse(kindAllReduceDeadline, fmt.Errorf("collective: Options.Root %d outside world of %d", root, n))
	}
	tag := c.begin(kindAllReduceDeadline, dt, op)
	defer c.end(&err)
	if dl, ok := c.coll.(plumb.CollAsync); ok {
		return c.deadlineAsync(ctx, dl, tag, dt, data, op, deadline, root)
	}
	if r != root {
		return c.deadlineLeaf(ctx, tag, data, root)
	}
	got, err = c.deadlineGather(ctx, tag, dt, data, op, deadline)
	if err == nil {
		err = FinishBytes(dt, data, op, got.Count)
	}
	if err != nil {
		return Contributors{}, err
	}
	var hdr [8]byte
	binary.LittleEndian.PutUint64(hdr[:], got.Mask)
	for p := range n {
		if p == root {
			continue
		}
		if err := c.send(ctx, p, tag+1, hdr[:]); err != nil {
			return got, err
		}
		if err := c.send(ctx, p, tag+2, data); err != nil {
			return got, err
		}
	}
	return got, nil
}

// deadlineAsync is the call over a plumb.CollAsync (deadline_async.go).
func (c *Comm) deadlineAsync(ctx context.Context, dl plumb.CollAsync, tag uint32, dt DType, data []byte, op Op, deadline time.Time, root int) (Contributors, error) {
	if c.t.Rank() != root {
		return c.deadlineLeafAsync(ctx, dl, tag, data, root)
	}
	got, err := c.deadlineGatherAsync(ctx, dl, tag, dt, data, op, deadline)
	if err == nil {
		err = FinishBytes(dt, data, op, got.Count)
	}
	if err == nil {
		err = c.deadlineScatterAsync(ctx, dl, tag, data, got)
	}
	if err != nil {
		return Contributors{}, err
	}
	return got, nil
}

// deadlineLeaf sends this rank's contribution and waits for the result.
func (c *Comm) deadlineLeaf(ctx context.Context, tag uint32, data []byte, root int) (Contributors, error) {
	if err := c.send(ctx, root, tag, data); err != nil {
		return Contributors{}, err
	}
	var hdr [8]byte
	m, err := c.recv(ctx, root, tag+1, hdr[:])
	if err == nil {
		err = c.recvCheck(m, len(hdr), root)
	}
	if err != nil {
		return Contributors{}, err
	}
	mask := binary.LittleEndian.Uint64(hdr[:])
	if n := c.t.WorldSize(); mask&(1<<root) == 0 || mask>>n != 0 {
		return Contributors{}, fmt.Errorf("collective: root %d's contributor set %#x does not fit a world of %d with it: %w", root, mask, n, ErrMismatch)
	}
	m, err = c.recv(ctx, root, tag+2, data)
	if err == nil {
		err = c.recvCheck(m, len(data), root)
	}
	return Contributors{Mask: mask, Count: bits.OnesCount64(mask)}, err
}

// deadlineGather collects contributions at the root until deadline and
// reduces them into data in rank order.
func (c *Comm) deadlineGather(ctx context.Context, tag uint32, dt DType, data []byte, op Op, deadline time.Time) (Contributors, error) {
	r, n := c.t.Rank(), c.t.WorldSize()
	buf := c.scratch(len(data))
	c.dropStale(buf)
	got := Contributors{Mask: 1 << r, Count: 1}
	dctx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	for p := range n {
		if p == r {
			continue
		}
		m, err := c.recv(dctx, p, tag, buf)
		if err != nil && dctx.Err() != nil && ctx.Err() == nil {
			m, ok, terr := c.tryRecv(p, tag, buf) // arrived while we waited on another rank
			if terr != nil {
				return got, terr
			}
			if !ok {
				if c.calls == nil { // the tracker of calls drops it itself
					c.stale = append(c.stale, staleContribution{rank: p, tag: tag, meta: c.meta})
				}
				continue
			}
			err = c.recvCheck(m, len(data), p)
		} else if err == nil {
			err = c.recvCheck(m, len(data), p)
		}
		if err == nil {
			err = CombineBytes(dt, data, buf, op)
		}
		if err != nil {
			return got, err
		}
		got.Mask |= 1 << p
		got.Count++
	}
	return got, nil
}

// dropStale discards late contributions of earlier rounds that have
// arrived since; buf is scratch at least as large as one.
func (c *Comm) dropStale(buf []byte) {
	keep := c.stale[:0]
	for _, s := range c.stale {
		if _, ok, err := c.coll.TryRecvCollInto(s.rank, s.tag, s.meta, buf); !ok && err == nil {
			keep = append(keep, s)
		}
	}
	c.stale = keep
}
