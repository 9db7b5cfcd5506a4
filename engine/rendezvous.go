package engine

import (
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/boltmesh/boltmesh/frame"
	"github.com/boltmesh/boltmesh/internal/match"
	"github.com/boltmesh/boltmesh/ioloop"
)

// The rendezvous protocol (frame/spec.md, "Rendezvous"). A SEND longer
// than the eager limit (Options.EagerMax, at most a quarter of the
// receiver's window), or striped across several streams, is not sent at
// once: the sender announces it with an RTS (its tag, meta, a send id and
// its length), which the receiver matches like a message. Once a receive
// takes it, the receiver answers CTS, and the sender writes the message as
// DATA frames straight from its buffer, read at the receiver straight
// into the receive's buffer: one copy on each side, and nothing large is
// ever held for a receive that has not been posted, nor sits in a socket
// in front of the frames behind it.
//
// Send path:  sendRdv -> startRdv (RTS) ... deliverCTS -> startData
//             (DATA on each stream) ... waitRdv (the writes' completion)
// Receive:    deliverRTS -> matched to a posted receive (claimRdv, CTS)
//             or queued until recv/postChunks take it (takeRTS, CTS) ...
//             dataPayload (the receive's buffer) -> dataDone (complete)
//
// A sender whose wait ends before the CTS (its ctx) withdraws the RTS
// (RTS with Error); the receiver answers CTS with Error if the RTS was
// still queued, and ignores it if a receive had taken it, in which case
// the CTS already on its way commits the sender. Either way each RTS gets
// exactly one answer.

// rdvState is a peer's rendezvous state, in both directions.
//
// Lock rule: the peer's mu guards in, out, filling, maxRTS, copyAt and tombs; rtsMu is
// held while an RTS to the peer takes its id and is queued, never with
// mu; rts[i] belongs to the reader of lane i's stream (0: data, 1:
// control).
type rdvState struct {
	in      map[uint64]*recvReq        // receives waiting for a rendezvous message's DATA, by send id
	filling [MaxStreams]*recvReq       // the receive data lane i's reader reads a DATA piece into, if any (fill.go)
	out     map[uint64]*rdvSend        // rendezvous sends waiting for their CTS, by send id
	rts     [2][frame.RTSCopySize]byte // an RTS payload being read: on the data, on the control lane
	maxRTS  uint64                     // the highest send id of an RTS from the peer (ids grow on the wire)
	// copyAt holds, by send id, where the messages of queued RTSs with
	// Copy lie in the peer's memory (single_copy.go): beside the queue,
	// so that a queued message stays as small as before; made at first use.
	copyAt map[uint64]uint64
	rtsMu  sync.Mutex
	tombs  match.Tombs // RTSs withdrawn before they came (internal/match)
}

// incoming reports whether a rendezvous message's DATA is expected from
// the peer. The peer's mu is held.
func (r *rdvState) incoming() bool { return len(r.in) > 0 }

func (r *rdvState) init() {
	r.in, r.out = make(map[uint64]*recvReq), make(map[uint64]*rdvSend)
}

// Rendezvous send states.
const (
	rdvWaiting = iota // the RTS is out, no answer yet
	rdvWriting        // CTS came: the DATA writes are started
	rdvNone           // CTS with Error: the receiver wants no data
	rdvFailed         // the peer was lost, or a DATA write failed to start
	rdvCopied         // CTS with Copy: the receiver copied the message itself
)

// rdvSend is a rendezvous send in progress. It is recycled through a pool.
type rdvSend struct {
	id       uint64
	data     []byte
	tag, aux uint32
	state    atomic.Uint32
	err      error
	ws       [MaxStreams]ioloop.Write
	k        int           // DATA pieces started
	done     chan struct{} // buffered 1: the answer came, or the peer was lost
	rts      [frame.RTSCopySize]byte
	copy     frame.Flags // FlagCopy if the RTS offered the single copy (single_copy.go)
}

func newRdvSend() any { return &rdvSend{done: make(chan struct{}, 1)} }

