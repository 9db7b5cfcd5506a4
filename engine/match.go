package engine

import (
	"sync/atomic"

	"github.com/boltmesh/boltmesh/frame"
	"github.com/boltmesh/boltmesh/ioloop"
)

// matcher is a peer's matching state: for each tag, the messages from
// the peer that arrived before anybody asked for them and the receives
// posted before their message arrived, each in order, so that messages
// from one source under one tag are received in the order they were sent.
// The credit a queued message holds is released as a receive takes it
// (credit.go): the peer's flow-control window bounds what it can queue.
//
// Lock rule: the peer's mu guards every field but charged (an atomic):
// matcher methods are called with it held.
type matcher struct {
	tags  map[uint32]*tagQueue
	most  int          // the most tags held since tags was made (shrink)
	held  atomic.Int32 // the queues of tags in use, for a look without the peer's lock (dropUnwanted)
	freeQ []*tagQueue  // emptied queues, for reuse
	// parked is the last tag's queue emptied, left in tags (under
	// parkedTag) so that a tag used message after message (a ping-pong,
	// a loop of allreduces) costs no map insert and delete per message;
	// it is not in use, and held does not count it. nil: none.
	parked    *tagQueue
	parkedTag uint32
	claimed   *recvReq    // receive whose buffer an eager payload is being read into
	freed     bool        // claimed's credit was used and released at once (sendPayload)
	posted    int         // receives posted in the tags' recvs queues
	deferred  bool        // a payload on data stream 0 waits in the socket for a receive
	charged   atomic.Bool // the deferred SEND's credit is used (data stream 0's reader's)
	// waiting are the queues holding posted receives, so that what must
	// look at every waiting receive (failWaiting) need not look at every
	// tag: a peer that runs calls ahead of this rank may have a message
	// queued on each of many thousands of tags.
	waiting []*tagQueue
}

// match matches receive r from p with what has arrived, and reports
// whether r is now the transport's, posted or claimed, to complete later:
//
//	an eager message queued for r's tag  -> taken into r, its credit released (posted false)
//	an RTS queued for it                 -> r claimed for its DATA, the CTS sent (takeRTS)
//	nothing, the peer lost               -> its loss as an error of op
//	nothing, try                         -> errNotQueued
//	nothing, owned and the owner refuses -> its error (ownedPosting)
//	nothing                              -> r posted, and p's link read again if a
//	                                        deferred payload may be what r waits for
//
// A queued message longer than r's buffer fails r with a *TruncatedError
// and stays queued. r's own outcome (err, n, data, aux) is set when match
// returns with posted false and a nil error.
func (p *peer) match(r *recvReq, try, owned bool, op string) (posted bool, err error) {
	tag := uint32(r.tag)
	p.mu.Lock()
	q := p.m.queue(tag)
	if m, ok := q.msgs.peek(); ok {
		if r.into && m.size() > len(r.dst) {
			p.mu.Unlock()
			return false, r.truncated(m.size())
		}
		if m.bb == nil {
			p.takeRTS(q, tag, m, r) // unlocks
			return true, nil
		}
		p.m.takeHead(q)
		p.m.tidy(tag, q)
		p.mu.Unlock()
		p.freeCredit(m.cost())
		r.fill(m.bb, m.aux)
		return false, nil
	}
	switch {
	case p.lost != nil:
		err = p.errFor(op)
	case try:
		err = errNotQueued
	case owned:
		err = p.ownedPosting(tag, r.meta)
	}
	if err != nil {
		p.m.tidy(tag, q)
		p.mu.Unlock()
		return false, err
	}
	resume := p.m.postRecv(q, r)
	p.mu.Unlock()
	if resume {
		p.link.resume()
	}
	return true, nil
}

func (m *matcher) init() { m.tags = make(map[uint32]*tagQueue) }

// tagQueue holds, for one (source, tag), either messages that arrived before
// anybody asked for them or receives posted before their message arrived.
type tagQueue struct {
	msgs  fifo[queuedMsg]
	recvs fifo[*recvReq]
	tag   uint32 // the tag it holds, while in tags
}

// queuedMsg is a message that arrived before its receive: an eager one's
// payload, or a rendezvous one's announcement (RTS), and its header's Aux
// (the owned range's meta).
type queuedMsg struct {
	bb  *ioloop.Buffer // an eager message's payload; nil for an RTS
	aux uint32
	id  uint64 // RTS: the send id
	n   uint64 // RTS: the message's length (with Copy: rdvState.copyAt)
}

// size returns the message's length.
func (m queuedMsg) size() int {
	if m.bb != nil {
		return len(m.bb.B)
	}
	return int(m.n)
}

// cost returns the flow-control credit the message holds.
func (m queuedMsg) cost() uint64 {
	if m.bb != nil {
		return frame.Cost(uint64(len(m.bb.B)))
	}
	return frame.Cost(0)
}

