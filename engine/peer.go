package engine

import (
	"sync"
	"sync/atomic"

	"github.com/boltmesh/boltmesh/internal/credit"

	"github.com/boltmesh/boltmesh/internal/lograte"
	"github.com/boltmesh/boltmesh/internal/spin"
	"github.com/boltmesh/boltmesh/ioloop"
)

// peer is this rank's view of one other rank (or of itself, with no
// link), made of components, each with its state, its lock rule and its
// file:
//
//	link   link.go, link_*.go  moves the peer's frames; hands arrivals to payload and arrive
//	m      match.go            posted receives and queued messages, FIFO per tag
//	rdv    rendezvous.go       large messages announced (RTS), answered (CTS), sent (DATA)
//	one    peer_heap.go        one-sided operations: gets by id, the put fence
//	in/out credit.go           flow-control credit granted to the peer, and by it
//	svcIn  service.go          the service frame being read
//	bye    goodbye.go          the peer's orderly close
//	warns  internal/lograte    the warnings it causes over and over, rate-limited
//
// Lock rule: mu guards m, rdv, one (but for its atomics), lost and
// windowOpen: the matcher, rendezvous and one-sided state move
// together (a posted receive may be waiting for a rendezvous, or for a
// deferred payload), so they share it. Whoever completes a request does so
// after taking it out of them under mu. mu is never held while calling
// into the link, but for Defer and Discard from inside payload: a send
// that fails calls the handlers, which take mu. The credit has its own
// locks, and so does warns; svcIn belongs to the reader of the link's
// control lane; bye and the atomics need none.
type peer struct {
	t    *NetTransport
	rank int
	link link // nil for this rank itself

	mu   sync.Mutex
	m    matcher
	rdv  rdvState
	one  oneSided
	lost *PeerError // why the peer is gone, once it is

	in       credit.In     // the credit granted to the peer
	out      credit.Out    // the credit the peer granted this rank
	grantDue atomic.Uint64 // a grant total a read upcall recorded, for the drain's end (credit.go)
	svcIn    serviceIn
	bye      farewell
	spin     spin.Gauge                   // how long waits on the peer spin (internal/spin)
	caps     atomic.Pointer[caps]         // what its link can do besides carry frames (medium.go)
	copy     copyState                    // the single copy's count (single_copy.go)
	seal     atomic.Uint32                // the sealed.Cipher its links are sealed with, 0: none (seal.go)
	told     atomic.Pointer[DroppedError] // its last word, once read (lastword.go)
	warns    lograte.Repeat

	windowOpen bool          // the first CREDIT went out
	released   chan struct{} // closed when the link is released
}

func newPeer(t *NetTransport, rank int) *peer {
	p := &peer{t: t, rank: rank, released: make(chan struct{})}
	p.m.Init()
	p.rdv.init()
	p.one.init()
	p.bye.init()
	p.in.Window = uint64(t.opts.MaxQueuedBytes)
	p.out.Init()
	return p
}

// putBuffer returns bb to the pool, if there is one.
func putBuffer(bb *ioloop.Buffer) {
	if bb != nil {
		ioloop.PutBuffer(bb)
	}
}

// closed is the end of p's link, which reports it: the peer is lost (or
// the transport closed), and every receive waiting on it fails. A peer that said GOODBYE
// first closed in order: operations with it fail, but operations that
// need every rank (barriers) are not aborted, since the peer finished its
// part of them before closing.
func (p *peer) closed(err error) {

	defer close(p.released)
	if p.link != nil {
		p.link.close()
	}
	p.lose(err)
}

// lose fails every operation with p: the connection to it broke with err
// or, in a star, the coordinator reported it gone. It may run more than
// once; the first cause stays. A peer lost other than by an orderly close
// (its GOODBYE) or this rank's own is logged once, with that cause: a
// crash, silence, tampering, a breach of the protocol.
func (p *peer) lose(err error) {
	defer p.t.announceGone(p)
	defer p.servicePeerLost()
	defer p.byeAnswer()
	switch {
	case p.t.closed.Load():
		p.fail(ErrClosed, nil)
	case p.bye.closing():
		// Noted first, so that the errors of the receives failed next name
		// the loss its GOODBYE reported (view.go).
		done, coll, lost := p.bye.told()
		p.t.noteClosed(p.rank, done, coll, lost)
		p.fail(ErrPeerLost, ErrPeerClosed)
	default:
		if p.t.noteLoss(p.rank, err) { // first, as noteClosed above
			p.t.opts.Logger.Warn("boltmesh: lost a peer", "rank", p.t.rank, "peer", p.rank, "cause", err)
		}
		p.fail(ErrPeerLost, err)
	}
}

// fail marks the peer gone and fails the claimed and every posted receive.
// Messages that arrived whole stay receivable.
func (p *peer) fail(sentinel, cause error) {
	p.mu.Lock()
	if p.lost == nil {
		p.lost = &PeerError{Rank: p.rank, Err: sentinel, Cause: cause}
	}
	p.out.Fail()
	p.failRecvs()
	p.failRdv()
	p.failGets()
	p.mu.Unlock()
	if h := testHookFailed.Load(); h != nil {
		(*h)(p.t, p.rank)
	}
}

// testHookFailed, when set by a test, runs as fail ends: the transport
// and the rank of the peer it failed.
var testHookFailed atomic.Pointer[func(t *NetTransport, rank int)]

// errFor returns the peer's loss as an error of operation op; p.lost must
// be set and p.mu held (or the peer known to be lost).
func (p *peer) errFor(op string) error {
	e := *p.lost
	e.Op = op
	return &e
}

// lostErr returns the peer's loss as an error of op, or nil.
func (p *peer) lostErr(op string) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.lost == nil {
		return nil
	}
	return p.errFor(op)
}

// peer returns rank r's peer, r a checked rank (checkRank), from the
// current view (view.go).
func (t *NetTransport) peer(r int) *peer { return t.members.Load().Peers[r] }

// checkRank checks a rank an operation names.
func (t *NetTransport) checkRank(r int) error {
	if r < 0 || r >= t.world {
		return &UnknownRankError{Rank: r, NumRanks: t.world}
	}
	return nil
}

// checkTag checks a tag a user names: below TagReservedBase.
func checkTag(tag int) error {
	if tag < 0 || tag >= TagReservedBase {
		return ErrReservedTag
	}
	return nil
}

// up reports whether p is joined by a link whose data stream is up: not
// this rank itself, and not a peer still forming.
func (p *peer) up() bool { return p.link != nil && p.link.up() }

// can returns p's caps.
func (p *peer) can() *caps {
	if c := p.caps.Load(); c != nil {
		return c
	}
	return noCaps
}

// setCaps publishes p's caps, once, as its link is adopted.
func (p *peer) setCaps(c *caps) { p.caps.Store(c) }
