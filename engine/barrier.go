package engine

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"sync"

	"github.com/boltmesh/boltmesh/ioloop"
)

// tagBarrier is the first of the reserved tags barrier rounds use (one per
// round, at most 32).
const tagBarrier = TagReservedBase + 0x100

// barrierState is the per-transport barrier bookkeeping, guarded by its
// mu. A barrier that gave up (its context ended) stays in progress
// and the next call resumes it where it stopped, so that every rank's
// barriers stay in step.
type barrierState struct {
	mu         sync.Mutex // guards the rest
	epoch      uint64     // number of the current (or last) barrier
	inProgress bool
	round      uint32 // next round of the current barrier
	sent       bool   // this round's signal is sent
	next       int    // a star's center: the next worker it hears from or releases in this round (starBarrier)
	heard      bool   // this round's partner, a neighbour, signalled by frame (barrier_mail.go)
	out        [8]byte
	in         [8]byte
}

// Barrier implements Transport.
// Every put this rank issued is completed first (Quiet), so that the
// barrier orders one-sided transfers too.
func (t *NetTransport) Barrier() error {
	qerr := t.Quiet()
	return joinErr(t.lossErr(t.barrier(waitOpts{op: "barrier", anyLost: true})), qerr)
}

// joinErr is errors.Join that keeps a lone error as it is.
func joinErr(a, b error) error {
	switch {
	case b == nil:
		return a
	case a == nil:
		return b
	}
	return errors.Join(a, b)
}

// BarrierContext implements Transport. ctx bounds the barrier's exchange
// only: the Quiet that runs first does not watch it.
func (t *NetTransport) BarrierContext(ctx context.Context) error {
	qerr := t.Quiet()
	w := ctxWait(ctx, "barrier")
	w.anyLost = true
	return joinErr(t.lossErr(t.barrier(w)), qerr)
}

// barrier is a dissemination barrier (in a star of more than two ranks,
// a gather and release at the coordinator instead: starBarrier): in
// round k every rank signals rank+2^k
// and waits for rank-2^k, so it completes in ceil(log2 n) rounds with no
// root; in a world of a power of two ranks, rank XOR 2^k instead, so that
// each round is an exchange between two ranks, which neighbours make
// through the memory they share (barrier_mail.go). Each signal carries
// the barrier's epoch so that signals left over from a barrier that was
// given up are discarded. Because it needs every
// rank, it fails as soon as any peer is lost, or has closed (GOODBYE)
// before completing this barrier. Calls from several goroutines
// of one rank are serialized. A barrier given up through its context is
// resumed by the next call.
func (t *NetTransport) barrier(w waitOpts) error {
	t.bar.mu.Lock()
	defer t.bar.mu.Unlock()
	if t.closed.Load() {
		return &PeerError{Op: w.op, Rank: t.rank, Err: ErrClosed}
	}
	v := t.view()
	if err := lostErr(v, w.op); err != nil {
		return err
	}
	b := &t.bar
	if !b.inProgress {
		b.epoch++
		b.inProgress, b.round, b.sent, b.next = true, 0, false, 0
		binary.LittleEndian.PutUint64(b.out[:], b.epoch)
	}
	if err := closedBefore(v, b.epoch, w.op); err != nil {
		return err
	}
	w.epoch = b.epoch
	if t.topo.star && t.world > 2 {
		return t.starBarrier(w)
	}
	for ; 1<<b.round < t.world; b.round, b.sent, b.heard = b.round+1, false, false {
		to, from := t.barrierPeers(b.round)
		if mb := t.mailboxOf(to); to == from && mb != nil {
			if err := t.barrierMail(t.peer(to), mb, w); err != nil {
				return err
			}
			continue
		}
		if !b.sent {
			if err := t.send(w.cancel, to, tagBarrier+b.round, b.out[:]); err != nil {
				if errors.Is(err, ioloop.ErrCanceled) {
					return w.ctx.Err()
				}
				return err
			}
			b.sent = true
		}
		if err := t.barrierRecv(from, tagBarrier+b.round, w); err != nil {
			return err
		}
	}
	t.barrierDone()
	return nil
}

// barrierDone ends the barrier in progress. t.bar.mu is held.
func (t *NetTransport) barrierDone() {
	t.bar.inProgress = false
	t.progress.barriers.Store(t.bar.epoch)
}

// barrierPeers returns the ranks this rank signals and waits for in
// round k of a barrier.
func (t *NetTransport) barrierPeers(k uint32) (to, from int) {
	dist := 1 << k
	if t.world&(t.world-1) == 0 {
		return t.rank ^ dist, t.rank ^ dist
	}
	return (t.rank + dist) % t.world, (t.rank - dist + t.world) % t.world
}

// barrierRecv waits for the current epoch's signal from rank from,
// discarding stale ones.
func (t *NetTransport) barrierRecv(from int, tag uint32, w waitOpts) error {
	for {
		n, _, err := t.recv(from, tag, t.bar.in[:], true, w)
		if err != nil {
			return err
		}
		if n != 8 {
			return fmt.Errorf("barrier signal from rank %d: %w", from, &LengthMismatchError{Expected: 8, Got: uint64(n)})
		}
		got := binary.LittleEndian.Uint64(t.bar.in[:])
		switch {
		case got == t.bar.epoch:
			return nil
		case got > t.bar.epoch:
			return fmt.Errorf("%w: rank %d is at barrier %d, this rank at %d", ErrBarrierSkew, from, got, t.bar.epoch)
		}
	}
}

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
