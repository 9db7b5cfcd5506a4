package engine

import (
	"context"
	"errors"

	"github.com/boltmesh/boltmesh/frame"
	"github.com/boltmesh/boltmesh/ioloop"
)

// collTagBase is the start of the tag space that collectives own:
// CollTags tags in the reserved range, apart from users' tags and from the
// barrier's.
const collTagBase = TagReservedBase + 0x0100_0000

// CollTags is the number of tags in the collective tag space.
const CollTags = 1 << 24

// SendColl is Send on the collective tag space: tag is in [0, CollTags).
// It is what package engine/collective builds on.
func (t *NetTransport) SendColl(ctx context.Context, to int, tag uint32, p []byte) error {
	if tag >= CollTags {
		return ErrReservedTag
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	return t.send(ctx.Done(), to, collTagBase+tag, p)
}

// RecvCollInto is RecvIntoContext on the collective tag space. Because a
// collective needs every rank, it also gives up as soon as any peer is
// lost, with that peer's ErrPeerLost.
func (t *NetTransport) RecvCollInto(ctx context.Context, from int, tag uint32, dst []byte) (int, error) {
	if tag >= CollTags {
		return 0, ErrReservedTag
	}
	w := ctxWait(ctx, "collective")
	w.anyLost = true
	n, _, err := t.recv(from, collTagBase+tag, dst, true, w)
	return n, err
}

// errNotQueued is TryRecvCollInto's "nothing has arrived".
var errNotQueued = errors.New("boltmesh: no message queued")

// TryRecvCollInto takes a message from rank from under collective tag tag
// into dst if one has arrived, without waiting: ok is false if none has.
func (t *NetTransport) TryRecvCollInto(from int, tag uint32, dst []byte) (n int, ok bool, err error) {
	if tag >= CollTags {
		return 0, false, ErrReservedTag
	}
	n, _, err = t.recv(from, collTagBase+tag, dst, true, waitOpts{op: "collective", try: true})
	if err == errNotQueued {
		return 0, false, nil
	}
	return n, err == nil, err
}

// ExchangeColl sends out to rank to and receives from rank from into in,
// under collective tag tag, at the same time: the send is started without
// waiting, the receive runs, and then the send is waited for. Two ranks
// exchanging large messages therefore never wait for each other, and no
// goroutine hand-off sits in a step's latency.
func (t *NetTransport) ExchangeColl(ctx context.Context, to, from int, tag uint32, out, in []byte) (int, error) {
	if tag >= CollTags {
		return 0, ErrReservedTag
	}
	if err := t.checkRank(to); err != nil {
		return 0, err
	}
	p := t.peers[to]
	var w ioloop.Write
	var err error
	if p.conn == nil {
		err = t.sendSelf(p, collTagBase+tag, out)
	} else {
		h := frame.Header{Kind: frame.KindSend, Src: uint32(t.rank), Tag: collTagBase + tag}
		if w, err = p.conn.Start(&h, out); err != nil {
			err = t.connErr(p, "collective", err)
		}
	}
	if err != nil {
		return 0, err
	}
	n, rerr := t.RecvCollInto(ctx, from, tag, in)
	if serr := w.Wait(); serr != nil && rerr == nil {
		rerr = t.connErr(p, "collective", serr)
	}
	return n, rerr
}
