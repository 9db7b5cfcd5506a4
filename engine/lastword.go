package engine

import (
	"errors"
	"fmt"

	"github.com/boltmesh/boltmesh/frame"
	"github.com/boltmesh/boltmesh/internal/link/sealed"
	"github.com/boltmesh/boltmesh/ioloop"
)

// The last word (frame/spec.md, "Liveness"). A rank that drops a peer for
// a fault it found itself (a sealed record that did not authenticate,
// silence, a frame that breaks the protocol, credit exceeded) writes DROP
// on each stream of their link that takes it at once, the one the fault
// was found on included, before it ends them: ioloop tells the stream's
// handler as the stream is about to fail (ioloop.Failer), and the link
// says it, once (lastWord). The peer, which may have seen nothing wrong
// (its records were the ones altered on the way), then loses this rank
// for that fault, a *DroppedError, rather than for the end of a
// connection; one that reads a connection's end first reads its other
// streams before deciding (meshLink.readOthers), where a DROP may wait.

// dropFault returns the fault a DROP names for err, the end this rank
// gives a stream, or 0 for an end that is no fault it found: the peer's
// own word (a *DroppedError), an orderly close, a broken connection, or a
// sealed stream that ended inside a record (the peer may have ended it
// with a record half written: cutShort).
func dropFault(err error) uint32 {
	var de *DroppedError
	switch {
	case errors.As(err, &de), cutShort(err):
		return 0
	case errors.Is(err, ErrTampered):
		return frame.DropTampered
	case errors.Is(err, ErrNoHeartbeat):
		return frame.DropSilent
	case errors.Is(err, ErrFlowControl):
		return frame.DropFlowControl
	case errors.Is(err, ErrNotReading):
		return frame.DropNotReading
	case errors.Is(err, ErrSingleCopy):
		return frame.DropSingleCopy
	case errors.Is(err, ErrProtocol), errors.Is(err, ioloop.ErrProtocol):
		return frame.DropProtocol
	}
	return 0
}

// cutShort reports whether err is a sealed stream's end inside a record:
// someone on the path cut it, or the peer ended it (it dropped this rank
// while its socket was full), which cannot be told apart. It is the loss
// of the peer for tampering if nothing else names a cause, but this rank
// reads the link's other streams first (peerEnded) and says no last word.
func cutShort(err error) bool {
	var te *sealed.TamperError
	return errors.As(err, &te) && te.Cut
}

// dropFaults are the sentinels of the faults a DROP names, by its Aux.
var dropFaults = [...]error{
	frame.DropTampered:    ErrTampered,
	frame.DropSilent:      ErrNoHeartbeat,
	frame.DropProtocol:    ErrProtocol,
	frame.DropFlowControl: ErrFlowControl,
	frame.DropNotReading:  ErrNotReading,
	frame.DropSingleCopy:  ErrSingleCopy,
}

// dropFrame returns the DROP this rank writes to p for err, found on
// stream s (its index among the pair's streams), and its payload; ok is
// false for an err that is no fault (dropFault).
func (p *peer) dropFrame(err error, s int) (h frame.Header, words []byte, ok bool) {
	fault := dropFault(err)
	if fault == 0 {
		return h, nil, false
	}
	var ce *ioloop.ConnError
	if errors.As(err, &ce) {
		err = ce.Err // the stream's own end says nothing to the peer
	}
	words = []byte(err.Error())
	if len(words) > frame.MaxReasonSize {
		words = words[:frame.MaxReasonSize]
	}
	h = frame.Header{Kind: frame.KindDrop, Src: uint32(p.t.rank), Aux: fault, Offset: uint64(s)}
	return h, words, true
}

// dropped is what a DROP from p says: the *DroppedError its loss is for.
func (p *peer) dropped(h *frame.Header, words []byte) *DroppedError {
	e := &DroppedError{Stream: int(h.Offset), Reason: string(words)}
	if h.Aux < uint32(len(dropFaults)) {
		e.Err = dropFaults[h.Aux]
	}
	return e
}

// deliverDrop takes p's DROP, which came on c: p drops this rank, every
// stream of it, for what it says. Only a peer joined directly sends one.
func (p *peer) deliverDrop(c *ioloop.Conn, h *frame.Header, words []byte) {
	if relayed(p) != nil {
		p.violation(c, fmt.Errorf("%w: a DROP from rank %d through the coordinator", ErrProtocol, p.rank))
		return
	}
	err := p.dropped(h, words)
	p.told.Store(err) // first: whichever stream's end is seen first names it (toldCause)
	c.Abort(err)
	p.link.abort(c, err)
}

// toldCause returns err, the end of one of p's streams, or p's last word
// if it said one: its streams may end, and be seen to, before the DROP
// that names the cause is taken.
func (p *peer) toldCause(err error) error {
	var de *DroppedError
	if d := p.told.Load(); d != nil && !errors.As(err, &de) {
		return fmt.Errorf("%w (then: %v)", d, err)
	}
	return err
}

// onDrop is DROP's arrive row (kinds.go): the sender's last frame, which
// uses no credit.
func (p *peer) onDrop(c *ioloop.Conn, _ lane, h *frame.Header, payload []byte, bb *ioloop.Buffer) {
	p.deliverDrop(c, h, payload)
	putBuffer(bb)
}
