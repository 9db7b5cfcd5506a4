package engine_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/boltmesh/boltmesh/engine"
	"github.com/boltmesh/boltmesh/frame"
	"github.com/boltmesh/boltmesh/ioloop"
)

// The end of a peerRun: what the real ranks' operations must have
// become, and what the raw rank's loss (if any) must have been caused by.

// finish ends the iteration: it lets the real ranks' operations end,
// checks their outcomes and the world, and reports whether the world may
// be kept.
func (r *peerRun) finish(t *testing.T) bool {
	if t.Failed() {
		r.cancel()
		return false
	}
	r.fenceAll(t)
	r.cancel()
	if t.Failed() {
		return false
	}
	// Let the real ranks' operations end: complete what the raw rank
	// owes them (the DATA of messages a receive took, answers to gets).
	deadline := time.Now().Add(fuzzWait)
	for !r.opsDone() {
		if time.Now().After(deadline) {
			_, lerr := r.lostNow()
			t.Fatalf("the real ranks' operations did not end within %v of the script's end (raw rank: %v; losses: %v)\n%s\n%s", fuzzWait, r.w.raw.deadErr(), lerr, r.pending(), r.trace())
		}
		r.collect()
		if r.w.raw.deadErr() == nil {
			r.owe()
		}
		select {
		case <-r.w.raw.changed():
		case <-time.After(time.Millisecond):
		}
	}
	r.rankOps.Wait()
	r.collect() // the answers that came since the loop's last look (the fence orders them before its own)
	lost := r.checkLoss(t)
	r.checkRecvs(t)
	r.checkOps(t)
	if err := r.checkOthers(); err != nil {
		// Whatever the raw rank did, the real ranks still work with each
		// other.
		t.Fatalf("%v\n%s", err, r.trace())
	}
	if lost || t.Failed() || len(r.goodbye) > 0 { // a GOODBYE stays said: a new world
		return false
	}
	for _, tg := range r.targets {
		engine.DrainPeer(tg.tr, rawRank)
	}
	if !r.fenceAll(t) {
		return false
	}
	for _, tg := range r.targets {
		tombs := uint64(*tg.tombs) * frame.Cost(0)
		if q, held := engine.QueuedBytes(tg.tr, rawRank), engine.HeldCredit(tg.tr, rawRank); q != 0 || held != tombs {
			t.Fatalf("rank %d, drained, still holds %d bytes of queued messages and %d of the raw rank's credit (want its tombstones' %d)\n%s", tg.rank, q, held, tombs, r.trace())
		}
	}
	return !t.Failed()
}

// opsDone reports whether every operation of the real ranks has ended.
func (r *peerRun) opsDone() bool {
	for _, tg := range r.targets {
		for _, rv := range tg.recvs {
			select {
			case <-rv.done:
			default:
				return false
			}
		}
		for _, o := range tg.ops {
			select {
			case <-o.done:
			default:
				return false
			}
		}
	}
	return true
}

// pending describes the operations still under way.
func (r *peerRun) pending() string {
	var b strings.Builder
	for _, tg := range r.targets {
		for _, rv := range tg.recvs {
			select {
			case <-rv.done:
			default:
				fmt.Fprintf(&b, "rank %d: a receive on tag %d (into %v, %d)\n", tg.rank, rv.tag, rv.into, rv.cap)
			}
		}
		for _, o := range tg.ops {
			select {
			case <-o.done:
			default:
				fmt.Fprintf(&b, "rank %d: %s\n", tg.rank, o.what)
			}
		}
		for _, rdv := range tg.rdvs {
			fmt.Fprintf(&b, "rank %d: raw send %d tag %d, %d bytes: cts %v refused %v withdrawn %v pieces %d sent %b bad %v\n", tg.rank, rdv.id, rdv.tag, rdv.n, rdv.cts, rdv.refused, rdv.withdrawn, rdv.k, rdv.sent, rdv.bad)
		}
	}
	return b.String()
}

