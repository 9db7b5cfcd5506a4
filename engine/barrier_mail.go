package engine

import (
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	linkshm "github.com/boltmesh/boltmesh/internal/link/shm"

	"github.com/boltmesh/boltmesh/frame"
	"github.com/boltmesh/boltmesh/ioloop"
)

// A barrier round that is an exchange with a neighbour (barrierPeers)
// goes through their mailbox's bar words instead of frames: this rank
// swaps its signal for the round into its own, and waits until the
// neighbour's is at least as far. A signal is the barrier's epoch and
// round (barrierSignal), so the words only grow, and one at or past the
// round's says that the neighbour reached it. The words are apart from
// the mailbox's slots, so a barrier and a collective exchange on other
// goroutines, in whatever order each rank makes them, never wait for
// each other.
//
// The wait spins for Options.Spin, then marks this side asleep and waits
// for a WAKE (tagged wakeBarrier), which the neighbour's signal sends to
// a sleeper, with a receive for the round's frame posted: a neighbour
// that had no mailbox yet as it signalled (setup in progress) signals by
// frame, and is answered by frame. The swap of a signal is a full barrier
// after this rank's puts, so that a barrier orders them as frames do (see
// mappedOp).

// wakeBarrier is the Tag of a WAKE for a barrier's sleeper; 0 is the
// slots'.
const wakeBarrier = 1

// barrierSignal is the signal of round k of barrier number epoch.
func barrierSignal(epoch uint64, k uint32) uint64 { return epoch<<5 | uint64(k) }

// barrierMail makes the current round of t.bar with neighbour p through
// mailbox mb. t.bar.mu is held; a round given up (ctx) is resumed by the
// next call, as a framed one is.
func (t *NetTransport) barrierMail(p *peer, mb *linkshm.Mailbox, w waitOpts) error {
	b := &t.bar
	v := barrierSignal(b.epoch, b.round)
	if b.heard {
		return t.barrierAnswer(p, w)
	}
	if !b.sent {
		asleep, ok := mb.Signal(v)
		if !ok {
			return &PeerError{Op: w.op, Rank: p.rank, Err: ErrClosed}
		}
		if asleep {
			mb.Ring(true)
		}
		b.sent = true
	}
	site := waitSite{kind: siteBarrier, mb: mb, v: v}
	spun := p.spin.Budget(t.spinBudget())
	done, err := t.spinSite(p, &site, spun, w)
	if done || err != nil {
		if done {
			p.spin.Note(false)
		}
		return err
	}
	asleep := time.Now()
	err = t.sleepBarrier(p, &site, w)
	if err == nil {
		p.spin.Slept(spun, asleep, t.spinBudget())
	}
	return err
}

// sleepBarrier is barrierMail's wait once the spin is over: a receive
// for the round's frame is posted, this side is marked asleep, and it
// sleeps (wait.go) until the signal is in, the frame comes, or the
// give-up set fires.
func (t *NetTransport) sleepBarrier(p *peer, s *waitSite, w waitOpts) error {
	mb, v := s.mb, s.v
	mb.SleepBarrier(true)
	defer mb.SleepBarrier(false)
	for {
		r := t.newRecv(p.rank, tagBarrier+t.bar.round, t.bar.in[:], true, w)
		posted, err := p.match(r, false, false, w.op)
		if posted {
			var signalled bool
			if signalled, err = t.sleepBarrierOn(p, s, r, w); signalled {
				return nil
			}
		}
		n, _, err := t.recvDone(r, err, w)
		if err != nil {
			// A signal that came meanwhile wins over a receive that failed
			// (the neighbour closed once done with the barrier).
			return ifNot(mb.Reached(v), err)
		}
		if fresh, err := t.barrierFrame(p.rank, n); err != nil || fresh {
			if err == nil {
				t.bar.heard = true
				err = t.barrierAnswer(p, w)
			}
			return err
		}
	}
}

// sleepBarrierOn sleeps until the neighbour's signal s.v is in or a
// frame for r, the receive posted for the round, came. signalled reports
// the signal in, and r taken back and recycled; otherwise r is to end
// with err (nil: its own outcome).
func (t *NetTransport) sleepBarrierOn(p *peer, s *waitSite, r *recvReq, w waitOpts) (signalled bool, err error) {
	done, cause := t.sleep(p, r, s, w, nil)
	if done {
		if s.mb.Reached(s.v) {
			t.recycle(r)
			return true, nil
		}
		return false, nil
	}
	p.mu.Lock()
	withdrawn := p.m.withdraw(r)
	p.mu.Unlock()
	if !withdrawn {
		<-r.done // a frame, or the peer's loss, came for it meanwhile
	}
	if s.mb.Reached(s.v) {
		t.recycle(r)
		return true, nil
	}
	if !withdrawn {
		return false, nil
	}
	return false, cause
}

// barrierFrame checks a barrier signal of n bytes that came by frame into
// t.bar.in from rank from: fresh if it is the current barrier's, false if
// it is left from an earlier one.
func (t *NetTransport) barrierFrame(from, n int) (fresh bool, err error) {
	if n != 8 {
		return false, fmt.Errorf("barrier signal from rank %d: %w", from, &LengthMismatchError{Expected: 8, Got: uint64(n)})
	}
	got := binary.LittleEndian.Uint64(t.bar.in[:])
	switch {
	case got == t.bar.epoch:
		return true, nil
	case got > t.bar.epoch:
		return false, fmt.Errorf("%w: rank %d is at barrier %d, this rank at %d", ErrBarrierSkew, from, got, t.bar.epoch)
	}
	return false, nil
}

// barrierAnswer sends neighbour p, which signalled this round by frame,
// this rank's signal by frame too.
func (t *NetTransport) barrierAnswer(p *peer, w waitOpts) error {
	err := t.send(w.cancel, p.rank, tagBarrier+t.bar.round, t.bar.out[:])
	if errors.Is(err, ioloop.ErrCanceled) {
		return w.ctx.Err()
	}
	return err
}

// wake sends p, a neighbour asleep on the pair's mailbox waiting for a
// barrier signal or for a part, a WAKE (linkshm.Mailbox.Ring).
func (t *NetTransport) wake(p *peer, barrier bool) {
	h := frame.Header{Kind: frame.KindWake, Src: uint32(t.rank)}
	if barrier {
		h.Tag = wakeBarrier
	}
	p.link.post(laneCtl, h, nil, false) // a lost peer needs no news
}

// onWake is WAKE's arrive row (kinds.go): no payload, no credit, never
// queued; from a neighbour only, whose mailbox it wakes.
func (p *peer) onWake(c *ioloop.Conn, _ lane, h *frame.Header, _ []byte, bb *ioloop.Buffer) {
	putBuffer(bb)
	mb := p.can().mailbox
	if mb == nil {
		p.violation(c, fmt.Errorf("%w: WAKE from rank %d, which has no mailbox with this rank", ErrProtocol, p.rank))
		return
	}
	mb.Woken(h.Tag == wakeBarrier)
}
