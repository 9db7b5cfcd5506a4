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

// Service frames: the two frame kinds (frame.KindRPCReq, a request, and
// frame.KindRPCReply, a reply) that the transport carries for the one
// service that gives them meaning, package rpc, through plumb.Service.
// The transport knows only that a request holds its receiver's credit
// until the service releases it and a reply holds none; what a frame's
// ID, Tag and Aux mean is the service's.
//
// Lock rule: serviceState.mu guards the handler and the early queue; it
// is a leaf, and the handler is called with no lock held.

// serviceState holds the service's handler and the requests that came
// before it (each holding its sender's credit, which bounds them).
type serviceState struct {
	mu         sync.Mutex
	h          plumb.ServiceHandler
	installing bool // setServiceHandler is handing the early frames over
	early      earlyQueue
}

// earlyFrame is a request that came before the handler.
type earlyFrame struct {
	from int
	f    plumb.ServiceFrame
	p    plumb.ServicePayload
}

// earlyQueue holds the requests that came before a handler, in order,
// in blocks of earlyBlock: growing it copies nothing, so that a flood of
// requests (each within its sender's credit) leaves no garbage behind.
type earlyQueue struct{ blocks [][]earlyFrame }

const earlyBlock = 256

func (q *earlyQueue) push(e earlyFrame) {
	if n := len(q.blocks); n == 0 || len(q.blocks[n-1]) == earlyBlock {
		q.blocks = append(q.blocks, make([]earlyFrame, 0, earlyBlock))
	}
	last := &q.blocks[len(q.blocks)-1]
	*last = append(*last, e)
}

// take empties the queue and returns what it held, in order.
func (q *earlyQueue) take() [][]earlyFrame {
	b := q.blocks
	q.blocks = nil
	return b
}

// setServiceHandler installs h as the receiver of service frames; nil
// uninstalls it. Requests that arrived before (each peer's within its credit,
// Options.MaxQueuedBytes) are handed to h first, in their order of
// arrival and before any later frame, and ServicePeerLost is called for peers
// already lost. Replies that arrive while no handler is installed are
// dropped: nobody waits for them.
func (t *NetTransport) setServiceHandler(h plumb.ServiceHandler) error {
	s := &t.svc
	s.mu.Lock()
	if h != nil && (s.h != nil || s.installing) {
		s.mu.Unlock()
		return plumb.ErrHandlerSet
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
				h.HandleFrame(e.from, e.f, e.p)
			}
		}
		s.mu.Lock()
	}
	s.h, s.installing = h, false
	s.mu.Unlock()
	for r, p := range t.view().Peers {
		if err := p.lostErr("service"); err != nil && r != t.rank {
			h.ServicePeerLost(r, err)
		}
	}
	return nil
}

// sendService sends one service frame with payload p to rank to, which
// must not be this rank (the service answers itself without the
// transport). A request
// first waits for the peer's flow-control credit. It returns once the
// frame is handed to the kernel, or with ctx's error if no byte of it was
// sent by then.
func (t *NetTransport) sendService(ctx context.Context, to int, f plumb.ServiceFrame, p []byte) error {
	h, pr, err := t.serviceHeader(to, f, p)
	if err != nil {
		return err
	}
	var cancel <-chan struct{}
	if ctx != nil {
		cancel = ctx.Done()
	}
	cost, err := t.serviceCredit(pr, f, len(p), cancel)
	if err != nil {
		return t.serviceErr(ctx, pr, err)
	}
	if err := pr.link.send(laneCtl, h, p, cancel); err != nil {
		if errors.Is(err, ioloop.ErrCanceled) {
			pr.out.GiveBack(cost)
		}
		return t.serviceErr(ctx, pr, err)
	}
	return nil
}

// serviceErr turns an error sending to pr into sendService's.
func (t *NetTransport) serviceErr(ctx context.Context, pr *peer, err error) error {
	if errors.Is(err, ioloop.ErrCanceled) && ctx != nil && ctx.Err() != nil {
		return ctx.Err()
	}
	return t.connErr(pr, "service", err)
}

// serviceCredit takes the credit a service frame needs (a request's; replies
// need none), waiting for it until cancel closes, and returns it. A
// request too large for the peer to hold (frame.Cost above half its
// window) costs only frame.Cost(0): the peer discards it unread and the
// service there refuses it.
func (t *NetTransport) serviceCredit(pr *peer, f plumb.ServiceFrame, n int, cancel <-chan struct{}) (uint64, error) {
	if f.Reply {
		return 0, nil
	}
	window, err := pr.window(cancel, "service")
	if err != nil {
		return 0, err
	}
	if err := requestFits(pr.rank, n, window); err != nil {
		return 0, err
	}
	cost := requestCost(uint64(n), window)
	return cost, pr.acquire(cost, cancel, "service")
}

