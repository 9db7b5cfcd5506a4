package bench

import (
	"context"
	"time"
)

// The deadline suite times a float32 Sum allreduce with bounded staleness
// (engine/collective's AllReduceDeadline, what federated averaging runs)
// when no rank is late: the root (rank 0) gathers every contribution,
// reduces, and sends the result and the set of contributors back. The
// deadline is DeadlineSpan from each call's start, far beyond any
// iteration, so every rank contributes; a rank left out fails the check.
// It measures what the gather and the scatter cost. boltmesh only: stdnet
// has no such call.
func init() {
	Register(&Suite{
		Name:       "deadline",
		Doc:        "float32 sum allreduce with a deadline (federated averaging), every rank in time (boltmesh only)",
		Sizes:      []int{8, 64 << 10, 1 << 20, 16 << 20},
		QuickSizes: []int{8, 1 << 20},
		Align:      4,
		MinRanks:   2,
		Impls:      []string{ImplBoltmesh},
		Ops:        []Op{{Name: "allreduce-deadline", Start: startDeadline}},
	})
}

// DeadlineSpan is how long after a call starts its deadline falls, in the
// deadline suite.
const DeadlineSpan = time.Minute

// deadliner is an Endpoint with the deadline allreduce.
type deadliner interface {
	// AllReduceDeadlineSum sums data across the ranks whose contributions
	// reach the root by deadline, in place, and returns how many did.
	AllReduceDeadlineSum(ctx context.Context, data []float32, deadline time.Time) (int, error)
}

// deadlineBody is an allreduce body whose Iter calls the deadline
// allreduce.
type deadlineBody struct {
	*allreduce
	d deadliner
}

func startDeadline(c *Case) (Body, error) {
	d, ok := c.EP.(deadliner)
	if !ok {
		return nil, ErrUnsupported
	}
	b, err := startAllReduce(c)
	if err != nil {
		return nil, err
	}
	return &deadlineBody{allreduce: b.(*allreduce), d: d}, nil
}

// Iter implements Body.
func (b *deadlineBody) Iter(i int) error {
	got, err := b.d.AllReduceDeadlineSum(b.c.Ctx, b.data, time.Now().Add(DeadlineSpan))
	if err != nil {
		return err
	}
	if n := b.c.EP.Ranks(); got != n {
		return checkErr(b.c.EP.Rank(), "iteration %d: %d of %d ranks contributed", i, got, n)
	}
	if i < 0 {
		return b.check(i, 1)
	}
	return b.check(i, max(len(b.data)/2, 1))
}