func (s *rdvSend) finish(state uint32, err error) {
	s.err = err
	s.state.Store(state)
	s.done <- struct{}{}
}

func (s *rdvSend) reset() {
	s.data, s.err, s.k, s.copy = nil, nil, 0, 0
	s.ws = [MaxStreams]ioloop.Write{}
	s.state.Store(rdvWaiting)
}

// sendRdv sends data to p by rendezvous and waits until it is written.
func (t *NetTransport) sendRdv(cancel <-chan struct{}, p *peer, tag, aux uint32, data []byte, window uint64) error {
	s, err := t.startRdv(p, tag, aux, data, window, cancel)
	if err != nil {
		return err
	}
	return t.waitRdv(p, s, cancel)
}

// startRdv announces data to p with an RTS (by single copy, if it
// copies: single_copy.go). window is p's, as the caller found it.
func (t *NetTransport) startRdv(p *peer, tag, aux uint32, data []byte, window uint64, cancel <-chan struct{}) (*rdvSend, error) {
	copied := p.copies(len(data))
	credit := p.rtsCredit(len(data), window, copied)
	if err := p.acquire(credit, cancel, "send"); err != nil {
		return nil, err
	}
	s := t.pools.rdvs.Get().(*rdvSend)
	s.data, s.tag, s.aux = data, tag, aux
	payload, flags := s.encodeRTS(copied, credit)
	p.rdv.rtsMu.Lock() // the ids of a peer's RTSs grow on the wire (see withdrawRTS)
	p.mu.Lock()
	if p.lost != nil {
		err := p.errFor("send")
		p.mu.Unlock()
		p.rdv.rtsMu.Unlock()
		t.pools.rdvs.Put(s)
		return nil, err
	}
	s.id = t.pools.nextID.Add(1)
	p.rdv.out[s.id] = s
	p.mu.Unlock()
	h := frame.Header{Kind: frame.KindRTS, Flags: flags, Src: uint32(t.rank), Tag: tag, Aux: aux, Offset: s.id}
	err := p.link.post(laneData, h, payload, true)
	p.rdv.rtsMu.Unlock()
	if err != nil {
		// The connection failed: its loss completes s, if it has not yet.
		<-s.done
		s.reset()
		t.pools.rdvs.Put(s)
		return nil, t.connErr(p, "send", err)
	}
	return s, nil
}

// waitRdv waits for s's answer and then for its DATA to be written, and
// recycles s. If cancel closes before the answer, the RTS is withdrawn:
// the call returns ErrCanceled unless the receiver had already taken the
// message, in which case it is sent whole and the call returns nil, as
// once its writes have started (they then finish in the background).
func (t *NetTransport) waitRdv(p *peer, s *rdvSend, cancel <-chan struct{}) error {
	defer func() { s.reset(); t.pools.rdvs.Put(s) }()
	if t.spinUntil(p, laneCtl, func() bool { return s.state.Load() != rdvWaiting }) {
		<-s.done
		return t.rdvAnswered(p, s, false, cancel)
	}
	select {
	case <-s.done:
		return t.rdvAnswered(p, s, false, cancel)
	case <-cancel:
	}
	if s.state.Load() != rdvWaiting { // answered meanwhile: nothing to withdraw
		<-s.done
		return t.rdvAnswered(p, s, false, cancel)
	}
	h := frame.Header{Kind: frame.KindRTS, Flags: frame.FlagError, Src: uint32(t.rank), Tag: s.tag, Offset: s.id}
	on := laneData // behind the RTS: the receiver has seen it by then
	if p.link.ownCtl() && p.out.Take(frame.Cost(0)) {
		on = laneCtl // ahead of anything on the data lane: see withdrawRTS
	}
	p.link.post(on, h, s.rts[:frame.RTSSize], true) // a lost peer completes s anyway
	<-s.done
	return t.rdvAnswered(p, s, true, cancel)
}