// queue returns tag's queue, in use from now until tidy finds it empty.
func (m *matcher) queue(tag uint32) *tagQueue {
	q := m.tags[tag]
	switch {
	case q == nil:
		if n := len(m.freeQ); n > 0 {
			q, m.freeQ = m.freeQ[n-1], m.freeQ[:n-1]
		} else {
			q = &tagQueue{}
		}
		q.tag = tag
		m.tags[tag] = q
		m.most = max(m.most, len(m.tags))
		m.held.Add(1)
	case q == m.parked:
		m.parked = nil
		m.held.Add(1)
	}
	return q
}

// postRecv queues r for tag's next message, and reports whether the data
// stream must be read again: what r waits for may be behind a deferred
// payload.
func (m *matcher) postRecv(q *tagQueue, r *recvReq) bool {
	if q.recvs.len() == 0 {
		m.waiting = append(m.waiting, q)
	}
	q.recvs.push(r)
	m.posted++
	return m.undefer()
}

// popRecv takes the first receive posted in q.
func (m *matcher) popRecv(q *tagQueue) (*recvReq, bool) {
	r, ok := q.recvs.pop()
	if ok {
		m.posted--
		m.unwait(q)
	}
	return r, ok
}

// removeRecv takes r back from q, if it is there.
func (m *matcher) removeRecv(q *tagQueue, r *recvReq) bool {
	if !q.recvs.remove(r) {
		return false
	}
	m.posted--
	m.unwait(q)
	return true
}

// unwait takes q out of waiting once it holds no receive.
func (m *matcher) unwait(q *tagQueue) {
	if q.recvs.len() != 0 {
		return
	}
	for i, w := range m.waiting {
		if w == q {
			last := len(m.waiting) - 1
			m.waiting[i], m.waiting[last] = m.waiting[last], nil
			m.waiting = m.waiting[:last]
			return
		}
	}
}

// tidy takes tag's queue out of use once it holds nothing: it parks it,
// and drops the queue parked before, keeping it for reuse, so that tags
// used once (collectives take fresh tags per call) neither pile up nor
// cost an allocation each; a queue kept for reuse keeps at most a little
// storage.
func (m *matcher) tidy(tag uint32, q *tagQueue) {
	if q.msgs.len() != 0 || q.recvs.len() != 0 || q == m.parked {
		return
	}
	m.held.Add(-1)
	if m.parked != nil {
		delete(m.tags, m.parkedTag)
		m.recycle(m.parked)
		m.shrink()
	}
	m.parked, m.parkedTag = q, tag
}

// shrinkFrom is the most tags from which the map of tags is made anew
// once it holds a sixteenth of that: a Go map never gives back the room
// it grew to, so a peer that once queued a message on each of many tags
// (a flood on distinct tags, up to its window's worth: 260,000 at the
// default) would otherwise leave this rank holding that room (about 10
// MiB) for good.
const shrinkFrom = 4096

// shrink makes the map of tags anew, with what it holds, once it holds a
// sixteenth of the most it held: each copy costs a sixteenth of the
// deletions since the last, so tags in use still cost no allocation in
// a steady state.
func (m *matcher) shrink() {
	if m.most < shrinkFrom || len(m.tags) > m.most/16 {
		return
	}
	tags := make(map[uint32]*tagQueue, len(m.tags))
	for tag, q := range m.tags {
		tags[tag] = q
	}
	m.tags, m.most = tags, len(tags)
}

// recycle keeps q, emptied and out of tags, for reuse.
func (m *matcher) recycle(q *tagQueue) {
	if len(m.freeQ) < 64 {
		q.msgs.trim(64)
		q.recvs.trim(64)
		m.freeQ = append(m.freeQ, q)
	}
}

// Deferred payloads. Where the control lane is a stream of its own (a
// full mesh, see meshLink), nothing on data stream 0 can be needed by
// anything but a receive: a large eager SEND that arrives before its
// receive may then stay in the socket until a receive from its sender is
// posted (ioloop.Conn.Defer), to be read straight into that receive's
// buffer instead of being read ahead into a pooled buffer and copied.

// deferMin is the payload size from which a SEND that no receive waits
// for is left in the data stream's socket until a receive from its
// sender is posted.
const deferMin = 32 << 10

// deferrable reports whether the eager SEND h on c, lane l of p's link,
// may wait in the socket for its receive: it is large, but not so large
// that the sender could not finish writing it while it waits
// (ioloop.Conn.DeferLimit: between neighbours, half the ring), on the
// data lane of a link whose control lane is a stream of its own. It asks
// the link, so p.mu must not be held.
func (p *peer) deferrable(c *ioloop.Conn, l lane, h *frame.Header) bool {
	return h.Length >= deferMin && l == laneData && h.Length <= c.DeferLimit() && p.link.ownCtl()
}

