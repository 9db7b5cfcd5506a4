package engine

import (
	"context"
	"errors"
	"fmt"
	"math/bits"
	"sync"

	"github.com/boltmesh/boltmesh/frame"
	"github.com/boltmesh/boltmesh/internal/plumb"
	"github.com/boltmesh/boltmesh/ioloop"
)

// rpcState holds the RPC handler and the requests that came before it
// (each holding its sender's credit, which bounds them).
type rpcState struct {
	mu         sync.Mutex
	h          plumb.RPCHandler
	installing bool // setRPCHandler is handing the early frames over
	early      earlyQueue
}

type earlyRPC struct {
	from int
	f    plumb.RPCFrame
	p    plumb.RPCPayload
}

// earlyQueue holds the RPC frames that came before a handler, in order,
// in blocks of earlyBlock: growing it copies nothing, so that a flood of
// requests (each within its sender's credit) leaves no garbage behind.
type earlyQueue struct{ blocks [][]earlyRPC }

const earlyBlock = 256

func (q *earlyQueue) push(e earlyRPC) {
	if n := len(q.blocks); n == 0 || len(q.blocks[n-1]) == earlyBlock {
		q.blocks = append(q.blocks, make([]earlyRPC, 0, earlyBlock))
	}
	last := &q.blocks[len(q.blocks)-1]
	*last = append(*last, e)
}

// take empties the queue and returns what it held, in order.
func (q *earlyQueue) take() [][]earlyRPC {
	b := q.blocks
	q.blocks = nil
	return b
}

// setRPCHandler installs h as the receiver of RPC frames; nil uninstalls
// it. Requests that arrived before (each peer's within its credit,
// Options.MaxQueuedBytes) are handed to h first, in their order of
// arrival and before any later frame, and RPCPeerLost is called for peers
// already lost. Replies that arrive while no handler is installed are
// dropped: nobody waits for them.
func (t *NetTransport) setRPCHandler(h plumb.RPCHandler) error {
	s := &t.rpc
	s.mu.Lock()
	if h != nil && (s.h != nil || s.installing) {
		s.mu.Unlock()
		return ErrRPCHandlerSet
	}
	if h == nil {
		s.h = nil
		s.mu.Unlock()
		return nil
	}
	s.installing = true
	for len(s.early.blocks) > 0 {
		// Frames arriving meanwhile join s.early: h is not yet visible to
		// the loop, so it never sees a frame before an earlier one, nor
		// two frames at once.
		early := s.early.take()
		s.mu.Unlock()
		for _, b := range early {
			for _, e := range b {
				h.HandleRPC(e.from, e.f, e.p)
			}
		}
		s.mu.Lock()
	}
	s.h, s.installing = h, false
	s.mu.Unlock()
	for r, p := range t.view().peers {
		if err := p.lostErr("rpc"); err != nil && r != t.rank {
			h.RPCPeerLost(r, err)
		}
	}
	return nil
}

// sendRPC sends one RPC frame with payload p to rank to, which must not be
// this rank (the RPC layer short-circuits calls to itself). A request
// first waits for the peer's flow-control credit. It returns once the
// frame is handed to the kernel, or with ctx's error if no byte of it was
// sent by then.
func (t *NetTransport) sendRPC(ctx context.Context, to int, f plumb.RPCFrame, p []byte) error {
	h, pr, err := t.rpcHeader(to, f, p)
	if err != nil {
		return err
	}
	var cancel <-chan struct{}
	if ctx != nil {
		cancel = ctx.Done()
	}
	cost, err := t.rpcCredit(pr, f, len(p), cancel)
	if err != nil {
		return t.rpcErr(ctx, pr, err)
	}
	if err := pr.link.send(laneCtl, h, p, cancel); err != nil {
		if errors.Is(err, ioloop.ErrCanceled) {
			pr.out.giveBack(cost)
		}
		return t.rpcErr(ctx, pr, err)
	}
	return nil
}

// rpcErr turns an error sending to pr into sendRPC's.
func (t *NetTransport) rpcErr(ctx context.Context, pr *peer, err error) error {
	if errors.Is(err, ioloop.ErrCanceled) && ctx != nil && ctx.Err() != nil {
		return ctx.Err()
	}
	return t.connErr(pr, "rpc", err)
}