// rdvAnswered is waitRdv once s has its answer.
func (t *NetTransport) rdvAnswered(p *peer, s *rdvSend, withdrawn bool, cancel <-chan struct{}) error {
	switch s.state.Load() {
	case rdvNone:
		if withdrawn {
			return ioloop.ErrCanceled
		}
		return nil // the receiver dropped it: its call was over there
	case rdvFailed:
		return s.err
	case rdvCopied:
		return nil // delivered, withdrawn or not
	}
	var err error
	for i := range s.k {
		if werr := s.ws[i].WaitDetach(cancel); werr != nil && err == nil {
			err = t.connErr(p, "send", werr)
		}
	}
	return err
}

// deliverCTS starts the DATA of the send a CTS answers (or ends it, for a
// CTS with Error). A CTS for no send of ours breaks the protocol.
func (p *peer) deliverCTS(c *ioloop.Conn, h *frame.Header) {
	p.mu.Lock()
	s := p.rdv.out[h.Offset]
	delete(p.rdv.out, h.Offset)
	p.mu.Unlock()
	if s == nil {
		p.violation(c, fmt.Errorf("%w: CTS for send %d, which is not waiting", ErrProtocol, h.Offset))
		return
	}
	switch {
	case h.Flags&frame.FlagError != 0:
		s.finish(rdvNone, nil)
		return
	case h.Flags&frame.FlagCopy != s.copy:
		// A neighbour that may copy answers every RTS with Copy so (or with
		// Error), and no other.
		err := fmt.Errorf("%w: CTS (flags %#x) for send %d, which offered the single copy: %v", ErrProtocol, h.Flags, h.Offset, s.copy != 0)
		p.violation(c, err)
		s.finish(rdvFailed, &PeerError{Op: "send", Rank: p.rank, Err: ErrPeerLost, Cause: err})
		return
	case s.copy != 0:
		s.finish(rdvCopied, nil)
		return
	}
	if err := p.startData(s); err != nil {
		s.finish(rdvFailed, err)
		return
	}
	s.finish(rdvWriting, nil)
}

// startData starts writing s's message as DATA: one piece per stream if
// it is striped, else one frame. Aux carries the piece's index (low 16
// bits) and the number of pieces (high 16 bits).
func (p *peer) startData(s *rdvSend) error {
	k := 1
	if p.t.striped(p, len(s.data)) {
		k = p.link.width()
	}
	for i := range k {
		lo, hi := piece(len(s.data), k, i)
		h := frame.Header{Kind: frame.KindData, Src: uint32(p.t.rank), Tag: s.tag, Aux: uint32(k)<<16 | uint32(i), Offset: s.id}
		w, err := p.link.start(lane(i), h, s.data[lo:hi])
		if err != nil {
			if i > 0 {
				p.link.abort(nil, err) // a message missing pieces would never complete
			}
			return p.t.connErr(p, "send", err)
		}
		s.ws[i] = w
		s.k = i + 1
	}
	return nil
}

// piece returns the byte range of piece i of an n-byte message cut into k.
func piece(n, k, i int) (lo, hi int) {
	return int(uint64(n) * uint64(i) / uint64(k)), int(uint64(n) * uint64(i+1) / uint64(k))
}

// deliverRTS handles an RTS from p that came on lane l of c: a
// withdrawal, or an announcement (announced).
func (p *peer) deliverRTS(c *ioloop.Conn, l lane, h *frame.Header, bb *ioloop.Buffer) {
	putBuffer(bb) // the payload is in p.rtsBuf(l)
	var n uint64
	var cp rtsCopy
	var err error
	if h.Flags&frame.FlagCopy != 0 {
		n, cp, err = p.decodeRTSCopy(p.rtsBuf(l))
	} else {
		n, err = frame.DecodeRTS(p.rtsBuf(l), p.t.opts.MaxFrame)
	}
	if err != nil {
		p.violation(c, err)
		return
	}
	if h.Flags&frame.FlagError != 0 {
		p.withdrawRTS(h.Tag, h.Offset, l == laneCtl)
		return
	}
	if cp.extra > 0 && !p.useCredit(c, cp.extra) {
		return // dropped
	}
	p.announced(c, h.Tag, h.Offset, h.Aux, n, cp)
}