// maybeDefer defers a deferrable SEND (see deferrable) on c if nothing
// can want it or what is behind it yet: no receive from p is posted and
// no rendezvous message from p is coming in. p.mu is held.
func (p *peer) maybeDefer(c *ioloop.Conn, deferrable bool) {
	if !deferrable || p.m.posted > 0 || p.rdv.incoming() {
		return
	}
	p.m.deferred = true
	p.m.charged.Store(true)
	c.Defer()
}

// chargedDeferred reports whether the SEND whose payload the data stream's
// reader asks for again is the one it deferred, whose credit was used.
func (m *matcher) chargedDeferred() bool {
	return m.charged.Load() && m.charged.CompareAndSwap(true, false) // only data stream 0 defers
}

// undefer reports whether the data stream must be read again because a
// receive from p was posted (or a rendezvous message's DATA is expected):
// what it waits for may be behind the deferred payload.
func (m *matcher) undefer() bool {
	was := m.deferred
	m.deferred = false
	return was
}

// sendPayload names where an eager SEND's payload goes: the first posted
// receive for its tag if it fits, else a pooled buffer (nil), unless it
// may wait in the socket for its receive (maybeDefer). It first uses cost
// of p's credit (none: the SEND's was used already) and drops p if it had
// not that much; a payload read straight into a receive has its credit
// released with the same lock (completeClaimed then releases none), a
// lock and an unlock fewer per message.
func (p *peer) sendPayload(c *ioloop.Conn, l lane, h *frame.Header, cost uint64) []byte {
	deferrable := p.deferrable(c, l, h) // before p.mu: it asks the link
	p.mu.Lock()
	q := p.m.tags[h.Tag]
	var r *recvReq
	if q != nil && q.msgs.len() == 0 {
		r, _ = q.recvs.peek()
	}
	claim := r != nil && h.Length > 0 && r.fits(int(h.Length))
	var grant uint64
	if cost > 0 {
		var err error
		if grant, err = p.in.Use(cost, claim); err != nil {
			p.mu.Unlock()
			p.noCredit(c, err)
			return nil
		}
	}
	var dst []byte
	switch {
	case r == nil:
		p.maybeDefer(c, deferrable)
	case claim:
		p.m.popRecv(q)
		p.m.tidy(h.Tag, q)
		r.state.Or(reqClaimed) // from reqPosted, keeping reqSpun
		r.aux = h.Aux
		p.m.claimed, p.m.freed = r, cost > 0
		if r.into {
			r.dst = r.dst[:h.Length]
			dst = r.dst
		} else {
			r.data = make([]byte, h.Length)
			dst = r.data
		}
	}
	// Otherwise nothing to read, or Deliver reports the truncation.
	p.mu.Unlock()
	p.sendGrant(grant)
	return dst
}

// completeClaimed completes the receive an eager payload of n bytes was
// read into, also if the peer was lost meanwhile: the message came whole.
func (p *peer) completeClaimed(n int) {
	p.mu.Lock()
	r, freed := p.m.claimed, p.m.freed
	p.m.claimed, p.m.freed = nil, false
	p.mu.Unlock()
	if !freed {
		p.freeCredit(frame.Cost(uint64(n)))
	}
	if r != nil { // (only the stream's end, readEnded, takes it otherwise)
		r.n = n
		r.complete(nil)
	}
}

// deliverSend matches an eager message held in bb with the first fitting
// posted receive, or queues it. Receives it does not fit fail with a
// *TruncatedError, leaving the message for later ones. The message's
// credit is released once a receive takes it. From this rank itself
// (sendSelf) nothing is credited.
func (p *peer) deliverSend(tag, aux uint32, bb *ioloop.Buffer) {
	cost := frame.Cost(uint64(len(bb.B)))
	p.mu.Lock()
	if p.unwanted(tag) {
		p.mu.Unlock()
		ioloop.PutBuffer(bb) // its owner no longer wants it: see owner.go
		p.freeCredit(cost)
		return
	}
	q := p.m.queue(tag)
	if r := p.m.offer(q, len(bb.B)); r != nil {
		p.m.tidy(tag, q)
		p.mu.Unlock()
		p.freeCredit(cost)
		r.take(bb, aux)
		return
	}
	if isOwnedTag(tag) {
		p.ownedQueued(tag, aux)
	}
	p.m.hold(q, queuedMsg{bb: bb, aux: aux})
	p.mu.Unlock()
}

// failRecvs fails every posted receive with the peer's loss; messages
// that arrived whole stay receivable. The claimed receive is left to the
// end of the read into its buffer (fill.go). p.mu is held and p.lost set.
func (p *peer) failRecvs() {
	for tag, q := range p.m.tags {
		for {
			r, ok := p.m.popRecv(q)
			if !ok {
				break
			}
			r.complete(p.errFor("recv"))
		}
		p.m.tidy(tag, q)
	}
}