// tryServiceCredit is serviceCredit for a frame that must not wait.
func (t *NetTransport) tryServiceCredit(pr *peer, f plumb.ServiceFrame, n int) (uint64, error) {
	if f.Reply {
		return 0, nil
	}
	window := pr.out.Window()
	if window == 0 {
		return 0, ErrNoCredit
	}
	if err := requestFits(pr.rank, n, window); err != nil {
		return 0, err
	}
	cost := requestCost(uint64(n), window)
	if !pr.out.Take(cost) {
		return 0, ErrNoCredit
	}
	return cost, nil
}

// requestFits returns a *plumb.RequestSizeError for a request of n bytes to
// rank to, whose window is window, above what that rank holds.
func requestFits(to, n int, window uint64) error {
	if max := requestMax(window); uint64(n) > max {
		return &plumb.RequestSizeError{Rank: to, Size: uint64(n), Limit: max}
	}
	return nil
}

// requestMax is the largest request payload that a rank granting
// window holds: the largest n whose frame.Cost is at most half the
// window. A larger one is discarded unread on arrival (requestCost), so an
// honest sender refuses it before sending (requestFits).
func requestMax(window uint64) uint64 {
	half := window / 2
	if half <= frame.MsgOverhead {
		return 0
	}
	return 1 << (bits.Len64(half-frame.MsgOverhead) - 1)
}

// requestMaxTo is plumb.Service.RequestMax.
func (t *NetTransport) requestMaxTo(to int) (uint64, bool) {
	if to == t.rank {
		return requestMax(uint64(t.opts.MaxQueuedBytes)), true
	}
	if to < 0 || to >= t.world {
		return 0, false
	}
	w := t.peer(to).out.Window()
	return requestMax(w), w != 0
}

// requestCost is the credit of a request of n bytes to a peer whose
// window is window: frame.Cost(n), or frame.Cost(0) for one the peer will
// discard unread because it could never hold it.
func requestCost(n, window uint64) uint64 {
	if c := frame.Cost(n); c <= window/2 {
		return c
	}
	return frame.Cost(0)
}

// postService queues one service frame for rank to and returns at once, without
// waiting for the socket: p is copied. It is how a plumb.ServiceHandler
// answers from inside HandleFrame, which must not block. Frames keep their
// order with those of sendService. A request fails with ErrNoCredit rather
// than wait for the peer's credit.
func (t *NetTransport) postService(to int, f plumb.ServiceFrame, p []byte) error {
	h, pr, err := t.serviceHeader(to, f, p)
	if err != nil {
		return err
	}
	if _, err := t.tryServiceCredit(pr, f, len(p)); err != nil {
		return err
	}
	if err := pr.link.post(laneCtl, h, p, true); err != nil {
		return t.connErr(pr, "service", err)
	}
	return nil
}

// queueService is postService that leaves the frame unwritten until flushService, or
// the next frame to rank to, writes it along with everything else queued
// for that rank: the answers to a burst of requests then take one writev
// instead of one each. The caller must make sure a flush follows.
func (t *NetTransport) queueService(to int, f plumb.ServiceFrame, p []byte) error {
	h, pr, err := t.serviceHeader(to, f, p)
	if err != nil {
		return err
	}
	if _, err := t.tryServiceCredit(pr, f, len(p)); err != nil {
		return err
	}
	if err := pr.link.queue(laneCtl, h, p); err != nil {
		return t.connErr(pr, "service", err)
	}
	return nil
}

// flushService writes what queueService left queued for rank to.
func (t *NetTransport) flushService(to int) {
	if t.checkRank(to) == nil && t.peer(to).up() {
		t.peer(to).link.flush(laneCtl)
	}
}

// spinService lets a goroutine about to wait for a reply from rank from
// read that connection itself, as a blocking receive does: it drives the
// connection until done reports true or no byte has arrived from the peer
// for Options.Spin, and reports done's last answer. Service frames read
// meanwhile are handed to the handler on this goroutine. With spinning
// disabled, or for this rank, it only asks done.
func (t *NetTransport) spinService(from int, done func() bool) bool {
	if t.checkRank(from) != nil {
		return done()
	}
	return t.spinUntil(t.peer(from), laneCtl, done)
}