// announced takes the announcement of rendezvous send id (n bytes under
// tag with aux; cp: where the peer's memory holds it, for a single
// copy): after the withdrawals it overtook are settled, it is matched to
// the first fitting posted receive for its tag (answered CTS, or copied
// at once), copied and held as an eager message, or queued.
func (p *peer) announced(c *ioloop.Conn, tag uint32, id uint64, aux uint32, n uint64, cp rtsCopy) {
	p.mu.Lock()
	if id <= p.rdv.maxRTS {
		p.mu.Unlock()
		p.violation(c, fmt.Errorf("%w: RTS with send id %d after %d (ids grow)", ErrProtocol, id, p.rdv.maxRTS))
		return
	}
	p.rdv.maxRTS = id
	stale, own := p.rdv.tombs.Arrive(id)
	if own > 0 { // withdrawn before it came: answered then
		p.mu.Unlock()
		p.freeInRead(uint64(stale+own+1)*frame.Cost(0) + cp.extra) // the withdrawals' and the RTS's
		return
	}
	if stale > 0 { // withdrawals of RTSs that never came: once p.mu is released
		defer p.freeInRead(uint64(stale) * frame.Cost(0))
	}
	if p.unwanted(tag) {
		p.mu.Unlock()
		p.freeInRead(cp.extra)
		p.answerRTS(id, false, true) // its owner no longer wants it: see lend.go
		return
	}
	q := p.m.Queue(tag)
	if r := p.m.offer(q, int(n)); r != nil {
		if cp.addr != 0 {
			p.claimBuf(r, n, aux)
			p.m.Tidy(tag, q)
			p.mu.Unlock()
			p.copyInto(c, r, id, cp)
			return
		}
		p.claimRdv(r, id, n, aux)
		p.m.Tidy(tag, q)
		p.mu.Unlock()
		p.answerRTS(id, true, true)
		return
	}
	if cp.extra > 0 { // to copy at once, and hold as an eager message
		p.mu.Unlock()
		p.copyHeld(c, tag, aux, id, n, cp)
		return
	}
	if isOwnedTag(tag) {
		p.ownedQueued(tag, aux)
	}
	if cp.addr != 0 {
		p.rdv.queueCopy(id, cp.addr)
	}
	p.m.Hold(q, match.Msg{Aux: aux, ID: id, N: n})
	p.mu.Unlock()
}

// rtsBuf returns the buffer an RTS payload arriving on lane l is read
// into: one per lane that may carry RTSs, since each has its own reader.
// Its length is the longest payload's (RTSCopySize): the header, checked
// before, says how much of it a frame fills.
func (p *peer) rtsBuf(l lane) []byte {
	if l == laneCtl {
		return p.rdv.rts[1][:]
	}
	return p.rdv.rts[0][:]
}

// claimRdv makes r the receive of rendezvous message id of n bytes: its
// DATA goes into r's buffer, and r can no longer be withdrawn. p.mu is
// held.
func (p *peer) claimRdv(r *recvReq, id, n uint64, aux uint32) {
	p.claimBuf(r, n, aux)
	r.rdv = rdvPieces{id: id, left: int(n)}
	p.rdv.in[id] = r
}

// claimBuf makes r the receive of a rendezvous message of n bytes: it
// can no longer be withdrawn, and its buffer is cut to the message (or
// made). p.mu is held.
func (p *peer) claimBuf(r *recvReq, n uint64, aux uint32) {
	r.state.Or(reqClaimed) // from reqPosted, keeping reqSpun
	r.aux = aux
	if r.into {
		r.dst = r.dst[:n]
	} else {
		r.data = make([]byte, n)
		r.dst = r.data
	}
}

