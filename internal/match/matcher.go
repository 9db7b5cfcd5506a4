package match

import (
	"iter"
	"sync/atomic"

	"github.com/boltmesh/boltmesh/frame"
	"github.com/boltmesh/boltmesh/ioloop"
)

// Matcher is one peer's matching state: for each tag, the messages from
// the peer that arrived before anybody asked for them and the receives
// (of type R) posted before their message arrived, each in order. Its
// zero value must be Init'ed.
//
// Lock rule: the owner's lock (the engine's peer.mu) guards every field
// but the two read without it: Held (an atomic) and the deferred SEND's
// charge (ChargedDeferred, an atomic).
type Matcher[R comparable] struct {
	tags  map[uint32]*Queue[R]
	most  int          // the most tags held since tags was made (shrink)
	held  atomic.Int32 // the queues of tags in use, for a look without the owner's lock
	freeQ []*Queue[R]  // emptied queues, for reuse
	// parked is the last tag's queue emptied, left in tags (under
	// parkedTag) so that a tag used message after message (a ping-pong,
	// a loop of allreduces) costs no map insert and delete per message;
	// it is not in use, and held does not count it. nil: none.
	parked    *Queue[R]
	parkedTag uint32
	posted    int         // receives posted in the tags' Recvs queues
	deferred  bool        // a payload on data stream 0 waits in the socket for a receive
	charged   atomic.Bool // the deferred SEND's credit is used (data stream 0's reader's)
	// waiting are the queues holding posted receives, so that what must
	// look at every waiting receive need not look at every tag: a peer
	// that runs calls ahead of this rank may have a message queued on each
	// of many thousands of tags.
	waiting []*Queue[R]
}

// Queue holds, for one (source, tag), either messages that arrived
// before anybody asked for them or receives posted before their message
// arrived.
type Queue[R comparable] struct {
	Msgs  FIFO[Msg]
	Recvs FIFO[R]
	Tag   uint32 // the tag it holds, while in use
}

// Msg is a message that arrived before its receive: an eager one's
// payload, or a rendezvous one's announcement (RTS), and its header's Aux
// (a meta word).
type Msg struct {
	Buf *ioloop.Buffer // an eager message's payload; nil for an RTS
	Aux uint32
	ID  uint64 // RTS: the send id
	N   uint64 // RTS: the message's length
}

// Size returns the message's length.
func (m Msg) Size() int {
	if m.Buf != nil {
		return len(m.Buf.B)
	}
	return int(m.N)
}

// Cost returns the flow-control credit the message holds.
func (m Msg) Cost() uint64 {
	if m.Buf != nil {
		return frame.Cost(uint64(len(m.Buf.B)))
	}
	return frame.Cost(0)
}

// Init makes m ready.
func (m *Matcher[R]) Init() { m.tags = make(map[uint32]*Queue[R]) }

// Queue returns tag's queue, in use from now until Tidy finds it empty.
func (m *Matcher[R]) Queue(tag uint32) *Queue[R] {
	q := m.tags[tag]
	switch {
	case q == nil:
		if n := len(m.freeQ); n > 0 {
			q, m.freeQ = m.freeQ[n-1], m.freeQ[:n-1]
		} else {
			q = &Queue[R]{}
		}
		q.Tag = tag
		m.tags[tag] = q
		m.most = max(m.most, len(m.tags))
		m.held.Add(1)
	case q == m.parked:
		m.parked = nil
		m.held.Add(1)
	}
	return q
}

// Lookup returns tag's queue, or nil if it has none, without taking it
// into use: a look for what is there.
func (m *Matcher[R]) Lookup(tag uint32) *Queue[R] { return m.tags[tag] }

// All yields every tag's queue, parked ones too, in no order.
func (m *Matcher[R]) All() iter.Seq2[uint32, *Queue[R]] {
	return func(yield func(uint32, *Queue[R]) bool) {
		for tag, q := range m.tags {
			if !yield(tag, q) {
				return
			}
		}
	}
}

// PostRecv queues r for q's next message, and reports whether the data
// stream must be read again: what r waits for may be behind a deferred
// payload.
func (m *Matcher[R]) PostRecv(q *Queue[R], r R) bool {
	if q.Recvs.Len() == 0 {
		m.waiting = append(m.waiting, q)
	}
	q.Recvs.Push(r)
	m.posted++
	return m.Undefer()
}

// PopRecv takes the first receive posted in q.
func (m *Matcher[R]) PopRecv(q *Queue[R]) (R, bool) {
	r, ok := q.Recvs.Pop()
	if ok {
		m.posted--
		m.unwait(q)
	}
	return r, ok
}

// RemoveRecv takes r back from q, if it is there.
func (m *Matcher[R]) RemoveRecv(q *Queue[R], r R) bool {
	if !q.Recvs.Remove(r) {
		return false
	}
	m.posted--
	m.unwait(q)
	return true
}

