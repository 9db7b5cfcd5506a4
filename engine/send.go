package engine

import (
	"context"
	"errors"
	"fmt"

	"github.com/boltmesh/boltmesh/frame"
	"github.com/boltmesh/boltmesh/ioloop"
)

// Send implements Transport.
func (t *NetTransport) Send(to, tag int, p []byte) error {
	if err := checkTag(tag); err != nil {
		return err
	}
	return t.send(nil, to, uint32(tag), p)
}

// SendContext implements Transport.
func (t *NetTransport) SendContext(ctx context.Context, to, tag int, p []byte) error {
	if err := checkTag(tag); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	err := t.send(ctx.Done(), to, uint32(tag), p)
	if errors.Is(err, ioloop.ErrCanceled) {
		return ctx.Err()
	}
	return err
}

// SendNB starts sending p to rank to under tag and returns at once (but
// for flow-control credit, which it may wait for): p must stay untouched
// until the Request's Wait returns. It is the way to exchange messages
// longer than Options.EagerMax with a peer that sends to this rank at the
// same time: such messages go by rendezvous, and a blocking Send of one
// returns only once the receiver has posted its receive.
func (t *NetTransport) SendNB(to, tag int, p []byte) (Request, error) {
	if err := checkTag(tag); err != nil {
		return Request{}, err
	}
	if uint64(len(p)) > t.opts.MaxFrame {
		return Request{}, fmt.Errorf("boltmesh: send of %d bytes: %w (Options.MaxFrame %d)", len(p), frame.ErrTooLarge, t.opts.MaxFrame)
	}
	o, err := t.startSend(nil, to, uint32(tag), 0, p, true)
	if err != nil {
		return Request{}, err
	}
	return Request{t: t, o: o, send: true}, nil
}

// The way a message goes: eagerly (a SEND, once the peer's credit
// allows), or by rendezvous (rendezvous.go: an RTS, answered once a
// receive takes it) when it is striped over the data streams, longer than
// an eager message may be, or copied by the neighbour itself (single
// copy, single_copy.go).

// striped reports whether a message of n bytes to p is cut into one DATA
// piece per stream.
func (t *NetTransport) striped(p *peer, n int) bool {
	return p.link.width() > 1 && n >= t.opts.StripeMin
}

// rendezvous reports whether a message of n bytes to p goes by rendezvous.
func (t *NetTransport) rendezvous(p *peer, n int, window uint64) bool {
	return t.striped(p, n) || frame.Cost(uint64(n)) > t.opts.eagerMax(window)
}

// copies reports whether a message of n bytes to p goes by single copy.
func (p *peer) copies(n int) bool {
	return p.t.opts.SingleCopyMin > 0 && n >= p.t.opts.SingleCopyMin && p.can().copy.Out
}

// send is Send for any tag, reserved ones included.
func (t *NetTransport) send(cancel <-chan struct{}, to int, tag uint32, p []byte) error {
	return t.sendAux(cancel, to, tag, 0, p)
}

// sendAux is send with aux in the header's Aux field: eagerly, once the
// peer's credit allows, or by rendezvous (rendezvous.go).
func (t *NetTransport) sendAux(cancel <-chan struct{}, to int, tag, aux uint32, p []byte) error {
	if err := t.checkRank(to); err != nil {
		return err
	}
	if uint64(len(p)) > t.opts.MaxFrame {
		return fmt.Errorf("boltmesh: send of %d bytes: %w (Options.MaxFrame %d)", len(p), frame.ErrTooLarge, t.opts.MaxFrame)
	}
	pr := t.peer(to)
	if !pr.up() {
		return t.sendSelf(pr, tag, aux, p)
	}
	window, err := pr.window(cancel, "send")
	if err != nil {
		return err
	}
	if t.rendezvous(pr, len(p), window) || pr.copies(len(p)) {
		return t.sendRdv(cancel, pr, tag, aux, p, window)
	}
	cost := frame.Cost(uint64(len(p)))
	if err := pr.acquire(cost, cancel, "send"); err != nil {
		return err
	}
	h := frame.Header{Kind: frame.KindSend, Src: uint32(t.rank), Tag: tag, Aux: aux}
	if err := pr.link.send(laneData, h, p, cancel); err != nil {
		if errors.Is(err, ioloop.ErrCanceled) {
			pr.out.GiveBack(cost) // never sent
		}
		return t.connErr(pr, "send", err)
	}
	return nil
}

// sendOp is a started send: an eager frame being written, or a
// rendezvous waiting for its answer. Its zero value is a completed send.
type sendOp struct {
	p    *peer
	w    ioloop.Write
	s    *rdvSend
	cost uint64 // eager: the credit, given back if the frame is dropped unsent
}

// startSend starts sending p to rank to under tag without waiting for the
// bytes to go out (but for credit, until cancel closes); finish it with
// finishSend. copyEager lets a message to a neighbour below the eager
// limit go by single copy (single_copy.go), which completes once the
// neighbour's event loop has copied it rather than once it is in the
// ring: false for sends that must finish, or be withdrawn, without the
// receiver's process running.
func (t *NetTransport) startSend(cancel <-chan struct{}, to int, tag, aux uint32, p []byte, copyEager bool) (sendOp, error) {
	if err := t.checkRank(to); err != nil {
		return sendOp{}, err
	}
	pr := t.peer(to)
	if !pr.up() {
		return sendOp{}, t.sendSelf(pr, tag, aux, p)
	}
	window, err := pr.window(cancel, "send")
	if err != nil {
		return sendOp{}, err
	}
	if t.rendezvous(pr, len(p), window) || copyEager && pr.copies(len(p)) {
		s, err := t.startRdv(pr, tag, aux, p, window, cancel)
		return sendOp{p: pr, s: s}, err
	}
	cost := frame.Cost(uint64(len(p)))
	if err := pr.acquire(cost, cancel, "send"); err != nil {
		return sendOp{}, err
	}
	h := frame.Header{Kind: frame.KindSend, Src: uint32(t.rank), Tag: tag, Aux: aux}
	w, err := pr.link.start(laneData, h, p)
	if err != nil {
		return sendOp{}, t.connErr(pr, "send", err)
	}
	return sendOp{p: pr, w: w, cost: cost}, nil
}

// finishSend waits for a started send. If cancel closes first, a send
// whose bytes have not started to go out is dropped (ErrCanceled); one
// that has is committed and finishes in the background (nil).
func (t *NetTransport) finishSend(o sendOp, cancel <-chan struct{}) error {
	switch {
	case o.s != nil:
		return t.waitRdv(o.p, o.s, cancel)
	case o.p == nil:
		return nil
	}
	err := o.w.WaitCancel(cancel)
	if errors.Is(err, ioloop.ErrCanceled) {
		o.p.out.GiveBack(o.cost)
	}
	if err != nil {
		return t.connErr(o.p, "send", err)
	}
	return nil
}

// sendSelf queues a copy of p for this rank's own receives.
func (t *NetTransport) sendSelf(pr *peer, tag, aux uint32, p []byte) error {
	if t.closed.Load() {
		return &PeerError{Op: "send", Rank: t.rank, Err: ErrClosed}
	}
	bb := ioloop.GetBuffer(len(p))
	copy(bb.B, p)
	pr.deliverSend(tag, aux, bb)
	return nil
}