// answerRTS releases an RTS's credit and answers it: CTS (send the data)
// or CTS with Error (send nothing); inRead: from a read upcall.
func (p *peer) answerRTS(id uint64, send, inRead bool) {
	if inRead {
		p.freeInRead(frame.Cost(0))
	} else {
		p.freeCredit(frame.Cost(0))
	}
	p.sendCTS(id, send)
}

// sendCTS sends the answer to RTS id.
func (p *peer) sendCTS(id uint64, send bool) {
	h := frame.Header{Kind: frame.KindCTS, Src: uint32(p.t.rank), Offset: id}
	if !send {
		h.Flags = frame.FlagError
	}
	p.link.post(laneCtl, h, nil, false) // a lost peer needs no answer
}

// takeRTS hands r the queued RTS m: it is popped from q, r is claimed for
// it, and its sender told to send. p.mu is held and released.
func (p *peer) takeRTS(q *match.Queue[*recvReq], tag uint32, m match.Msg, r *recvReq) {
	p.m.TakeHead(q)
	if addr := p.rdv.takeCopy(m.ID); addr != 0 {
		p.claimBuf(r, m.N, m.Aux)
		p.m.Tidy(tag, q)
		p.mu.Unlock()
		p.copyInto(nil, r, m.ID, rtsCopy{addr: addr})
		return
	}
	p.claimRdv(r, m.ID, m.N, m.Aux)
	p.m.Tidy(tag, q)
	resume := p.m.Undefer() // its DATA may be behind a deferred payload
	p.mu.Unlock()
	p.answerRTS(m.ID, true, false)
	if resume {
		p.link.resume()
	}
}

// withdrawRTS handles the withdrawal of RTS id of tag by its sender. An
// RTS still queued is dropped, and its sender told to send nothing; one
// that a receive took already is not (the CTS sent then commits the
// sender). A withdrawal on the data stream comes behind its RTS. One on
// the control stream (credited, and never waiting behind anything) may
// come first: then it is answered at once, and a tombstone (holding the
// withdrawal's credit) drops the RTS when it comes.
func (p *peer) withdrawRTS(tag uint32, id uint64, credited bool) {
	p.mu.Lock()
	found := p.m.RemoveRTS(tag, id)
	if found {
		p.rdv.takeCopy(id)
	}
	_, taken := p.rdv.in[id]
	tomb := !found && !taken && credited && id > p.rdv.maxRTS
	if tomb {
		p.rdv.tombs.Add(id)
	}
	p.mu.Unlock()
	switch {
	case found:
		p.answerRTS(id, false, true)
	case tomb:
		p.sendCTS(id, false)
		return // the tombstone holds the withdrawal's credit
	}
	if credited {
		p.freeInRead(frame.Cost(0))
	}
}

// dataPayload names where a DATA piece that came on lane l goes: its
// place in the buffer of the receive that took the message, which the
// piece then fills (p.rdv.filling[l]). Anything else breaks the protocol,
// but DATA from a peer already lost, which is dropped.
func (p *peer) dataPayload(c *ioloop.Conn, l lane, h *frame.Header) []byte {
	k, i := int(h.Aux>>16), int(h.Aux&0xffff)
	width := p.link.width() // before p.mu: it asks the link
	p.mu.Lock()
	if p.lost != nil {
		p.mu.Unlock()
		c.Discard()
		return nil
	}
	r := p.rdv.in[h.Offset]
	var dst []byte
	ok := false
	if r != nil && uint32(r.tag) == h.Tag && k >= 1 && i < k && (k == 1 || k == width) && (r.rdv.pieces == 0 || r.rdv.pieces == k) && r.rdv.seen&(1<<i) == 0 {
		if lo, hi := piece(len(r.dst), k, i); uint64(hi-lo) == h.Length {
			r.rdv.pieces, r.rdv.seen = k, r.rdv.seen|1<<i
			r.rdv.reading++
			p.rdv.filling[l] = r
			dst, ok = r.dst[lo:hi], true
		}
	}
	p.mu.Unlock()
	if !ok {
		p.violation(c, fmt.Errorf("%w: DATA for send %d (tag %d, piece %d of %d, %d bytes) that no receive took", ErrProtocol, h.Offset, h.Tag, i, k, h.Length))
		c.Discard()
	}
	return dst
}

