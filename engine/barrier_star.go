package engine

import (
	"errors"

	"github.com/boltmesh/boltmesh/ioloop"
)

// starBarrier is the barrier of a star of more than two ranks: every
// worker signals the coordinator (round 0), which, once it has heard from
// every worker, signals each back (round 1). A dissemination barrier's
// ceil(log2 n) rounds would each send most signals from worker to worker,
// through the coordinator: two hops a round where this takes two in all.
// Signals carry the epoch, as the dissemination barrier's do; a barrier
// given up part way is resumed where it stopped (the round, and at the
// center the next worker, bar.next). t.bar.mu is held.
func (t *NetTransport) starBarrier(w waitOpts) error {
	b := &t.bar
	if t.rank != 0 {
		for ; b.round < 2; b.round, b.sent = b.round+1, false {
			var err error
			if b.round == 0 {
				err = t.barrierSignal(0, w)
			} else {
				err = t.barrierRecv(0, tagBarrier+1, w)
			}
			if err != nil {
				return err
			}
		}
		t.barrierDone()
		return nil
	}
	for ; b.round < 2; b.round, b.next = b.round+1, 1 {
		for b.next = max(b.next, 1); b.next < t.world; b.next, b.sent = b.next+1, false {
			var err error
			if b.round == 0 {
				err = t.barrierRecv(b.next, tagBarrier, w)
			} else {
				err = t.barrierSignal(b.next, w)
			}
			if err != nil {
				return err
			}
		}
	}
	t.barrierDone()
	return nil
}

// barrierSignal sends rank to this barrier's signal for the round in
// progress, unless it was sent already (a barrier resumed).
func (t *NetTransport) barrierSignal(to int, w waitOpts) error {
	b := &t.bar
	if b.sent {
		return nil
	}
	if err := t.send(w.cancel, to, tagBarrier+b.round, b.out[:]); err != nil {
		if errors.Is(err, ioloop.ErrCanceled) {
			return w.ctx.Err()
		}
		return err
	}
	b.sent = true
	return nil
}