// serviceHeader checks an outgoing service frame and returns its header
// and peer.
func (t *NetTransport) serviceHeader(to int, f plumb.ServiceFrame, p []byte) (frame.Header, *peer, error) {
	if err := t.checkRank(to); err != nil {
		return frame.Header{}, nil, err
	}
	if to == t.rank {
		return frame.Header{}, nil, fmt.Errorf("boltmesh: service frame to this rank (%d): %w", to, plumb.ErrSelfFrame)
	}
	if uint64(len(p)) > t.opts.MaxFrame {
		return frame.Header{}, nil, fmt.Errorf("boltmesh: service frame of %d bytes: %w (Options.MaxFrame %d)", len(p), frame.ErrTooLarge, t.opts.MaxFrame)
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

// serviceIn is what the reader of a peer's control lane notes of the
// service frame it is reading, between payload and arrive. Lock rule: only that
// reader touches it.
type serviceIn struct {
	cost uint64 // the credit of the request being read
	drop bool   // the frame being read is discarded (plumb.ServiceFrame.Dropped)
}

// servicePayload accounts a service frame's credit (a request's) and names where
// its payload goes: a pooled buffer, or nowhere for one discarded unread
// (see plumb.ServiceFrame.Dropped). It notes the outcome for deliverService.
func (p *peer) servicePayload(c *ioloop.Conn, h *frame.Header) []byte {
	req := h.Kind == frame.KindRPCReq
	p.svcIn.cost, p.svcIn.drop = 0, false
	if req {
		p.svcIn.cost = requestCost(h.Length, p.in.Window)
		if !p.useCredit(c, p.svcIn.cost) {
			return nil
		}
		p.svcIn.drop = p.svcIn.cost != frame.Cost(h.Length)
	}
	s := &p.t.svc
	s.mu.Lock()
	hd := s.h
	s.mu.Unlock()
	switch {
	case p.svcIn.drop:
	case hd == nil:
		p.svcIn.drop = !req // nobody waits for a reply
	default:
		if f, ok := hd.(plumb.ServiceFilter); ok {
			p.svcIn.drop = !f.Accept(p.rank, serviceFrame(h), h.Length)
		}
	}
	switch {
	case p.svcIn.drop && h.Length > 0:
		c.Discard()
	case h.Length == 0:
		return noPayload // no pooled buffer for nothing
	}
	return nil
}

// noPayload names where an empty payload goes: nowhere, and no buffer.
var noPayload = []byte{}

// serviceFrame is the plumb.ServiceFrame of a service frame's header.
func serviceFrame(h *frame.Header) plumb.ServiceFrame {
	return plumb.ServiceFrame{Reply: h.Kind == frame.KindRPCReply, Error: h.Flags&frame.FlagError != 0, ID: h.Offset, Tag: h.Tag, Aux: h.Aux}
}

// deliverService hands a service frame to the handler, or holds a request until
// one is installed; a reply nobody waits for is dropped.
func (p *peer) deliverService(h *frame.Header, bb *ioloop.Buffer) {
	f := serviceFrame(h)
	if p.svcIn.drop {
		f.Dropped = h.Length
		putBuffer(bb)
		bb = nil
	}
	pl := plumb.NewServicePayload(bb, (*peerCredit)(p), p.svcIn.cost)
	p.svcIn.cost, p.svcIn.drop = 0, false
	s := &p.t.svc
	s.mu.Lock()
	hd := s.h
	if hd == nil {
		if f.Reply {
			s.mu.Unlock()
			pl.Release()
			return
		}
		s.early.push(earlyFrame{from: p.rank, f: f, p: pl})
		s.mu.Unlock()
		return
	}
	s.mu.Unlock()
	hd.HandleFrame(p.rank, f, pl)
}

// servicePeerLost tells the service's handler, if any, that p is gone.
func (p *peer) servicePeerLost() {
	s := &p.t.svc
	s.mu.Lock()
	hd := s.h
	s.mu.Unlock()
	if hd != nil {
		hd.ServicePeerLost(p.rank, p.lostErr("service"))
	}
}

// onServiceHeader is the payload row of the service's kinds, RPC_REQ and
// RPC_REPLY (kinds.go).
func (p *peer) onServiceHeader(c *ioloop.Conn, _ lane, h *frame.Header) []byte {
	return p.servicePayload(c, h)
}

// onService is the arrive row of the service's kinds (kinds.go).
func (p *peer) onService(_ *ioloop.Conn, _ lane, h *frame.Header, _ []byte, bb *ioloop.Buffer) {
	p.deliverService(h, bb)
}
