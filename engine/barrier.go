package engine

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/boltmesh/boltmesh/ioloop"
)

// tagBarrier is the first of the reserved tags barrier rounds use (one per
// round, at most 32).
const tagBarrier = TagReservedBase + 0x100

// ErrBarrierSkew means a barrier signal from a later barrier arrived: the
// ranks have not called Barrier the same number of times.
var ErrBarrierSkew = errors.New("boltmesh: barrier calls out of step across ranks")

// barrierState is the per-transport barrier bookkeeping, guarded by mu.
type barrierState struct {
	epoch uint64
	out   [8]byte
	in    [8]byte
}

// Barrier implements Transport.
func (t *NetTransport) Barrier() error {
	return t.barrier(waitOpts{op: "barrier", anyLost: true})
}

// BarrierContext implements Transport.
func (t *NetTransport) BarrierContext(ctx context.Context) error {
	w := ctxWait(ctx, "barrier")
	w.anyLost = true
	return t.barrier(w)
}

// barrier is a dissemination barrier: in round k every rank signals rank+2^k
// and waits for rank-2^k, so it completes in ceil(log2 n) rounds with no
// root. Each signal carries the barrier's epoch so that signals left over
// from a barrier that was given up are discarded. Because it needs every
// rank, it fails as soon as any peer is lost. Calls from several goroutines
// of one rank are serialized.
func (t *NetTransport) barrier(w waitOpts) error {
	t.barrierMu.Lock()
	defer t.barrierMu.Unlock()
	if t.closed.Load() {
		return &PeerError{Op: w.op, Rank: t.rank, Err: ErrClosed}
	}
	if err := t.anyLost(w.op); err != nil {
		return err
	}
	b := &t.bar
	b.epoch++
	binary.LittleEndian.PutUint64(b.out[:], b.epoch)
	for k, dist := uint32(0), 1; dist < t.world; k, dist = k+1, dist*2 {
		to := (t.rank + dist) % t.world
		from := (t.rank - dist + t.world) % t.world
		if err := t.send(w.cancel, to, tagBarrier+k, b.out[:]); err != nil {
			if errors.Is(err, ioloop.ErrCanceled) {
				return w.ctxErr()
			}
			return err
		}
		if err := t.barrierRecv(from, tagBarrier+k, w); err != nil {
			return err
		}
	}
	return nil
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