// withdraw takes back r, posted for its tag, if it is still waiting
// there (not claimed by a payload being read in), and reports whether it
// did.
func (m *matcher) withdraw(r *recvReq) bool {
	tag := uint32(r.tag)
	q := m.tags[tag]
	if r.state.Load()&^reqSpun != reqPosted || q == nil || !m.removeRecv(q, r) {
		return false
	}
	m.tidy(tag, q)
	return true
}

// offer hands a message of n bytes that arrived for q's tag to the first
// posted receive it fits, and returns it (popped), or nil: receives it
// does not fit fail with a *TruncatedError, and the message is for later
// ones.
func (m *matcher) offer(q *tagQueue, n int) *recvReq {
	for {
		r, ok := m.popRecv(q)
		if !ok {
			return nil
		}
		if r.fits(n) {
			return r
		}
		r.complete(r.truncated(n))
	}
}

// empty reports whether no tag has anything queued or posted.
func (m *matcher) empty() bool { return m.held.Load() == 0 }

// hold queues msg on q, for a later receive.
func (m *matcher) hold(q *tagQueue, msg queuedMsg) { q.msgs.push(msg) }

// takeHead pops the first message queued on q, which the caller peeked.
func (m *matcher) takeHead(q *tagQueue) { q.msgs.pop() }

// removeRTS takes the queued announcement of rendezvous send id off tag's
// queue, and reports whether it was there.
func (m *matcher) removeRTS(tag uint32, id uint64) bool {
	q := m.tags[tag]
	if q == nil {
		return false
	}
	_, found := q.msgs.removeFunc(func(msg queuedMsg) bool { return msg.bb == nil && msg.id == id })
	m.tidy(tag, q)
	return found
}

// failWaiting fails receives waiting on the tags in (in no order of the
// tags, in posting order per tag): for each tag, errFor is asked of its
// receives from the first, which fail with the error it returns, until it
// returns nil or one is not on the owned range.
func (m *matcher) failWaiting(in func(u uint32) bool, errFor func(u uint32, r *recvReq) error) {
	// From the last: a queue emptied here leaves waiting by a swap with
	// the last, one already looked at.
	for i := len(m.waiting) - 1; i >= 0; i-- {
		q := m.waiting[i]
		u := q.tag
		if !in(u) {
			continue
		}
		for {
			r, ok := q.recvs.peek()
			if !ok || !r.owned {
				break
			}
			err := errFor(u, r)
			if err == nil {
				break
			}
			m.popRecv(q)
			r.complete(err)
		}
		m.tidy(u, q)
	}
}

// firstQueued calls each with the tag and Aux of the first message queued
// on every tag in in, until it returns an error, which it returns.
func (m *matcher) firstQueued(in func(u uint32) bool, each func(u, aux uint32) error) error {
	for u, q := range m.tags {
		if !in(u) {
			continue
		}
		if msg, ok := q.msgs.peek(); ok {
			if err := each(u, msg.aux); err != nil {
				return err
			}
		}
	}
	return nil
}

// dropQueued takes every message queued on the n tags from first that
// are in off its queue and hands it to each (which owns an eager one's
// buffer). It looks up the n tags, or looks through the tags in use,
// whichever are fewer.
func (m *matcher) dropQueued(first, n uint32, in func(u uint32) bool, each func(msg queuedMsg)) {
	drop := func(u uint32, q *tagQueue) {
		if !in(u) {
			return
		}
		for {
			msg, ok := q.msgs.pop()
			if !ok {
				break
			}
			each(msg)
		}
		m.tidy(u, q)
	}
	if uint64(len(m.tags)) <= uint64(n) {
		for u, q := range m.tags {
			if u-first < n {
				drop(u, q)
			}
		}
		return
	}
	for i := range n {
		if q := m.tags[first+i]; q != nil {
			drop(first+i, q)
		}
	}
}

// onSendHeader is SEND's payload row (kinds.go): its credit used, unless
// it was used when the payload was deferred, and where it goes.
func (p *peer) onSendHeader(c *ioloop.Conn, l lane, h *frame.Header) []byte {
	cost := frame.Cost(h.Length)
	if p.m.chargedDeferred() {
		cost = 0 // used when the payload was deferred
	}
	return p.sendPayload(c, l, h, cost)
}

// onSend is SEND's arrive row (kinds.go): a receive whose buffer it was
// read into completes, or it is held for one.
func (p *peer) onSend(_ *ioloop.Conn, _ lane, h *frame.Header, payload []byte, bb *ioloop.Buffer) {
	if bb == nil {
		p.completeClaimed(len(payload))
		return
	}
	p.deliverSend(h.Tag, h.Aux, bb)
}