// rpcCredit takes the credit an RPC frame needs (a request's; replies
// need none), waiting for it until cancel closes, and returns it. A
// request too large for the peer to hold (frame.Cost above half its
// window) costs only frame.Cost(0): the peer discards it unread and the
// RPC layer there refuses it.
func (t *NetTransport) rpcCredit(pr *peer, f plumb.RPCFrame, n int, cancel <-chan struct{}) (uint64, error) {
	if f.Reply {
		return 0, nil
	}
	window, err := t.window(pr, cancel, "rpc")
	if err != nil {
		return 0, err
	}
	if err := rpcFits(pr.rank, n, window); err != nil {
		return 0, err
	}
	cost := rpcCost(uint64(n), window)
	return cost, t.acquire(pr, cost, cancel, "rpc")
}

// tryRPCCredit is rpcCredit for a frame that must not wait.
func (t *NetTransport) tryRPCCredit(pr *peer, f plumb.RPCFrame, n int) (uint64, error) {
	if f.Reply {
		return 0, nil
	}
	window := pr.out.known.Load()
	if window == 0 {
		return 0, ErrNoCredit
	}
	if err := rpcFits(pr.rank, n, window); err != nil {
		return 0, err
	}
	cost := rpcCost(uint64(n), window)
	if !pr.out.take(cost) {
		return 0, ErrNoCredit
	}
	return cost, nil
}

// rpcFits returns a *plumb.RequestSizeError for a request of n bytes to
// rank to, whose window is window, above what that rank holds.
func rpcFits(to, n int, window uint64) error {
	if max := rpcRequestMax(window); uint64(n) > max {
		return &plumb.RequestSizeError{Rank: to, Size: uint64(n), Limit: max}
	}
	return nil
}

// rpcRequestMax is the largest RPC request payload that a rank granting
// window holds: the largest n whose frame.Cost is at most half the
// window. A larger one is discarded unread on arrival (rpcCost), so an
// honest sender refuses it before sending (rpcFits).
func rpcRequestMax(window uint64) uint64 {
	half := window / 2
	if half <= frame.MsgOverhead {
		return 0
	}
	return 1 << (bits.Len64(half-frame.MsgOverhead) - 1)
}

// rpcRequestMaxTo is plumb.RPC.RPCRequestMax.
func (t *NetTransport) rpcRequestMaxTo(to int) (uint64, bool) {
	if to == t.rank {
		return rpcRequestMax(uint64(t.opts.MaxQueuedBytes)), true
	}
	if to < 0 || to >= t.world {
		return 0, false
	}
	w := t.peer(to).out.known.Load()
	return rpcRequestMax(w), w != 0
}

// rpcCost is the credit of an RPC request of n bytes to a peer whose
// window is window: frame.Cost(n), or frame.Cost(0) for one the peer will
// discard unread because it could never hold it.
func rpcCost(n, window uint64) uint64 {
	if c := frame.Cost(n); c <= window/2 {
		return c
	}
	return frame.Cost(0)
}

// postRPC queues one RPC frame for rank to and returns at once, without
// waiting for the socket: p is copied. It is how a plumb.RPCHandler
// answers from inside HandleRPC, which must not block. Frames keep their
// order with those of sendRPC. A request fails with ErrNoCredit rather
// than wait for the peer's credit.
func (t *NetTransport) postRPC(to int, f plumb.RPCFrame, p []byte) error {
	h, pr, err := t.rpcHeader(to, f, p)
	if err != nil {
		return err
	}
	if _, err := t.tryRPCCredit(pr, f, len(p)); err != nil {
		return err
	}
	if err := pr.link.post(laneCtl, h, p, true); err != nil {
		return t.connErr(pr, "rpc", err)
	}
	return nil
}

// queueRPC is postRPC that leaves the frame unwritten until flushRPC, or
// the next frame to rank to, writes it along with everything else queued
// for that rank: the answers to a burst of requests then take one writev
// instead of one each. The caller must make sure a flush follows.
func (t *NetTransport) queueRPC(to int, f plumb.RPCFrame, p []byte) error {
	h, pr, err := t.rpcHeader(to, f, p)
	if err != nil {
		return err
	}
	if _, err := t.tryRPCCredit(pr, f, len(p)); err != nil {
		return err
	}
	if err := pr.link.queue(laneCtl, h, p); err != nil {
		return t.connErr(pr, "rpc", err)
	}
	return nil
}

// flushRPC writes what queueRPC left queued for rank to.
func (t *NetTransport) flushRPC(to int) {
	if t.checkRank(to) == nil && t.peer(to).up() {
		t.peer(to).link.flush(laneCtl)
	}
}

// spinRPC lets a goroutine about to wait for an RPC reply from rank from
// read that connection itself, as a blocking receive does: it drives the
// connection until done reports true or no byte has arrived from the peer
// for Options.Spin, and reports done's last answer. RPC frames read
// meanwhile are handed to the handler on this goroutine. With spinning
// disabled, or for this rank, it only asks done.
func (t *NetTransport) spinRPC(from int, done func() bool) bool {
	if t.checkRank(from) != nil {
		return done()
	}
	return t.spinUntil(t.peer(from), laneCtl, done)
}

