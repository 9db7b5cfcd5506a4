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

// send is Send for any tag, reserved ones included.
func (t *NetTransport) send(cancel <-chan struct{}, to int, tag uint32, p []byte) error {
	return t.sendAux(cancel, to, tag, 0, p)
}

// sendAux is send with aux in the header's Aux field.
func (t *NetTransport) sendAux(cancel <-chan struct{}, to int, tag, aux uint32, p []byte) error {
	if err := t.checkRank(to); err != nil {
		return err
	}
	if uint64(len(p)) > t.opts.MaxFrame {
		return fmt.Errorf("boltmesh: send of %d bytes: %w (Options.MaxFrame %d)", len(p), frame.ErrTooLarge, t.opts.MaxFrame)
	}
	pr := t.peers[to]
	if pr.conn == nil {
		return t.sendSelf(pr, tag, aux, p)
	}
	if len(pr.streams) > 1 && len(p) >= t.opts.StripeMin {
		return t.sendStriped(cancel, pr, tag, aux, p)
	}
	h := frame.Header{Kind: frame.KindSend, Dst: pr.via, Src: uint32(t.rank), Tag: tag, Aux: aux}
	if err := pr.conn.SendCancel(&h, p, cancel); err != nil {
		return t.connErr(pr, "send", err)
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
	pr.deliver(nil, tag, aux, bb)
	return nil
}