// owe sends what the raw rank owes: the missing DATA pieces of every
// message a receive took, and an answer to every get.
func (r *peerRun) owe() {
	for _, tg := range r.targets {
		for _, rdv := range tg.rdvs {
			if !rdv.cts || rdv.refused || rdv.complete() || rdv.bad {
				continue
			}
			if rdv.k == 0 {
				rdv.k = 1
			}
			for i := range rdv.k {
				if rdv.sent&(1<<i) != 0 {
					continue
				}
				lo, hi := piece(rdv.n, rdv.k, i)
				p := content(rdv.id+uint64(i), hi-lo)
				copy(rdv.msg.data[lo:hi], p)
				rdv.sent |= 1 << i
				r.send(tg, 0, frame.Header{Kind: frame.KindData, Tag: rdv.tag, Aux: uint32(rdv.k)<<16 | uint32(i), Offset: rdv.id}, p)
			}
		}
		for id, g := range tg.gets {
			delete(tg.gets, id)
			g.answer = content(id, len(g.dst))
			r.send(tg, 0, frame.Header{Kind: frame.KindGetReply, Offset: id}, g.answer)
		}
	}
}

// checkLoss checks whether the raw rank (or, in a star, worker 1) was
// lost, and why, and reports whether anyone was lost.
func (r *peerRun) checkLoss(t *testing.T) bool {
	if r.stopped && r.w.raw.deadErr() == nil {
		// A frame the rank must refuse unread went out: it must drop us.
		if !r.w.raw.waitFor(fuzzWait, func() bool { return false }) && r.w.raw.deadErr() == nil {
			t.Fatalf("the rank kept the connection after a frame it must refuse\n%s", r.trace())
		}
	}
	who, err := r.lostNow()
	if err == nil && r.w.raw.deadErr() != nil {
		// The connection ended: the rank's loss is being recorded.
		for end := time.Now().Add(2 * time.Second); err == nil && time.Now().Before(end); time.Sleep(time.Millisecond) {
			who, err = r.lostNow()
		}
		if err == nil {
			t.Fatalf("the raw rank's connection ended (%v) but no rank lost it\n%s", r.w.raw.deadErr(), r.trace())
		}
	}
	if err == nil {
		return false
	}
	var pe *engine.PeerError
	if errors.As(err, &pe) && pe.Rank != rawRank {
		// In a star too: worker 1 drops the raw worker alone
		// (routeLink.refuse), or one worker could cut another off.
		t.Fatalf("rank %d lost rank %d (%v) for what the raw rank sent\n%s", who, pe.Rank, err, r.trace())
	}
	if !errors.As(err, &pe) || !errors.Is(err, engine.ErrPeerLost) {
		t.Fatalf("a loss reported as %v, not a *PeerError wrapping ErrPeerLost\n%s", err, r.trace())
	}
	why, broke := r.invalid[who]
	switch {
	case !broke:
		t.Fatalf("rank %d lost rank %d (%v), but the script did nothing the protocol forbids there\n%s", who, pe.Rank, err, r.trace())
	case r.goodbye[who] && errors.Is(err, engine.ErrPeerClosed):
	case !protocolCause(err):
		t.Fatalf("rank %d lost rank %d with %v after %q: the cause is not a protocol error\n%s", who, pe.Rank, err, why, r.trace())
	}
	return true
}

// protocolCause reports whether err has a protocol error for its cause.
func protocolCause(err error) bool {
	var de *frame.DecodeError
	return errors.Is(err, engine.ErrProtocol) || errors.Is(err, engine.ErrFlowControl) || errors.As(err, &de) || errors.Is(err, ioloop.ErrProtocol)
}

