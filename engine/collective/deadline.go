package collective

import (
	"context"
	"fmt"
	"time"
)

// Contributors is the set of ranks whose data went into a deadline
// allreduce.
type Contributors struct {
	Mask  uint64 // bit r set: rank r contributed
	Count int    // number of contributors
}

// Has reports whether rank r contributed.
func (c Contributors) Has(r int) bool { return r >= 0 && r < 64 && c.Mask&(1<<r) != 0 }

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
	if r != root {
		return c.deadlineLeaf(ctx, tag, data, root)
	}
	got, err = c.deadlineGather(ctx, tag, dt, data, op, deadline)
	if err == nil {
		err = FinishBytes(dt, data, op, got.Count)
	}
	if err == nil {
		err = c.deadlineScatter(ctx, tag, data, got)
	}
	if err != nil {
		return Contributors{}, err
	}
	return got, nil
}