// rpcHeader checks an outgoing RPC frame and returns its header and peer.
func (t *NetTransport) rpcHeader(to int, f plumb.RPCFrame, p []byte) (frame.Header, *peer, error) {
	if err := t.checkRank(to); err != nil {
		return frame.Header{}, nil, err
	}
	if to == t.rank {
		return frame.Header{}, nil, fmt.Errorf("boltmesh: RPC frame to this rank (%d): %w", to, ErrSelfRPC)
	}
	if uint64(len(p)) > t.opts.MaxFrame {
		return frame.Header{}, nil, fmt.Errorf("boltmesh: rpc of %d bytes: %w (Options.MaxFrame %d)", len(p), frame.ErrTooLarge, t.opts.MaxFrame)
	}
	h := frame.Header{Kind: frame.KindRPCReq, Src: uint32(t.rank), Tag: f.Tag, Aux: f.Aux, Offset: f.ID}
	if f.Reply {
		h.Kind = frame.KindRPCReply
		if f.Error {
			h.Flags = frame.FlagError
		}
	}
	return h, t.peer(to), nil
}

// rpcIn is what the reader of a peer's control lane notes of the RPC
// frame it is reading, between payload and arrive. Lock rule: only that
// reader touches it.
type rpcIn struct {
	cost uint64 // the credit of the RPC request being read
	drop bool   // the RPC frame being read is discarded (plumb.RPCFrame.Dropped)
}

// rpcPayload accounts an RPC frame's credit (a request's) and names where
// its payload goes: a pooled buffer, or nowhere for one discarded unread
// (see plumb.RPCFrame.Dropped). It notes the outcome for deliverRPC.
func (p *peer) rpcPayload(c *ioloop.Conn, h *frame.Header) []byte {
	req := h.Kind == frame.KindRPCReq
	p.rpcIn.cost, p.rpcIn.drop = 0, false
	if req {
		p.rpcIn.cost = rpcCost(h.Length, p.in.window)
		if !p.useCredit(c, p.rpcIn.cost) {
			return nil
		}
		p.rpcIn.drop = p.rpcIn.cost != frame.Cost(h.Length)
	}
	s := &p.t.rpc
	s.mu.Lock()
	hd := s.h
	s.mu.Unlock()
	switch {
	case p.rpcIn.drop:
	case hd == nil:
		p.rpcIn.drop = !req // nobody waits for a reply
	default:
		if f, ok := hd.(plumb.RPCPayloadFilter); ok {
			p.rpcIn.drop = !f.Accept(p.rank, rpcFrame(h), h.Length)
		}
	}
	switch {
	case p.rpcIn.drop && h.Length > 0:
		c.Discard()
	case h.Length == 0:
		return noPayload // no pooled buffer for nothing
	}
	return nil
}

// noPayload names where an empty payload goes: nowhere, and no buffer.
var noPayload = []byte{}

// rpcFrame is the plumb.RPCFrame of an RPC frame's header.
func rpcFrame(h *frame.Header) plumb.RPCFrame {
	return plumb.RPCFrame{Reply: h.Kind == frame.KindRPCReply, Error: h.Flags&frame.FlagError != 0, ID: h.Offset, Tag: h.Tag, Aux: h.Aux}
}

// deliverRPC hands an RPC frame to the handler, or holds a request until
// one is installed; a reply nobody waits for is dropped.
func (p *peer) deliverRPC(h *frame.Header, bb *ioloop.Buffer) {
	f := rpcFrame(h)
	if p.rpcIn.drop {
		f.Dropped = h.Length
		putBuffer(bb)
		bb = nil
	}
	pl := plumb.NewRPCPayload(bb, (*peerCredit)(p), p.rpcIn.cost)
	p.rpcIn.cost, p.rpcIn.drop = 0, false
	s := &p.t.rpc
	s.mu.Lock()
	hd := s.h
	if hd == nil {
		if f.Reply {
			s.mu.Unlock()
			pl.Release()
			return
		}
		s.early.push(earlyRPC{from: p.rank, f: f, p: pl})
		s.mu.Unlock()
		return
	}
	s.mu.Unlock()
	hd.HandleRPC(p.rank, f, pl)
}

// rpcPeerLost tells the RPC handler, if any, that p is gone.
func (p *peer) rpcPeerLost() {
	s := &p.t.rpc
	s.mu.Lock()
	hd := s.h
	s.mu.Unlock()
	if hd != nil {
		hd.RPCPeerLost(p.rank, p.lostErr("rpc"))
	}
}