// checkRecvs checks that the receives each target posted from the raw
// rank got its messages in order.
func (r *peerRun) checkRecvs(t *testing.T) {
	for _, tg := range r.targets {
		next := make(map[uint32]int)
		for _, rv := range tg.recvs {
			msgs := tg.tags[uint32(rv.tag)]
			var te *engine.TruncatedError
			switch {
			case rv.err == nil:
				i := next[uint32(rv.tag)]
				for i < len(msgs) && (msgs[i].rdv != nil && msgs[i].rdv.refused || msgs[i].maybe && !bytes.Equal(msgs[i].data, rv.data)) {
					i++ // refused, or never queued
				}
				if i >= len(msgs) {
					t.Fatalf("rank %d received %d bytes on tag %d, more messages than the raw rank sent\n%s", tg.rank, rv.n, rv.tag, r.trace())
				}
				m := msgs[i]
				next[uint32(rv.tag)] = i + 1
				if m.rdv != nil && m.rdv.bad {
					continue // its DATA broke the protocol: no telling
				}
				if !bytes.Equal(rv.data, m.data) {
					t.Fatalf("rank %d's receive %d on tag %d got %d bytes, not the raw rank's message %d (%d bytes)\n%s", tg.rank, i, rv.tag, len(rv.data), i, len(m.data), r.trace())
				}
			case errors.As(rv.err, &te):
				if !rv.into || te.Cap != rv.cap {
					t.Fatalf("rank %d's receive (into %v, %d) on tag %d: %v\n%s", tg.rank, rv.into, rv.cap, rv.tag, rv.err, r.trace())
				}
			case errors.Is(rv.err, engine.ErrPeerLost):
				// It may have taken a rendezvous message whose DATA never
				// came: that message is then gone with it.
				i := next[uint32(rv.tag)]
				for i < len(msgs) && (msgs[i].rdv != nil && msgs[i].rdv.refused || msgs[i].maybe) {
					i++
				}
				if i < len(msgs) && msgs[i].rdv != nil && msgs[i].rdv.cts {
					next[uint32(rv.tag)] = i + 1
				}
			case errors.Is(rv.err, context.Canceled):
			default:
				t.Fatalf("rank %d's receive on tag %d: %v\n%s", tg.rank, rv.tag, rv.err, r.trace())
			}
		}
	}
}

// checkOps checks the outcomes of the real ranks' sends and gets.
func (r *peerRun) checkOps(t *testing.T) {
	for _, tg := range r.targets {
		for _, o := range tg.ops {
			var re *engine.RemoteError
			var le *engine.LengthMismatchError
			var oe *engine.OutOfBoundsError
			switch {
			case o.err == nil:
				if o.answer != nil && !o.ansErr && !bytes.Equal(o.dst, o.answer) {
					t.Fatalf("%s returned bytes other than the raw rank's answer\n%s", o.what, r.trace())
				}
			case errors.Is(o.err, context.Canceled), errors.Is(o.err, engine.ErrPeerLost), errors.Is(o.err, frame.ErrTooLarge),
				errors.As(o.err, &re), errors.As(o.err, &le), errors.As(o.err, &oe):
			default:
				t.Fatalf("%s: %v\n%s", o.what, o.err, r.trace())
			}
		}
	}
}

// checkOthers checks that the real ranks still work with each other.
func (r *peerRun) checkOthers() error {
	ts := r.w.ts
	for a := range 2 {
		msg := content(r.nextID(), 100)
		if err := ts[a].Send(1-a, otherTag, msg); err != nil {
			return fmt.Errorf("rank %d, sending to rank %d after the script: %w", a, 1-a, err)
		}
		got, err := ts[1-a].RecvTimeout(a, otherTag, fuzzWait)
		if err != nil || !bytes.Equal(got, msg) {
			return fmt.Errorf("rank %d, receiving from rank %d after the script: %d bytes, %w", 1-a, a, len(got), err)
		}
	}
	return nil
}

// otherTag is the tag the real ranks check each other with.
const otherTag = 1000