// Posted returns how many receives are posted.
func (m *Matcher[R]) Posted() int { return m.posted }

// Waiting returns the queues that hold posted receives, in no order; a
// queue PopRecv empties leaves it by a swap with the last.
func (m *Matcher[R]) Waiting() []*Queue[R] { return m.waiting }

// unwait takes q out of waiting once it holds no receive.
func (m *Matcher[R]) unwait(q *Queue[R]) {
	if q.Recvs.Len() != 0 {
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

// Tidy takes tag's queue out of use once it holds nothing: it parks it,
// and drops the queue parked before, keeping it for reuse, so that tags
// used once (collectives take fresh tags per call) neither pile up nor
// cost an allocation each; a queue kept for reuse keeps at most a little
// storage.
func (m *Matcher[R]) Tidy(tag uint32, q *Queue[R]) {
	if q.Msgs.Len() != 0 || q.Recvs.Len() != 0 || q == m.parked {
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
// engine's default) would otherwise leave this rank holding that room
// (about 10 MiB) for good.
const shrinkFrom = 4096

// shrink makes the map of tags anew, with what it holds, once it holds a
// sixteenth of the most it held: each copy costs a sixteenth of the
// deletions since the last, so tags in use still cost no allocation in
// a steady state.
func (m *Matcher[R]) shrink() {
	if m.most < shrinkFrom || len(m.tags) > m.most/16 {
		return
	}
	tags := make(map[uint32]*Queue[R], len(m.tags))
	for tag, q := range m.tags {
		tags[tag] = q
	}
	m.tags, m.most = tags, len(tags)
}

// recycle keeps q, emptied and out of tags, for reuse.
func (m *Matcher[R]) recycle(q *Queue[R]) {
	if len(m.freeQ) < 64 {
		q.Msgs.Trim(64)
		q.Recvs.Trim(64)
		m.freeQ = append(m.freeQ, q)
	}
}

// Defer notes that a payload on data stream 0 was left in its socket
// for a receive, its credit used.
func (m *Matcher[R]) Defer() {
	m.deferred = true
	m.charged.Store(true)
}

// ChargedDeferred reports whether the SEND whose payload the data
// stream's reader asks for again is the one it deferred, whose credit
// was used. It takes no lock: only data stream 0's reader defers.
func (m *Matcher[R]) ChargedDeferred() bool {
	return m.charged.Load() && m.charged.CompareAndSwap(true, false)
}

// Undefer reports whether the data stream must be read again because a
// receive was posted (or a rendezvous message's DATA is expected): what
// it waits for may be behind the deferred payload.
func (m *Matcher[R]) Undefer() bool {
	was := m.deferred
	m.deferred = false
	return was
}

// Empty reports whether no tag has anything queued or posted. It takes
// no lock.
func (m *Matcher[R]) Empty() bool { return m.held.Load() == 0 }

// Hold queues msg on q, for a later receive.
func (m *Matcher[R]) Hold(q *Queue[R], msg Msg) { q.Msgs.Push(msg) }

// TakeHead pops the first message queued on q, which the caller peeked.
func (m *Matcher[R]) TakeHead(q *Queue[R]) { q.Msgs.Pop() }

// RemoveRTS takes the queued announcement of rendezvous send id off tag's
// queue, and reports whether it was there.
func (m *Matcher[R]) RemoveRTS(tag uint32, id uint64) bool {
	q := m.tags[tag]
	if q == nil {
		return false
	}
	_, found := q.Msgs.RemoveFunc(func(msg Msg) bool { return msg.Buf == nil && msg.ID == id })
	m.Tidy(tag, q)
	return found
}

// FirstQueued calls each with the tag and Aux of the first message queued
// on every tag in in, until it returns an error, which it returns.
func (m *Matcher[R]) FirstQueued(in func(u uint32) bool, each func(u, aux uint32) error) error {
	for u, q := range m.tags {
		if !in(u) {
			continue
		}
		if msg, ok := q.Msgs.Peek(); ok {
			if err := each(u, msg.Aux); err != nil {
				return err
			}
		}
	}
	return nil
}

// DropQueued takes every message queued on the n tags from first that
// are in off its queue and hands it to each (which owns an eager one's
// buffer). It looks up the n tags, or looks through the tags in use,
// whichever are fewer.
func (m *Matcher[R]) DropQueued(first, n uint32, in func(u uint32) bool, each func(msg Msg)) {
	drop := func(u uint32, q *Queue[R]) {
		if !in(u) {
			return
		}
		for {
			msg, ok := q.Msgs.Pop()
			if !ok {
				break
			}
			each(msg)
		}
		m.Tidy(u, q)
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