// dataDone accounts a DATA piece read on lane l into its receive's
// buffer and completes the receive once every piece is in, or, if the
// peer was lost or a piece's stream broke meanwhile, once no other piece
// is being read into it (fill.go).
func (p *peer) dataDone(l lane, h *frame.Header) {
	p.mu.Lock()
	r := p.rdv.filling[l]
	if r == nil { // discarded: from a peer already lost
		p.mu.Unlock()
		return
	}
	p.rdv.filling[l] = nil
	r.rdv.reading--
	r.rdv.left -= int(h.Length)
	var err error
	done := r.rdv.left == 0
	if done {
		r.n = len(r.dst)
	} else if r.rdv.reading == 0 && (r.rdv.broken != nil || p.lost != nil) {
		done, err = true, p.readErr(r.rdv.broken)
	}
	if done {
		delete(p.rdv.in, r.rdv.id)
	}
	p.mu.Unlock()
	if done {
		r.complete(err)
	}
}

// failRdv fails the rendezvous in progress with p: receives waiting for
// DATA (but those a piece is being read into, which the read's end
// completes: fill.go) and sends waiting for an answer. p.mu is held.
func (p *peer) failRdv() {
	for id, r := range p.rdv.in {
		if r.rdv.reading == 0 {
			delete(p.rdv.in, id)
			r.complete(p.errFor("recv"))
		}
	}
	for id, s := range p.rdv.out {
		delete(p.rdv.out, id)
		s.finish(rdvFailed, p.errFor("send"))
	}
	p.rdv.tombs = match.Tombs{}
}

// violation drops p, which broke the protocol with err on c.
func (p *peer) violation(c *ioloop.Conn, err error) {
	p.drop(c, err)
}

// drop drops p, which sent something it must not on c (err says what; the
// loss logs it, once): every stream of it at once, not just c, so that none of them
// serves it after (the control stream ending alone does not lose a peer
// that said GOODBYE: its data stream would stay open). Called from the
// handler's Payload, it refuses the frame on its header: nothing more is
// read from c, and no buffer is taken for the payload announced
// (ioloop.Handler). A star worker's stream to another worker is its one
// connection to the coordinator, which it keeps: the peer alone is lost,
// and what comes from it after is dropped unread (routeLink.refuse).
func (p *peer) drop(c *ioloop.Conn, err error) {
	if l, ok := p.link.(*routeLink); ok {
		l.refuse(p, err)
		return
	}
	c.Abort(err)
	if p.link != nil {
		p.link.abort(c, err)
	}
}

// onRTSHeader is RTS's payload row (kinds.go): its credit used (a
// withdrawal's on the control lane only, see withdrawRTS), read into the
// lane's RTS buffer (at most RTSCopySize: checked with the header).
func (p *peer) onRTSHeader(c *ioloop.Conn, l lane, h *frame.Header) []byte {
	credited := h.Flags&frame.FlagError == 0 || l == laneCtl
	if credited && !p.useCredit(c, frame.Cost(0)) {
		return nil
	}
	return p.rtsBuf(l)[:h.Length]
}

// onRTS is RTS's arrive row (kinds.go).
func (p *peer) onRTS(c *ioloop.Conn, l lane, h *frame.Header, _ []byte, bb *ioloop.Buffer) {
	p.deliverRTS(c, l, h, bb)
}

// onCTS is CTS's arrive row (kinds.go).
func (p *peer) onCTS(c *ioloop.Conn, _ lane, h *frame.Header, _ []byte, bb *ioloop.Buffer) {
	putBuffer(bb)
	p.deliverCTS(c, h)
}

// onData is DATA's arrive row (kinds.go): the piece read (dataPayload).
func (p *peer) onData(_ *ioloop.Conn, l lane, h *frame.Header, _ []byte, bb *ioloop.Buffer) {
	putBuffer(bb)
	p.dataDone(l, h)
}
